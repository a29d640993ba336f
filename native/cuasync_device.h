/* cuasync_device.h — devices, their properties and primary contexts. */
#ifndef CUASYNC_DEVICE_H
#define CUASYNC_DEVICE_H

#include "cuasync.h"

typedef struct cuasync_device_props {
    int ordinal;
    char name[256];
    int cc_major, cc_minor;
    int sms;
    int warp_size;
    int max_threads_per_block;
    int max_block[3];
    int max_grid[3];
    int smem_per_block;          /* limit without opt-in (48 KiB) */
    int smem_optin;              /* largest per-block limit a kernel can opt in to */
    int smem_per_sm;
    int l2_bytes;
    int cluster_launch;          /* 1 when the device can launch thread-block clusters */
    int max_threads_per_sm;
    int regs_per_block;
    int clock_khz;
    int mem_clock_khz;
    int bus_width_bits;
    int regs_per_sm;
    int max_blocks_per_sm;
    int reserved_smem_per_block;
    unsigned long long total_mem;
} cuasync_device_props;

int cuasync_device_count(int *count, char *err, size_t errlen);
/* Retain the device's primary context, make it current and read its properties. */
int cuasync_device_open(int ordinal, cuasync_device_props *props, char *err, size_t errlen);
/* Make an opened device's primary context current again. */
int cuasync_device_activate(int ordinal, char *err, size_t errlen);
int cuasync_device_synchronize(const char *what, char *err, size_t errlen);
/* Reset an opened device's primary context (cuDevicePrimaryCtxReset): every allocation, module,
 * stream and event in it is gone; a sticky error is cleared. The context is retained again and
 * made current. */
int cuasync_device_reset(int ordinal, char *err, size_t errlen);
int cuasync_device_mem_info(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen);

#endif
