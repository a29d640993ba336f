/* cuasync_stream.c — stream lifetime and synchronization. */
#define CUASYNC_INTERNAL
#include "cuasync_api.h"
#include "cuasync_error.h"
#include "cuasync_loader.h"
#include "cuasync_stream.h"


int cuasync_stream_create(CUstream *stream, int non_blocking, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuStreamCreate, (stream, non_blocking ? 1u : 0u), err, errlen, "creating a stream");
    return CUASYNC_OK;
}

int cuasync_stream_destroy(CUstream stream, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuStreamDestroy, (stream), err, errlen, "destroying a stream");
    return CUASYNC_OK;
}

int cuasync_stream_synchronize(CUstream stream, const char *what, char *err, size_t errlen)
{
    CUASYNC_READY(err, errlen);
    CUASYNC_CU(cuStreamSynchronize, (stream), err, errlen, "%s",
               what && *what ? what : "waiting for a stream");
    return CUASYNC_OK;
}

int cuasync_stream_query(CUstream stream, int *done, char *err, size_t errlen)
{
    CUresult r;
    CUASYNC_READY(err, errlen);
    r = cuasync_cu.cuStreamQuery(stream);
    *done = r == 0;
    if (r != 0 && r != CUASYNC_CUDA_ERROR_NOT_READY)
        return cuasync_fail_cu(err, errlen, "cuStreamQuery", r, "%s", "asking whether a stream is done");
    return CUASYNC_OK;
}
