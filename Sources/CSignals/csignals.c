#include "csignals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

/// Blocks SIGTERM and SIGINT in the main thread, so that they stay pending until a command has its handler in place
/// (`csignals_install`, then `pthread_sigmask(SIG_UNBLOCK)`) or gives them their default action back. Threads started
/// later inherit the mask. Run from `.preinit_array`: the first code of the process, before any library's
/// initialiser and before `main`. What comes earlier (the kernel's exec and the dynamic loader mapping and relocating
/// the shared libraries) cannot be covered by the program: a SIGTERM there ends the process by the default action.
static void hold_termination_signals(int argc, char **argv, char **envp) {
    (void)argc;
    (void)argv;
    (void)envp;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    (void)sigprocmask(SIG_BLOCK, &set, NULL);
}

__attribute__((section(".preinit_array"), used))
static void (*const hold_termination_signals_at_start)(int, char **, char **) = hold_termination_signals;

static int read_end = -1;
static volatile sig_atomic_t write_end = -1;

static void on_signal(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    if (write_end >= 0) {
        (void)write((int)write_end, &byte, 1);
    }
    errno = saved;
}

int csignals_install(const int *signals, int count) {
    if (read_end < 0) {
        int ends[2];
        if (pipe(ends) != 0) {
            return -1;
        }
        (void)fcntl(ends[0], F_SETFD, FD_CLOEXEC);
        (void)fcntl(ends[1], F_SETFD, FD_CLOEXEC);
        (void)fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK);
        read_end = ends[0];
        write_end = ends[1];
    }
    for (int index = 0; index < count; index++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = on_signal;
        sigemptyset(&action.sa_mask);
        action.sa_flags = SA_RESTART;
        if (sigaction(signals[index], &action, NULL) != 0) {
            return -1;
        }
    }
    return read_end;
}
