/* cuasync_loader.c — the CUDA driver, loaded at first use, and what the loaders share.
 * Driver: open libcuda.so.1, resolve one bootstrap symbol (cuGetProcAddress) and get every other
 * entry point through it, at the ABI version the table names. The toolkit's libraries (NVRTC,
 * cuBLAS) are found and opened by cuasync_toolkit.c, NVML (the GPU's clocks, power and
 * temperature) by cuasync_nvml.c. These three files are the only ones that call dlopen/dlsym
 * (spec/house/layout_spec.lua). CUASYNC_TRACE=1 prints each step. */
#define _GNU_SOURCE
#define CUASYNC_INTERNAL
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuasync_api.h"
#include "cuasync_error.h"
#include "cuasync_loader.h"

cuasync_driver_table cuasync_cu;

/* -- Shared state --------------------------------------------------------------------------- */

static cuasync_load_state drv;

const char *cuasync_version(void) { return CUASYNC_VERSION_STRING; }
int cuasync_abi(void) { return CUASYNC_ABI; }

int cuasync_tracing(void)
{
    const char *t = getenv("CUASYNC_TRACE");
    return t && *t && strcmp(t, "0") != 0;
}

int cuasync_load_remember(cuasync_load_state *s, int code, char *err, size_t errlen)
{
    s->state = code == CUASYNC_OK ? 1 : -1;
    s->code = code;
    if (code != CUASYNC_OK)
        cuasync_fail(err, errlen, code, "%s", s->message);
    return code;
}

/* -- Driver ------------------------------------------------------------------------------------ */

typedef CUresult (*pfn_gpa_v2)(const char *, void **, int, unsigned long long, int *);
typedef CUresult (*pfn_gpa_v1)(const char *, void **, int, unsigned long long);

typedef struct { const char *name; int version; void **slot; } driver_entry;

#define CUASYNC_ENTRY(name, ver, ret, params) { #name, ver, (void **)&cuasync_cu.name },
static const driver_entry driver_entries[] = { CUASYNC_DRIVER_API(CUASYNC_ENTRY) };
#define N_DRIVER_ENTRIES (sizeof driver_entries / sizeof driver_entries[0])

static int driver_open(void)
{
    const char *override = getenv("CUASYNC_CUDA_LIB");
    const char *path = override && *override ? override : "libcuda.so.1";
    void *lib, *bootstrap;
    pfn_gpa_v2 gpa2;
    pfn_gpa_v1 gpa1;
    size_t i;
    CUresult r;

    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CUASYNC_TRACE("dlopen(\"%s\"): %s", path, lib ? "ok" : dlerror());
    if (!lib) {
        if (override && *override)
            snprintf(drv.message, sizeof drv.message,
                     "no CUDA driver: %s not found (CUASYNC_CUDA_LIB)", path);
        else
            snprintf(drv.message, sizeof drv.message, "no CUDA driver: libcuda.so.1 not found");
        return CUASYNC_E_NODRIVER;
    }
    /* The _v2 symbol has the 5-argument signature of CUDA 12+; the plain one keeps the old ABI. */
    /* memcpy, not a cast: ISO C has no object-to-function pointer conversion. */
    bootstrap = dlsym(lib, "cuGetProcAddress_v2");
    CUASYNC_TRACE("dlsym(\"cuGetProcAddress_v2\"): %s", bootstrap ? "ok" : "not found");
    gpa2 = NULL;
    gpa1 = NULL;
    if (bootstrap) {
        memcpy(&gpa2, &bootstrap, sizeof gpa2);
    } else {
        bootstrap = dlsym(lib, "cuGetProcAddress");
        CUASYNC_TRACE("dlsym(\"cuGetProcAddress\"): %s", bootstrap ? "ok" : "not found");
        if (bootstrap) memcpy(&gpa1, &bootstrap, sizeof gpa1);
    }
    if (!gpa2 && !gpa1) {
        snprintf(drv.message, sizeof drv.message,
                 "no CUDA driver: %s has no cuGetProcAddress (driver older than CUDA 11.3)", path);
        return CUASYNC_E_NODRIVER;
    }
    for (i = 0; i < N_DRIVER_ENTRIES; i++) {
        void *fn = NULL;
        int status = 0;
        r = gpa2 ? gpa2(driver_entries[i].name, &fn, driver_entries[i].version, 0, &status)
                 : gpa1(driver_entries[i].name, &fn, driver_entries[i].version, 0);
        CUASYNC_TRACE("cuGetProcAddress(\"%s\", %d): %s", driver_entries[i].name, driver_entries[i].version,
              r == 0 && fn ? "ok" : "not available");
        /* A missing optional entry stays NULL: its callers report it by name. */
        *driver_entries[i].slot = r == 0 ? fn : NULL;
    }
    if (!cuasync_cu.cuInit || !cuasync_cu.cuGetErrorName || !cuasync_cu.cuGetErrorString) {
        snprintf(drv.message, sizeof drv.message,
                 "no CUDA driver: %s lacks cuInit/cuGetErrorName (driver too old)", path);
        return CUASYNC_E_NODRIVER;
    }
    r = cuasync_cu.cuInit(0);
    CUASYNC_TRACE("cuInit(0): %d", (int)r);
    if (r != 0) {
        cuasync_fail_cu(drv.message, sizeof drv.message, "cuInit", r, "initialising the CUDA driver");
        return CUASYNC_E_DRIVER;
    }
    return CUASYNC_OK;
}

int cuasync_driver_init(char *err, size_t errlen)
{
    if (drv.state == 1) return CUASYNC_OK;
    if (drv.state == -1) return cuasync_fail(err, errlen, drv.code, "%s", drv.message);
    return cuasync_load_remember(&drv, driver_open(), err, errlen);
}

int cuasync_driver_version(int *version, char *err, size_t errlen)
{
    int rc = cuasync_driver_init(err, errlen);
    if (rc) return rc;
    CUASYNC_CU(cuDriverGetVersion, (version), err, errlen, "reading the driver version");
    return CUASYNC_OK;
}

void *cuasync_driver_symbol(const char *name)
{
    size_t i;
    if (drv.state != 1 || !name) return NULL;
    for (i = 0; i < N_DRIVER_ENTRIES; i++)
        if (strcmp(driver_entries[i].name, name) == 0) return *driver_entries[i].slot;
    return NULL;
}
