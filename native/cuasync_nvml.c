/* cuasync_nvml.c — NVML, loaded at first use: open libnvidia-ml.so.1 (or $CUASYNC_NVML_LIB),
 * resolve its few entry points with dlsym (NVML has no proc-address call), nvmlInit_v2 once, and
 * read a device's conditions. NVML stays initialised for the life of the process, as the driver
 * does (nvmlShutdown is never needed: the library's own teardown frees it). The types are
 * declared here: no NVML header is needed to build. Declared in cuasync_nvml.h; the load state
 * and the trace are cuasync_loader.h's. CUASYNC_TRACE=1 prints each step. */
#define _GNU_SOURCE
#define CUASYNC_INTERNAL
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuasync_error.h"
#include "cuasync_loader.h"
#include "cuasync_nvml.h"

/* -- NVML's types and entry points -------------------------------------------------------------- */

typedef int nvmlReturn_t;                    /* 0 is NVML_SUCCESS */
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_TEMPERATURE_GPU 0

/* X(name, need, return type, (parameters)); need: REQUIRED, OPTIONAL (its field is then left
 * out), or EITHER: one of the two names of the reasons call, the newer drivers' (Events) used
 * where both are there, else the older one (Throttle), with the same signature. */
#define REQUIRED 1
#define OPTIONAL 0
#define EITHER 2
#define CUASYNC_NVML_API(X) \
    X(nvmlInit_v2, REQUIRED, nvmlReturn_t, (void)) \
    X(nvmlErrorString, REQUIRED, const char *, (nvmlReturn_t result)) \
    X(nvmlDeviceGetHandleByPciBusId_v2, REQUIRED, nvmlReturn_t, (const char *pci_bus_id, nvmlDevice_t *device)) \
    X(nvmlDeviceGetHandleByIndex_v2, REQUIRED, nvmlReturn_t, (unsigned int index, nvmlDevice_t *device)) \
    X(nvmlDeviceGetClockInfo, REQUIRED, nvmlReturn_t, (nvmlDevice_t device, int type, unsigned int *mhz)) \
    X(nvmlDeviceGetPowerUsage, REQUIRED, nvmlReturn_t, (nvmlDevice_t device, unsigned int *mw)) \
    X(nvmlDeviceGetTemperature, REQUIRED, nvmlReturn_t, (nvmlDevice_t device, int sensor, unsigned int *c)) \
    X(nvmlDeviceGetCurrentClocksEventReasons, EITHER, nvmlReturn_t, (nvmlDevice_t device, unsigned long long *reasons)) \
    X(nvmlDeviceGetCurrentClocksThrottleReasons, EITHER, nvmlReturn_t, (nvmlDevice_t device, unsigned long long *reasons)) \
    X(nvmlDeviceGetEnforcedPowerLimit, OPTIONAL, nvmlReturn_t, (nvmlDevice_t device, unsigned int *mw)) \
    X(nvmlDeviceGetMaxClockInfo, OPTIONAL, nvmlReturn_t, (nvmlDevice_t device, int type, unsigned int *mhz))

#define CUASYNC_NVML_PFN(name, need, ret, params) typedef ret (*pfn_##name) params;
CUASYNC_NVML_API(CUASYNC_NVML_PFN)
#define CUASYNC_NVML_MEMBER(name, need, ret, params) pfn_##name name;
static struct { CUASYNC_NVML_API(CUASYNC_NVML_MEMBER) } nvml;

#define CUASYNC_NVML_ENTRY(name, need, ret, params) { #name, need, (void **)&nvml.name },
static const struct { const char *name; int need; void **slot; } entries[] = {
    CUASYNC_NVML_API(CUASYNC_NVML_ENTRY)
};
#define N_ENTRIES (sizeof entries / sizeof entries[0])

static cuasync_load_state state;

/* -- Loading ------------------------------------------------------------------------------------ */

