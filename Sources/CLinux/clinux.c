#if defined(__linux__)
// pthread_setname_np is declared only with _GNU_SOURCE, which Swift's Glibc module does not define: hence a
// function compiled here rather than a static inline one in the header.
#define _GNU_SOURCE
#include "clinux.h"

#include <pthread.h>
#include <string.h>

int clinux_set_thread_name(const char *name) {
    char kept[16];
    strncpy(kept, name, sizeof kept - 1);
    kept[sizeof kept - 1] = '\0';
    return pthread_setname_np(pthread_self(), kept);
}
#endif
