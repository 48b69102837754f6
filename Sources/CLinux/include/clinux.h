#ifndef CLINUX_H
#define CLINUX_H

// What Swift's Glibc module leaves out: epoll(7), and naming a thread (a GNU extension). The same approach as
// swift-nio's CNIOLinux. Empty where these do not exist (not Linux): the Swift side then uses poll(2).

#if defined(__linux__)
#include <stdint.h>
#include <sys/epoll.h>

/// Sets the calling thread's name, as `top -H`, `ps -L` and debuggers show it; longer names are cut to the
/// 15 bytes Linux keeps. Returns 0, or an errno value.
int clinux_set_thread_name(const char *name);
#endif

#endif