static const char *error_string(nvmlReturn_t r)
{
    const char *text = nvml.nvmlErrorString(r);
    return text ? text : "no description";
}

static int nvml_open(void)
{
    const char *override = getenv("CUASYNC_NVML_LIB");
    const char *path = override && *override ? override : "libnvidia-ml.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    size_t i;
    nvmlReturn_t r;
    CUASYNC_TRACE("dlopen(\"%s\"): %s", path, lib ? "ok" : dlerror());
    if (!lib) {
        snprintf(state.message, sizeof state.message, "NVML not available: %.2000s not found (CUASYNC_NVML_LIB)", path);
        return CUASYNC_E_NONVML;
    }
    for (i = 0; i < N_ENTRIES; i++) {
        /* the slot is a function pointer: written through a void ** (dlsym's object pointer) */
        *entries[i].slot = dlsym(lib, entries[i].name);
        CUASYNC_TRACE("dlsym(\"%s\"): %s%s", entries[i].name, *entries[i].slot ? "ok" : "not found",
                      entries[i].need == OPTIONAL ? " (optional)" : entries[i].need == EITHER ? " (one of two names)" : "");
        if (!*entries[i].slot && entries[i].need == REQUIRED) {
            snprintf(state.message, sizeof state.message, "NVML too old: %s not found (in %.2000s)",
                     entries[i].name, path);
            return CUASYNC_E_NONVML;
        }
    }
    if (!nvml.nvmlDeviceGetCurrentClocksEventReasons && !nvml.nvmlDeviceGetCurrentClocksThrottleReasons) {
        snprintf(state.message, sizeof state.message, "NVML too old: nvmlDeviceGetCurrentClocksEventReasons "
                 "not found, nor nvmlDeviceGetCurrentClocksThrottleReasons (in %.2000s)", path);
        return CUASYNC_E_NONVML;
    }
    r = nvml.nvmlInit_v2();
    CUASYNC_TRACE("nvmlInit_v2(): %d", r);
    if (r != 0) {
        snprintf(state.message, sizeof state.message, "NVML not available: nvmlInit_v2: %s (%d)", error_string(r), r);
        return CUASYNC_E_NONVML;
    }
    return CUASYNC_OK;
}

int cuasync_nvml_init(char *err, size_t errlen)
{
    if (state.state == 1) return CUASYNC_OK;
    if (state.state == -1) return cuasync_fail(err, errlen, state.code, "%s", state.message);
    return cuasync_load_remember(&state, nvml_open(), err, errlen);
}

/* -- Sampling ----------------------------------------------------------------------------------- */

static const char *const field_names[CUASYNC_COND_FIELDS] = {
    "sm", "mem", "power", "temp", "reasons", "power_limit", "max_sm", "max_mem"
};
typedef char field_names_fit[sizeof ((cuasync_conditions *)0)->status / sizeof (int) == CUASYNC_COND_FIELDS ? 1 : -1];

const char *cuasync_nvml_field_name(int i)
{
    return i >= 0 && i < CUASYNC_COND_FIELDS ? field_names[i] : NULL;
}

/* Record field f's outcome: its have-bit where r is 0; else its status and why ("call: NVML's
 * text (code)", or "call not found (NVML too old)" where fn was absent: r -1), and the first
 * failure's "field: why" in err. */
static void field(cuasync_conditions *out, int f, const char *call, nvmlReturn_t r, char *err, size_t errlen,
                  int *failed)
{
    out->status[f] = r;
    if (r == 0) {
        out->have |= 1u << f;
        return;
    }
    if (r == -1)
        snprintf(out->why[f], sizeof out->why[f], "%s not found (NVML too old)", call);
    else
        snprintf(out->why[f], sizeof out->why[f], "%s: %s (%d)", call, error_string(r), r);
    CUASYNC_TRACE("%s: %s", field_names[f], out->why[f]);
    if (!(*failed)++) cuasync_fail(err, errlen, CUASYNC_OK, "%s: %s", field_names[f], out->why[f]);
}

