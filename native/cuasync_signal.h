/* cuasync_signal.h — Ctrl-C while a sweep runs: a SIGINT handler that counts, and is read by
 * polling (a wait on the GPU checks it between queries; the sweep between points). Code the
 * caller cannot poll (a sweep's host variant, which may never return) is marked; a second
 * interrupt there, or a third anywhere, ends the process after writing what the caller kept. */
#ifndef CUASYNC_SIGNAL_H
#define CUASYNC_SIGNAL_H

#include "cuasync.h"

/* One thing a hard stop writes: data to the file path (created or truncated), or, with path
 * NULL, to the descriptor fd. A byte 1 in data is written as the label of the code running
 * (cuasync_interrupt_inside), or as "a step that did not stop at the second Ctrl-C". */
typedef struct cuasync_stop_file {
    const char *path;
    int fd;
    const char *data;
    size_t len;
} cuasync_stop_file;

/* Install the counting handler (nested calls nest; the first saves the handler it replaces).
 * 0, or -1 when sigaction failed. */
int cuasync_interrupt_begin(void);
/* SIGINTs received since the outermost begin. */
int cuasync_interrupt_count(void);
/* Undo one begin; the outermost restores the saved handler, clears the count and forgets what
 * was kept. */
void cuasync_interrupt_end(void);
/* The code now running cannot be polled (label: what it is, copied, at most 255 bytes), or, with
 * NULL, it can again. A second interrupt while it runs, or a third at any time, is a hard stop:
 * the kept files are written in order and the process exits with status 130. */
void cuasync_interrupt_inside(const char *label);
/* What a hard stop writes, copied (replacing what was kept before): CUASYNC_OK, or
 * CUASYNC_E_INVALID (n < 0, or data NULL with len > 0), or CUASYNC_E_NOMEM. */
int cuasync_interrupt_keep(const cuasync_stop_file *files, int n);

#endif
