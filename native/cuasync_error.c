/* cuasync_error.c — messages into caller-owned buffers; nothing here aborts or longjmps. */
#define CUASYNC_INTERNAL
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuasync_api.h"
#include "cuasync_error.h"

int cuasync_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;
    if (err && errlen) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int last_cu_status;

int cuasync_last_cu_status(void)
{
    return last_cu_status;
}

const char *cuasync_cu_error_name(int status)
{
    static char unknown[32];
    const char *name = NULL;
    if (cuasync_cu.cuGetErrorName && cuasync_cu.cuGetErrorName(status, &name) == 0 && name)
        return name;
    snprintf(unknown, sizeof unknown, "CUresult %d", status);
    return unknown;
}

int cuasync_fail_cu(char *err, size_t errlen, const char *call, CUresult status, const char *fmt, ...)
{
    const char *text = NULL;
    char what[512];
    va_list ap;
    last_cu_status = (int)status;
    if (!cuasync_cu.cuGetErrorString || cuasync_cu.cuGetErrorString(status, &text) != 0 || !text)
        text = "no description";
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return cuasync_fail(err, errlen, CUASYNC_E_DRIVER, "%s: %s (%s) while %s", call,
                        cuasync_cu_error_name(status), text, what);
}
