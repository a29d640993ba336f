/* cuasync_stream.h — streams. A NULL stream is the context's default stream. */
#ifndef CUASYNC_STREAM_H
#define CUASYNC_STREAM_H

#include "cuasync.h"

int cuasync_stream_create(CUstream *stream, int non_blocking, char *err, size_t errlen);
int cuasync_stream_destroy(CUstream stream, char *err, size_t errlen);
int cuasync_stream_synchronize(CUstream stream, const char *what, char *err, size_t errlen);
/* *done = 1 when all work on the stream has finished, 0 while some still runs (cuStreamQuery). */
int cuasync_stream_query(CUstream stream, int *done, char *err, size_t errlen);

#endif
