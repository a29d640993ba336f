/* A fake libnvidia-ml.so.1 for spec/core/conditions_spec.lua (loaded through CUASYNC_NVML_LIB):
 * the entry points cuasync_nvml.c resolves, with values and failures chosen by the environment.
 *   FAKE_NVML_NOINIT=1      nvmlInit_v2 fails: Driver Not Loaded (9)
 *   FAKE_NVML_FAIL=a,b      the calls named fail: Not Supported (3)
 *   FAKE_NVML_REASONS=0x24  the clock-event reasons mask (default 0)
 *   FAKE_NVML_COUNT=n       devices 0..n-1 (default 2); device i reads sm 1500 + i MHz
 *   FAKE_NVML_LOG=path      each call's name appended, one a line
 * Built with -DFAKE_NVML_OLD: no nvmlDeviceGetCurrentClocksEventReasons (only the older Throttle
 * name) and no optional entry points; with -DFAKE_NVML_ANCIENT: no reasons call at all either. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fake_device { unsigned int index; char bus[32]; } *nvmlDevice_t;
static struct fake_device devices[8];
static int initialised;

static void note(const char *call)
{
    const char *path = getenv("FAKE_NVML_LOG");
    FILE *f;
    if (path && *path && (f = fopen(path, "a"))) { fprintf(f, "%s\n", call); fclose(f); }
}

/* 3 (Not Supported) where FAKE_NVML_FAIL names call, else 0. */
static int failing(const char *call)
{
    const char *list = getenv("FAKE_NVML_FAIL");
    size_t n = strlen(call);
    const char *p = list;
    note(call);
    while (p && *p) {
        if (strncmp(p, call, n) == 0 && (p[n] == ',' || p[n] == 0)) return 3;
        p = strchr(p, ',');
        if (p) p++;
    }
    return 0;
}

static int count(void)
{
    const char *c = getenv("FAKE_NVML_COUNT");
    int n = c && *c ? atoi(c) : 2;
    return n < 0 ? 0 : n > 8 ? 8 : n;
}

int nvmlInit_v2(void);
int nvmlInit_v2(void)
{
    const char *no = getenv("FAKE_NVML_NOINIT");
    int i;
    note("nvmlInit_v2");
    if (no && strcmp(no, "1") == 0) return 9;
    for (i = 0; i < 8; i++) {
        devices[i].index = (unsigned int)i;
        snprintf(devices[i].bus, sizeof devices[i].bus, "00000000:%02X:00.0", 0x10 + i);
    }
    /* FAKE_NVML_BUS: device 0 answers to this bus id (a real GPU's, so that a sweep on it reads the fake) */
    if (getenv("FAKE_NVML_BUS"))
        snprintf(devices[0].bus, sizeof devices[0].bus, "%s", getenv("FAKE_NVML_BUS"));
    initialised = 1;
    return 0;
}

const char *nvmlErrorString(int r);
const char *nvmlErrorString(int r)
{
    switch (r) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 6: return "Not Found";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
    }
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev);
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev)
{
    if (!initialised) return 1;
    if (failing("nvmlDeviceGetHandleByIndex_v2")) return 3;
    if (index >= (unsigned int)count()) return 2;
    *dev = &devices[index];
    return 0;
}

/* CUDA writes a 4-digit domain ("0000:11:00.0"), NVML an 8-digit one: both are accepted. */
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *dev);
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *dev)
{
    int i;
    const char *tail = strchr(bus, ':');
    if (!initialised) return 1;
    if (failing("nvmlDeviceGetHandleByPciBusId_v2")) return 3;
    for (i = 0; i < count() && tail; i++) {
        if (strcmp(strchr(devices[i].bus, ':'), tail) == 0) { *dev = &devices[i]; return 0; }
    }
    return 6;
}

#define DEVICE_CALL(name) if (!initialised) return 1; if (!dev) return 2; if (failing(#name)) return 3

int nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz);
int nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz)
{
    DEVICE_CALL(nvmlDeviceGetClockInfo);
    if (type == 1) *mhz = 1500 + dev->index;
    else if (type == 2) *mhz = 2619;
    else return 2;
    return 0;
}

int nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *mw);
int nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned int *mw)
{
    DEVICE_CALL(nvmlDeviceGetPowerUsage);
    *mw = 312500;
    return 0;
}

int nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned int *c);
int nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned int *c)
{
    DEVICE_CALL(nvmlDeviceGetTemperature);
    if (sensor != 0) return 2;
    *c = 47;
    return 0;
}

static unsigned long long reasons(void)
{
    const char *r = getenv("FAKE_NVML_REASONS");
    return r && *r ? strtoull(r, NULL, 0) : 0;
}

#ifndef FAKE_NVML_ANCIENT
int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev, unsigned long long *mask);
int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev, unsigned long long *mask)
{
    DEVICE_CALL(nvmlDeviceGetCurrentClocksThrottleReasons);
    *mask = reasons();
    return 0;
}
#endif

#if !defined FAKE_NVML_OLD && !defined FAKE_NVML_ANCIENT
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *mask);
int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *mask)
{
    DEVICE_CALL(nvmlDeviceGetCurrentClocksEventReasons);
    *mask = reasons();
    return 0;
}

int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned int *mw);
int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned int *mw)
{
    DEVICE_CALL(nvmlDeviceGetEnforcedPowerLimit);
    *mw = 700000;
    return 0;
}

int nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz);
int nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned int *mhz)
{
    DEVICE_CALL(nvmlDeviceGetMaxClockInfo);
    if (type == 1) *mhz = 1980;
    else if (type == 2) *mhz = 3201;
    else return 2;
    return 0;
}
#endif
