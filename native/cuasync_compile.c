/* cuasync_compile.c — one NVRTC program per call; everything the caller may want is copied out
 * before the program is destroyed, so the result has no NVRTC lifetime to track. */
#define _POSIX_C_SOURCE 200809L
#define CUASYNC_INTERNAL
#include <stdlib.h>
#include <string.h>

#include "cuasync_api.h"
#include "cuasync_compile.h"
#include "cuasync_error.h"
#include "cuasync_loader.h"
#include "cuasync_toolkit.h"

static int cuasync_pch_heap_retries;

int cuasync_compile_pch_retries(void)
{
    return cuasync_pch_heap_retries;
}

/* Where a driver is installed, NVRTC answers a compile it has seen from its cache (NVRTC 12.9+,
 * under ~/.nv/ComputeCache) and ptxas does not run: the -v report (registers, spills) is then
 * missing from the log (measured on the H200: an empty log in 48 ms instead of the report).
 * cuasync keeps its own cache, so NVRTC's is turned off for each compile: with --no-cache where
 * NVRTC has it (12.9+; with it, NVRTC's cache trace, --enable-cache-trace, prints nothing: the
 * cache is not entered), and with CUDA_CACHE_DISABLE=1 around the call. NVRTC reads that
 * variable once a process, when its cache starts (the trace says "already initialized" on later
 * compiles), and the variable alone did not hold everywhere: an H200 make test read no report
 * for a program the same machine had compiled in earlier runs (why, not known). The caller's
 * setting is put back after: the driver's JIT cache is left as the user set it. */
static int nvrtc_takes_no_cache(void)
{
    static int known = -1;
    if (known < 0) {
        int major = 0, minor = 0;
        known = cuasync_nvrtc.nvrtcVersion(&major, &minor) == 0 && (major > 12 || (major == 12 && minor >= 9));
    }
    return known;
}

static int compile_uncached(nvrtcProgram prog, int noptions, const char *const *options)
{
    const char *was = getenv("CUDA_CACHE_DISABLE");
    char *saved = was ? strdup(was) : NULL;
    const char **with = NULL;
    int status, n = noptions;
    if (nvrtc_takes_no_cache()) {
        with = malloc(sizeof(*with) * (size_t)(noptions + 1));
        if (with) {
            if (noptions > 0) memcpy(with, options, sizeof(*with) * (size_t)noptions);
            with[n++] = "--no-cache";
            options = with;
        }
    }
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    status = cuasync_nvrtc.nvrtcCompileProgram(prog, n, options);
    if (saved) {
        setenv("CUDA_CACHE_DISABLE", saved, 1);
        free(saved);
    } else {
        unsetenv("CUDA_CACHE_DISABLE");
    }
    free(with);
    return status;
}

struct cuasync_compiled {
    char *log, *ptx, *cubin;
    size_t log_len, ptx_len, cubin_len;
    int nlowered;
    char **lowered;
};

void cuasync_compiled_free(cuasync_compiled *c)
{
    int i;
    if (!c) return;
    free(c->log);
    free(c->ptx);
    free(c->cubin);
    for (i = 0; i < c->nlowered; i++) free(c->lowered[i]);
    free(c->lowered);
    free(c);
}

static int nvrtc_fail(char *err, size_t errlen, const char *call, int status, const char *name)
{
    return cuasync_fail(err, errlen, CUASYNC_E_NVRTC, "%s: %s while compiling %s", call,
                        cuasync_nvrtc.nvrtcGetErrorString(status), name);
}

/* Copy an NVRTC output of the given size out of the program, NUL-terminated. For the text
 * outputs (log, PTX) the length leaves out the NUL NVRTC counts in its size: the text a caller
 * sees ends at its last character. */
typedef int (*get_size_fn)(nvrtcProgram, size_t *);
typedef int (*get_fn)(nvrtcProgram, char *);
static int copy_out(nvrtcProgram prog, get_size_fn size_of, get_fn get, int text, char **out, size_t *len)
{
    size_t n = 0;
    if (size_of(prog, &n) != 0 || n == 0) { *out = NULL; *len = 0; return 0; }
    *out = malloc(n + 1);
    if (!*out) return -1;
    if (get(prog, *out) != 0) { free(*out); *out = NULL; *len = 0; return 0; }
    (*out)[n] = '\0';
    if (text) n = strlen(*out);
    *len = n;
    return 0;
}

