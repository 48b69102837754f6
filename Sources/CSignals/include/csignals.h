#ifndef CSIGNALS_H
#define CSIGNALS_H

/// Linking this library into an executable makes SIGTERM and SIGINT blocked from the process's first code on (an
/// entry of `.preinit_array`, run before any library initialiser and before `main`): they stay pending until the
/// program unblocks them, after `csignals_install` or to give them their default action back.

/// Installs, for each of `signals`, a handler that writes the signal's number (one byte) to a pipe, and returns the
/// pipe's read end (blocking, close-on-exec), or -1 with errno set. The handler calls only write(2), which is
/// async-signal-safe. The pipe is made once per process; later calls add signals and return the same read end.
/// Unlike a signal ignored until a watcher is ready, nothing is lost: a signal that arrives at any moment after this
/// call waits in the pipe until it is read.
int csignals_install(const int *signals, int count);

#endif