int cuasync_nvml_sample(const char *pci_bus_id, int index, cuasync_conditions *out, char *err, size_t errlen)
{
    nvmlDevice_t dev = NULL;
    nvmlReturn_t r;
    int failed = 0, events, rc = cuasync_nvml_init(err, errlen);
    if (rc) return rc;
    /* the newer name where the library has it, else the older one (nvml_open checked for either) */
    events = nvml.nvmlDeviceGetCurrentClocksEventReasons != NULL;
    if (!out) return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "out is NULL");
    memset(out, 0, sizeof *out);
    if (err && errlen) err[0] = 0;
    if (pci_bus_id) {
        r = nvml.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id, &dev);
        CUASYNC_TRACE("nvmlDeviceGetHandleByPciBusId_v2(\"%s\"): %d", pci_bus_id, r);
        if (r != 0)
            return cuasync_fail(err, errlen, CUASYNC_E_NVML, "nvmlDeviceGetHandleByPciBusId_v2: %s (%d) while "
                                "finding the NVML device at PCI bus id %.100s", error_string(r), r, pci_bus_id);
    } else {
        if (index < 0)
            return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "NVML index must be non-negative (got %d)", index);
        r = nvml.nvmlDeviceGetHandleByIndex_v2((unsigned int)index, &dev);
        CUASYNC_TRACE("nvmlDeviceGetHandleByIndex_v2(%d): %d", index, r);
        if (r != 0)
            return cuasync_fail(err, errlen, CUASYNC_E_NVML, "nvmlDeviceGetHandleByIndex_v2: %s (%d) while "
                                "finding NVML device %d", error_string(r), r, index);
    }
    field(out, CUASYNC_COND_SM, "nvmlDeviceGetClockInfo",
          nvml.nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM, &out->sm_mhz), err, errlen, &failed);
    field(out, CUASYNC_COND_MEM, "nvmlDeviceGetClockInfo",
          nvml.nvmlDeviceGetClockInfo(dev, NVML_CLOCK_MEM, &out->mem_mhz), err, errlen, &failed);
    field(out, CUASYNC_COND_POWER, "nvmlDeviceGetPowerUsage",
          nvml.nvmlDeviceGetPowerUsage(dev, &out->power_mw), err, errlen, &failed);
    field(out, CUASYNC_COND_TEMP, "nvmlDeviceGetTemperature",
          nvml.nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &out->temp_c), err, errlen, &failed);
    field(out, CUASYNC_COND_REASONS, events ? "nvmlDeviceGetCurrentClocksEventReasons" : "nvmlDeviceGetCurrentClocksThrottleReasons",
          events ? nvml.nvmlDeviceGetCurrentClocksEventReasons(dev, &out->reasons)
                 : nvml.nvmlDeviceGetCurrentClocksThrottleReasons(dev, &out->reasons), err, errlen, &failed);
    field(out, CUASYNC_COND_POWER_LIMIT, "nvmlDeviceGetEnforcedPowerLimit",
          nvml.nvmlDeviceGetEnforcedPowerLimit ? nvml.nvmlDeviceGetEnforcedPowerLimit(dev, &out->power_limit_mw) : -1,
          err, errlen, &failed);
    field(out, CUASYNC_COND_MAX_SM, "nvmlDeviceGetMaxClockInfo",
          nvml.nvmlDeviceGetMaxClockInfo ? nvml.nvmlDeviceGetMaxClockInfo(dev, NVML_CLOCK_SM, &out->max_sm_mhz) : -1,
          err, errlen, &failed);
    field(out, CUASYNC_COND_MAX_MEM, "nvmlDeviceGetMaxClockInfo",
          nvml.nvmlDeviceGetMaxClockInfo ? nvml.nvmlDeviceGetMaxClockInfo(dev, NVML_CLOCK_MEM, &out->max_mem_mhz) : -1,
          err, errlen, &failed);
    return CUASYNC_OK;
}
