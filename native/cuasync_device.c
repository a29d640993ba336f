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

int cuasync_device_open(int ordinal, cuasync_device_props *p, char *err, size_t errlen)
{
    static const struct { int attrib; size_t offset; const char *what; } attrs[] = {
#define A(id, field) { id, offsetof(cuasync_device_props, field), #field }
        A(75, cc_major), A(76, cc_minor), A(16, sms), A(10, warp_size),
        A(1, max_threads_per_block), A(2, max_block[0]), A(3, max_block[1]), A(4, max_block[2]),
        A(5, max_grid[0]), A(6, max_grid[1]), A(7, max_grid[2]), A(8, smem_per_block),
        A(97, smem_optin), A(81, smem_per_sm), A(38, l2_bytes), A(120, cluster_launch),
        A(39, max_threads_per_sm), A(12, regs_per_block), A(13, clock_khz), A(36, mem_clock_khz),
        A(37, bus_width_bits), A(82, regs_per_sm), A(106, max_blocks_per_sm), A(111, reserved_smem_per_block),
#undef A
    };
    int count, rc;
    size_t i, total = 0;
    CUdevice dev;
    rc = cuasync_device_count(&count, err, errlen);
    if (rc) return rc;
    if (ordinal < 0 || ordinal >= count || ordinal >= MAX_DEVICES)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID,
                            "cuasync.device: ordinal %d out of range (this machine has %d device%s)",
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
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "cuasync.device: device %d is not open",
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

int cuasync_device_mem_info(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen)
{
    int rc = cuasync_driver_init(err, errlen);
    if (rc) return rc;
    CUASYNC_CU(cuMemGetInfo, (free_bytes, total_bytes), err, errlen, "reading free device memory");
    return CUASYNC_OK;
}
