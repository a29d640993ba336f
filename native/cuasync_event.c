/* cuasync_event.c — events and the host clock. */
#define _POSIX_C_SOURCE 199309L
#define CUASYNC_INTERNAL
#include <time.h>

#include "cuasync_api.h"
#include "cuasync_error.h"
#include "cuasync_event.h"
#include "cuasync_loader.h"


int cuasync_event_create(CUevent *event, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuEventCreate, (event, 0u), err, errlen, "creating an event");
    return CUASYNC_OK;
}

int cuasync_event_destroy(CUevent event, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuEventDestroy, (event), err, errlen, "destroying an event");
    return CUASYNC_OK;
}

int cuasync_event_record(CUevent event, CUstream stream, char *err, size_t errlen)
{
    CUASYNC_CU(cuEventRecord, (event, stream), err, errlen, "recording an event");
    return CUASYNC_OK;
}

int cuasync_event_synchronize(CUevent event, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuEventSynchronize, (event), err, errlen, "waiting for an event");
    return CUASYNC_OK;
}

int cuasync_event_query(CUevent event, int *done, char *err, size_t errlen)
{
    CUresult r;
    CUASYNC_READY(err, errlen);
    r = cuasync_cu.cuEventQuery(event);
    *done = r == 0;
    if (r != 0 && r != CUASYNC_CUDA_ERROR_NOT_READY)
        return cuasync_fail_cu(err, errlen, "cuEventQuery", r, "%s", "asking whether an event has happened");
    return CUASYNC_OK;
}

int cuasync_event_elapsed(float *ms, CUevent start, CUevent end, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuEventElapsedTime, (ms, start, end), err, errlen, "reading the time between two events");
    return CUASYNC_OK;
}

double cuasync_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}
