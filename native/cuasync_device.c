/* cuasync_device.c — devices and primary contexts. A context retained here stays retained for the
 * life of the process: buffers and modules need it, and releasing it at exit races the driver's
 * own teardown. */
#define CUASYNC_INTERNAL
#include <stdio.h>
#include <string.h>

#include "cuasync_api.h"
#include "cuasync_attrs.h"
#include "cuasync_device.h"
#include "cuasync_error.h"
#include "cuasync_loader.h"

#define MAX_DEVICES 64
static CUcontext contexts[MAX_DEVICES];

int cuasync_device_count(int *count, char *err, size_t errlen)
{
    int rc = cuasync_driver_init(err, errlen);
    if (rc) return rc;
    CUASYNC_CU(cuDeviceGetCount, (count), err, errlen, "counting CUDA devices");
    return CUASYNC_OK;
}

static int attribute(int *out, int attrib, CUdevice dev, const char *what, char *err, size_t errlen)
{
    CUASYNC_CU(cuDeviceGetAttribute, (out, attrib, dev), err, errlen, "reading %s of device %d",
               what, (int)dev);
    return CUASYNC_OK;
}

int cuasync_device_open(int ordinal, cuasync_device_props *p, char *err, size_t errlen)
{
    static const struct { int attrib; size_t offset; const char *what; } attrs[] = {
#define A(id, field) { id, offsetof(cuasync_device_props, field), #field }
        A(CUASYNC_DEV_COMPUTE_CAPABILITY_MAJOR, cc_major),
        A(CUASYNC_DEV_COMPUTE_CAPABILITY_MINOR, cc_minor),
        A(CUASYNC_DEV_MULTIPROCESSOR_COUNT, sms),
        A(CUASYNC_DEV_WARP_SIZE, warp_size),
        A(CUASYNC_DEV_MAX_THREADS_PER_BLOCK, max_threads_per_block),
        A(CUASYNC_DEV_MAX_BLOCK_DIM_X, max_block[0]),
        A(CUASYNC_DEV_MAX_BLOCK_DIM_Y, max_block[1]),
        A(CUASYNC_DEV_MAX_BLOCK_DIM_Z, max_block[2]),
        A(CUASYNC_DEV_MAX_GRID_DIM_X, max_grid[0]),
        A(CUASYNC_DEV_MAX_GRID_DIM_Y, max_grid[1]),
        A(CUASYNC_DEV_MAX_GRID_DIM_Z, max_grid[2]),
        A(CUASYNC_DEV_MAX_SHARED_MEMORY_PER_BLOCK, smem_per_block),
        A(CUASYNC_DEV_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, smem_optin),
        A(CUASYNC_DEV_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, smem_per_sm),
        A(CUASYNC_DEV_L2_CACHE_SIZE, l2_bytes),
        A(CUASYNC_DEV_CLUSTER_LAUNCH, cluster_launch),
        A(CUASYNC_DEV_MAX_THREADS_PER_MULTIPROCESSOR, max_threads_per_sm),
        A(CUASYNC_DEV_MAX_REGISTERS_PER_BLOCK, regs_per_block),
        A(CUASYNC_DEV_CLOCK_RATE, clock_khz),
        A(CUASYNC_DEV_MEMORY_CLOCK_RATE, mem_clock_khz),
        A(CUASYNC_DEV_GLOBAL_MEMORY_BUS_WIDTH, bus_width_bits),
        A(CUASYNC_DEV_MAX_REGISTERS_PER_MULTIPROCESSOR, regs_per_sm),
        A(CUASYNC_DEV_MAX_BLOCKS_PER_MULTIPROCESSOR, max_blocks_per_sm),
        A(CUASYNC_DEV_RESERVED_SHARED_MEMORY_PER_BLOCK, reserved_smem_per_block),
#undef A
    };
    int count, rc;
    size_t i, total = 0;
    CUdevice dev;
    rc = cuasync_device_count(&count, err, errlen);
    if (rc) return rc;
    if (ordinal < 0 || ordinal >= count || ordinal >= MAX_DEVICES)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID,
                            "ordinal %d out of range (this machine has %d device%s)",
                            ordinal, count, count == 1 ? "" : "s");
    CUASYNC_CU(cuDeviceGet, (&dev, ordinal), err, errlen, "opening device %d", ordinal);
    if (!contexts[ordinal])
        CUASYNC_CU(cuDevicePrimaryCtxRetain, (&contexts[ordinal], dev), err, errlen,
                   "retaining the primary context of device %d", ordinal);
    CUASYNC_CU(cuCtxSetCurrent, (contexts[ordinal]), err, errlen,
               "making device %d's context current", ordinal);
    memset(p, 0, sizeof *p);
    p->ordinal = ordinal;
    CUASYNC_CU(cuDeviceGetName, (p->name, (int)sizeof p->name, dev), err, errlen,
               "reading the name of device %d", ordinal);
    for (i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        rc = attribute((int *)((char *)p + attrs[i].offset), attrs[i].attrib, dev, attrs[i].what,
                       err, errlen);
        if (rc) return rc;
    }
    CUASYNC_CU(cuDeviceTotalMem, (&total, dev), err, errlen, "reading the memory size of device %d",
               ordinal);
    p->total_mem = total;
    return CUASYNC_OK;
}

int cuasync_device_activate(int ordinal, char *err, size_t errlen)
{
    if (ordinal < 0 || ordinal >= MAX_DEVICES || !contexts[ordinal])
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "device %d is not open",
                            ordinal);
    CUASYNC_CU(cuCtxSetCurrent, (contexts[ordinal]), err, errlen,
               "making device %d's context current", ordinal);
    return CUASYNC_OK;
}

int cuasync_device_synchronize(const char *what, char *err, size_t errlen)
{
    int rc = cuasync_driver_init(err, errlen);
    if (rc) return rc;
    CUASYNC_CU(cuCtxSynchronize, (), err, errlen, "%s", what && *what ? what : "synchronizing the device");
    return CUASYNC_OK;
}

int cuasync_device_reset(int ordinal, char *err, size_t errlen)
{
    CUdevice dev;
    int rc = cuasync_driver_init(err, errlen);
    if (rc) return rc;
    if (ordinal < 0 || ordinal >= MAX_DEVICES || !contexts[ordinal])
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "device %d is not open", ordinal);
    CUASYNC_CU(cuDeviceGet, (&dev, ordinal), err, errlen, "opening device %d", ordinal);
    /* not current, and not retained by us: the reset then really ends the old context */
    CUASYNC_CU(cuCtxSetCurrent, (NULL), err, errlen, "releasing device %d's context from this thread", ordinal);
    CUASYNC_CU(cuDevicePrimaryCtxRelease, (dev), err, errlen, "releasing the primary context of device %d", ordinal);
    contexts[ordinal] = NULL;
    CUASYNC_CU(cuDevicePrimaryCtxReset, (dev), err, errlen, "resetting the primary context of device %d", ordinal);
    CUASYNC_CU(cuDevicePrimaryCtxRetain, (&contexts[ordinal], dev), err, errlen,
               "retaining a new primary context of device %d", ordinal);
    CUASYNC_CU(cuCtxSetCurrent, (contexts[ordinal]), err, errlen, "making device %d's context current", ordinal);
    return CUASYNC_OK;
}

int cuasync_device_mem_info(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen)
{
    int rc = cuasync_driver_init(err, errlen);
    if (rc) return rc;
    CUASYNC_CU(cuMemGetInfo, (free_bytes, total_bytes), err, errlen, "reading free device memory");
    return CUASYNC_OK;
}