int cuasync_compile(const char *source, const char *name,
                    int nheaders, const char *const *header_sources, const char *const *header_names,
                    int noptions, const char *const *options,
                    int nexpressions, const char *const *expressions,
                    cuasync_compiled **out, char *err, size_t errlen)
{
    nvrtcProgram prog = NULL;
    cuasync_compiled *c;
    int rc, status, i, compile_status, attempt;

    *out = NULL;
    rc = cuasync_nvrtc_init(err, errlen);
    if (rc) return rc;
    if (!source || !name || nheaders < 0 || noptions < 0 || nexpressions < 0)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "cuasync_compile: bad arguments");
    for (attempt = 0;; attempt++) {
        status = cuasync_nvrtc.nvrtcCreateProgram(&prog, source, name, nheaders, header_sources, header_names);
        if (status) return nvrtc_fail(err, errlen, "nvrtcCreateProgram", status, name);
        for (i = 0; i < nexpressions; i++) {
            status = cuasync_nvrtc.nvrtcAddNameExpression(prog, expressions[i]);
            if (status) {
                cuasync_nvrtc.nvrtcDestroyProgram(&prog);
                return nvrtc_fail(err, errlen, "nvrtcAddNameExpression", status, name);
            }
        }
        compile_status = compile_uncached(prog, noptions, options);
        /* automatic PCH: a header that did not fit the PCH heap is compiled without it; the heap is
         * grown to what it needed and the program compiled once more, so that the next one gets it */
        if (attempt == 0 && compile_status == 0 && cuasync_nvrtc.nvrtcGetPCHCreateStatus
            && cuasync_nvrtc.nvrtcGetPCHCreateStatus(prog) == CUASYNC_NVRTC_PCH_HEAP_EXHAUSTED
            && cuasync_nvrtc.nvrtcGetPCHHeapSizeRequired && cuasync_nvrtc.nvrtcSetPCHHeapSize) {
            size_t need = 0;
            if (cuasync_nvrtc.nvrtcGetPCHHeapSizeRequired(prog, &need) == 0 && need > 0
                && cuasync_nvrtc.nvrtcSetPCHHeapSize(need) == 0) {
                cuasync_pch_heap_retries++;
                cuasync_nvrtc.nvrtcDestroyProgram(&prog);
                continue;
            }
        }
        break;
    }

    c = calloc(1, sizeof *c);
    if (!c) { cuasync_nvrtc.nvrtcDestroyProgram(&prog); goto oom; }
    if (copy_out(prog, cuasync_nvrtc.nvrtcGetProgramLogSize, cuasync_nvrtc.nvrtcGetProgramLog, 1,
                 &c->log, &c->log_len)) goto oom_free;
    if (compile_status == 0) {
        if (copy_out(prog, cuasync_nvrtc.nvrtcGetPTXSize, cuasync_nvrtc.nvrtcGetPTX, 1, &c->ptx, &c->ptx_len)
            || copy_out(prog, cuasync_nvrtc.nvrtcGetCUBINSize, cuasync_nvrtc.nvrtcGetCUBIN, 0, &c->cubin,
                        &c->cubin_len))
            goto oom_free;
        c->lowered = calloc((size_t)(nexpressions > 0 ? nexpressions : 1), sizeof *c->lowered);
        if (!c->lowered) goto oom_free;
        c->nlowered = nexpressions;
        for (i = 0; i < nexpressions; i++) {
            const char *lowered = NULL;
            status = cuasync_nvrtc.nvrtcGetLoweredName(prog, expressions[i], &lowered);
            if (status || !lowered) {   /* NVRTC can answer success with no name (a source it stopped reading) */
                cuasync_nvrtc.nvrtcDestroyProgram(&prog);
                cuasync_compiled_free(c);
                if (status) return nvrtc_fail(err, errlen, "nvrtcGetLoweredName", status, name);
                return cuasync_fail(err, errlen, CUASYNC_E_NVRTC,
                                    "nvrtcGetLoweredName: no lowered name for expression '%.200s' while compiling %s",
                                    expressions[i], name);
            }
            c->lowered[i] = malloc(strlen(lowered) + 1);
            if (!c->lowered[i]) goto oom_free;
            strcpy(c->lowered[i], lowered);
        }
    }
    cuasync_nvrtc.nvrtcDestroyProgram(&prog);
    *out = c;
    if (compile_status)
        return cuasync_fail(err, errlen, CUASYNC_E_COMPILE, "nvrtcCompileProgram: %s while compiling %s",
                            cuasync_nvrtc.nvrtcGetErrorString(compile_status), name);
    return CUASYNC_OK;

oom_free:
    if (prog) cuasync_nvrtc.nvrtcDestroyProgram(&prog);
    cuasync_compiled_free(c);
oom:
    return cuasync_fail(err, errlen, CUASYNC_E_NOMEM, "out of host memory while compiling %s", name);
}

const char *cuasync_compiled_log(const cuasync_compiled *c, size_t *len)
{
    *len = c->log_len;
    return c->log ? c->log : "";
}

const char *cuasync_compiled_ptx(const cuasync_compiled *c, size_t *len)
{
    *len = c->ptx_len;
    return c->ptx;
}

const char *cuasync_compiled_cubin(const cuasync_compiled *c, size_t *len)
{
    *len = c->cubin_len;
    return c->cubin;
}

const char *cuasync_compiled_lowered(const cuasync_compiled *c, int index)
{
    return index >= 0 && index < c->nlowered ? c->lowered[index] : NULL;
}
