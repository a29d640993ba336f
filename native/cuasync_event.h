/* cuasync_event.h — events for device-side timing, and a host monotonic clock. */
#ifndef CUASYNC_EVENT_H
#define CUASYNC_EVENT_H

#include "cuasync.h"

int cuasync_event_create(CUevent *event, char *err, size_t errlen);
int cuasync_event_destroy(CUevent event, char *err, size_t errlen);
int cuasync_event_record(CUevent event, CUstream stream, char *err, size_t errlen);
int cuasync_event_synchronize(CUevent event, char *err, size_t errlen);
/* *done = 1 once the work before the event has finished, 0 while it runs (cuEventQuery). */
int cuasync_event_query(CUevent event, int *done, char *err, size_t errlen);
int cuasync_event_elapsed(float *ms, CUevent start, CUevent end, char *err, size_t errlen);
/* CLOCK_MONOTONIC in nanoseconds, for host-side timing (launch overhead). */
double cuasync_now_ns(void);

#endif
