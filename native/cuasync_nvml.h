/* cuasync_nvml.h — the GPU's conditions (clocks, power, temperature, clock-event reasons) read
 * through NVML: libnvidia-ml.so.1 (or $CUASYNC_NVML_LIB), dlopen'ed at first use, never linked,
 * and optional like the driver: without it a sample fails with a clear message, nothing else does.
 * A field NVML cannot read is left out of the sample, with why, and the others are kept. */
#ifndef CUASYNC_NVML_H
#define CUASYNC_NVML_H

#include "cuasync.h"

/* The fields of a sample, by number: bit (1 << CUASYNC_COND_x) of `have` says field x was read,
 * why[x] says why it was not. cuasync_nvml_field_name(x) is its name in messages and in Lua's
 * `missing` table (the Lua field without its unit: "power" for power_w). */
enum {
    CUASYNC_COND_SM = 0,          /* sm_mhz: nvmlDeviceGetClockInfo(NVML_CLOCK_SM) */
    CUASYNC_COND_MEM = 1,         /* mem_mhz: nvmlDeviceGetClockInfo(NVML_CLOCK_MEM) */
    CUASYNC_COND_POWER = 2,       /* power_mw: nvmlDeviceGetPowerUsage */
    CUASYNC_COND_TEMP = 3,        /* temp_c: nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU) */
    CUASYNC_COND_REASONS = 4,     /* reasons: nvmlDeviceGetCurrentClocksEventReasons (or ...ThrottleReasons) */
    CUASYNC_COND_POWER_LIMIT = 5, /* power_limit_mw: nvmlDeviceGetEnforcedPowerLimit (optional symbol) */
    CUASYNC_COND_MAX_SM = 6,      /* max_sm_mhz: nvmlDeviceGetMaxClockInfo(NVML_CLOCK_SM) (optional symbol) */
    CUASYNC_COND_MAX_MEM = 7,     /* max_mem_mhz: nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM) (optional symbol) */
    CUASYNC_COND_FIELDS = 8
};

typedef struct cuasync_conditions {
    unsigned int have;            /* bit (1 << CUASYNC_COND_x) set: field x was read */
    unsigned int sm_mhz;
    unsigned int mem_mhz;
    unsigned int power_mw;
    unsigned int temp_c;
    unsigned long long reasons;   /* NVML's clock-event reasons: 0x1 gpu_idle, 0x4 sw_power_cap, ... */
    unsigned int power_limit_mw;
    unsigned int max_sm_mhz;
    unsigned int max_mem_mhz;
    int status[8];                /* per field: NVML's return (0 read), -1 where the library lacks the call */
    char why[8][160];             /* per field not read: "nvmlDeviceGetPowerUsage: Not Supported (3)" */
} cuasync_conditions;

/* The name of field i (0 .. CUASYNC_COND_FIELDS - 1: "sm", "mem", "power", ...), NULL outside. */
const char *cuasync_nvml_field_name(int i);
/* Load NVML and initialise it (nvmlInit_v2). Idempotent: the outcome, a failure included, is
 * remembered and reported the same way on every later call. CUASYNC_E_NONVML when it is missing,
 * too old or refuses to start. */
int cuasync_nvml_init(char *err, size_t errlen);
/* The device's conditions now: found by PCI bus id ("0000:3B:00.0", as cuDeviceGetPCIBusId
 * writes it), or by NVML index where pci_bus_id is NULL (NVML's order can differ from CUDA's).
 * A failure to load NVML or to find the device returns its code with the message in err; a
 * field NVML cannot read leaves its bit of out->have clear and its reason in out->why, and the
 * call still returns CUASYNC_OK, with the first such reason ("power: ...") in err. */
int cuasync_nvml_sample(const char *pci_bus_id, int index, cuasync_conditions *out, char *err, size_t errlen);

#endif
