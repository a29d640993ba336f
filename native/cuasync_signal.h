/* cuasync_signal.h — Ctrl-C while a sweep runs: a SIGINT handler that only counts, and is read by
 * polling (a wait on the GPU checks it between queries; the sweep between points). */
#ifndef CUASYNC_SIGNAL_H
#define CUASYNC_SIGNAL_H

#include "cuasync.h"

/* Install the counting handler (nested calls nest; the first saves the handler it replaces).
 * 0, or -1 when sigaction failed. */
int cuasync_interrupt_begin(void);
/* SIGINTs received since the outermost begin. */
int cuasync_interrupt_count(void);
/* Undo one begin; the outermost restores the saved handler and clears the count. */
void cuasync_interrupt_end(void);

#endif
