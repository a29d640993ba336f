/* cuasync_device.h — devices, their properties and primary contexts. */
#ifndef CUASYNC_DEVICE_H
#define CUASYNC_DEVICE_H

#include "cuasync.h"

#define CUASYNC_DEVICE_MAX_PROPS 64

/* A device as opened: its name and memory, and the values of the properties cuasync reads, in
 * the order of cuasync_device_prop_name (the one list of them is in cuasync_device.c). */
typedef struct cuasync_device_info {
    int ordinal;
    char name[256];
    unsigned long long total_mem;
    int count;
    int value[64];               /* CUASYNC_DEVICE_MAX_PROPS */
} cuasync_device_info;

int cuasync_device_prop_count(void);
/* The name of property i (0 .. count - 1), NULL outside. */
const char *cuasync_device_prop_name(int i);

int cuasync_device_count(int *count, char *err, size_t errlen);
/* Retain the device's primary context, make it current and read its properties. */
int cuasync_device_open(int ordinal, cuasync_device_info *info, char *err, size_t errlen);
/* Make an opened device's primary context current again. */
int cuasync_device_activate(int ordinal, char *err, size_t errlen);
int cuasync_device_synchronize(const char *what, char *err, size_t errlen);
/* Reset an opened device's primary context (cuDevicePrimaryCtxReset): every allocation, module,
 * stream and event in it is gone; a sticky error is cleared. The context is retained again and
 * made current. */
int cuasync_device_reset(int ordinal, char *err, size_t errlen);
/* The device's PCI bus id as the driver writes it ("0000:3B:00.0"): how NVML finds the same
 * device (cuasync_nvml.h), whose index order can differ from CUDA's. */
int cuasync_device_pci_bus_id(int ordinal, char *out, size_t outlen, char *err, size_t errlen);
int cuasync_device_mem_info(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen);

#endif
