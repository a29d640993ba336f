/* cuasync_device.c — devices and primary contexts. A context retained here stays retained for the
 * life of the process: buffers and modules need it, and releasing it at exit races the driver's
 * own teardown. */
#define CUASYNC_INTERNAL
#include <stdio.h>
#include <string.h>

#include "cuasync_api.h"
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

/* Every device property cuasync reads, listed once: the driver's CUdevice_attribute number
 * (cuda.h, CUDA 13) and the name Lua gives the value (cuasync_device_prop_name). */
static const struct { int attrib; const char *name; } props[] = {
    { 75, "cc_major" },                  /* COMPUTE_CAPABILITY_MAJOR */
    { 76, "cc_minor" },                  /* COMPUTE_CAPABILITY_MINOR */
    { 16, "sms" },                       /* MULTIPROCESSOR_COUNT */
    { 10, "warp_size" },                 /* WARP_SIZE */
    { 1, "max_threads_per_block" },      /* MAX_THREADS_PER_BLOCK */
    { 2, "max_block_x" },                /* MAX_BLOCK_DIM_X */
    { 3, "max_block_y" },                /* MAX_BLOCK_DIM_Y */
    { 4, "max_block_z" },                /* MAX_BLOCK_DIM_Z */
    { 5, "max_grid_x" },                 /* MAX_GRID_DIM_X */
    { 6, "max_grid_y" },                 /* MAX_GRID_DIM_Y */
    { 7, "max_grid_z" },                 /* MAX_GRID_DIM_Z */
    { 8, "smem_per_block" },             /* MAX_SHARED_MEMORY_PER_BLOCK: without opt-in (48 KiB) */
    { 97, "smem_optin" },                /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: what a kernel can opt in to */
    { 81, "smem_per_sm" },               /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    { 38, "l2_bytes" },                  /* L2_CACHE_SIZE */
    { 120, "cluster_launch" },           /* CLUSTER_LAUNCH: 1 when clusters can be launched */
    { 39, "max_threads_per_sm" },        /* MAX_THREADS_PER_MULTIPROCESSOR */
    { 12, "regs_per_block" },            /* MAX_REGISTERS_PER_BLOCK */
    { 13, "clock_khz" },                 /* CLOCK_RATE */
    { 36, "mem_clock_khz" },             /* MEMORY_CLOCK_RATE */
    { 37, "bus_width_bits" },            /* GLOBAL_MEMORY_BUS_WIDTH */
    { 82, "regs_per_sm" },               /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    { 106, "max_blocks_per_sm" },        /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    { 111, "reserved_smem_per_block" },  /* RESERVED_SHARED_MEMORY_PER_BLOCK */
};
#define NPROPS ((int)(sizeof props / sizeof props[0]))
typedef char props_fit[NPROPS <= CUASYNC_DEVICE_MAX_PROPS ? 1 : -1];

int cuasync_device_prop_count(void) { return NPROPS; }

const char *cuasync_device_prop_name(int i) { return i >= 0 && i < NPROPS ? props[i].name : NULL; }

int cuasync_device_open(int ordinal, cuasync_device_info *p, char *err, size_t errlen)
{
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
    for (i = 0; i < (size_t)NPROPS; i++) {
        rc = attribute(&p->value[i], props[i].attrib, dev, props[i].name, err, errlen);
        if (rc) return rc;
    }
    p->count = NPROPS;
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

int cuasync_device_pci_bus_id(int ordinal, char *out, size_t outlen, char *err, size_t errlen)
{
    CUdevice dev;
    int rc = cuasync_driver_init(err, errlen);
    if (rc) return rc;
    if (!out || outlen < 2 || outlen > 1024)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "outlen must be 2..1024 (got %zu)", outlen);
    CUASYNC_CU(cuDeviceGet, (&dev, ordinal), err, errlen, "opening device %d", ordinal);
    CUASYNC_CU(cuDeviceGetPCIBusId, (out, (int)outlen, dev), err, errlen, "reading the PCI bus id of device %d", ordinal);
    return CUASYNC_OK;
}
