/* cuasync_toolkit.c — the CUDA toolkit, found at first use: its roots ($CUDA_HOME, the root of
 * $CUASYNC_NVRTC, /usr/local/cuda), NVRTC in them (its table resolved with dlsym: NVRTC has no
 * proc-address call), its include directory, and cuBLAS. Declared in cuasync_toolkit.h; what it
 * shares with the driver's loader (a failure remembered, the trace) in cuasync_loader.h. */
#define _GNU_SOURCE
#define CUASYNC_INTERNAL
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cuasync_api.h"
#include "cuasync_error.h"
#include "cuasync_loader.h"
#include "cuasync_toolkit.h"

cuasync_nvrtc_table cuasync_nvrtc;

static cuasync_load_state nvrtc;
static char nvrtc_loaded_path[1024];

/* -- Toolkit roots ----------------------------------------------------------------------------- */

int cuasync_toolkit_roots(char roots[][1024], int max)
{
    const char *home = getenv("CUDA_HOME");
    const char *nv = getenv("CUASYNC_NVRTC");
    int n = 0;
    if (home && *home && n < max) snprintf(roots[n++], 1024, "%.1000s", home);
    if (nv && *nv && strchr(nv, '/') && n < max) {
        /* <root>/lib64/libnvrtc.so -> <root> */
        char *cut;
        snprintf(roots[n], 1024, "%.1000s", nv);
        if ((cut = strrchr(roots[n], '/'))) *cut = 0;
        if ((cut = strrchr(roots[n], '/'))) { *cut = 0; if (*roots[n]) n++; }
    }
    if (n < max) snprintf(roots[n++], 1024, "/usr/local/cuda");
    return n;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int dir_has(const char *dir, const char *file)
{
    char path[2100];
    struct stat st;
    snprintf(path, sizeof path, "%.1000s/%.1000s", dir, file);
    return stat(path, &st) == 0;
}

/* -- NVRTC ------------------------------------------------------------------------------------- */

static const char *const nvrtc_files[] = { "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12" };
#define N_NVRTC_FILES (sizeof nvrtc_files / sizeof nvrtc_files[0])

/* The candidate paths in search order: the override alone when set (no silent fallback), else
 * the toolkit directories, else the bare SONAMEs for the dynamic linker's own search. */
static int nvrtc_candidates(char paths[][1024], int max, int *override)
{
    const char *env = getenv("CUASYNC_NVRTC");
    char roots[4][1024];
    int n = 0, d, nroots;
    size_t f;
    *override = env && *env;
    if (*override) {
        snprintf(paths[n++], 1024, "%.1000s", env);
        return n;
    }
    nroots = cuasync_toolkit_roots(roots, 4);
    for (d = 0; d < nroots; d++) {
        for (f = 0; f < N_NVRTC_FILES && n < max; f++)
            snprintf(paths[n++], 1024, "%.990s/lib64/%s", roots[d], nvrtc_files[f]);
    }
    for (f = 1; f < N_NVRTC_FILES && n < max; f++)
        snprintf(paths[n++], 1024, "%s", nvrtc_files[f]);
    return n;
}

#define CUASYNC_NVRTC_ENTRY(name, ret, params) { #name, (void **)&cuasync_nvrtc.name },
static const struct { const char *name; void **slot; } nvrtc_entries[] = {
    CUASYNC_NVRTC_API(CUASYNC_NVRTC_ENTRY)
};
#define N_NVRTC_ENTRIES (sizeof nvrtc_entries / sizeof nvrtc_entries[0])
static const struct { const char *name; void **slot; } nvrtc_optional[] = {
    CUASYNC_NVRTC_OPTIONAL_API(CUASYNC_NVRTC_ENTRY)
};
#define N_NVRTC_OPTIONAL (sizeof nvrtc_optional / sizeof nvrtc_optional[0])

static void loaded_path(void *lib, const char *fallback)
{
    struct link_map *map = NULL;
    if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
        snprintf(nvrtc_loaded_path, sizeof nvrtc_loaded_path, "%s", map->l_name);
    else
        snprintf(nvrtc_loaded_path, sizeof nvrtc_loaded_path, "%.1000s", fallback);
}

static int nvrtc_open(void)
{
    char paths[12][1024];
    int override, n = nvrtc_candidates(paths, 12, &override), i;
    void *lib = NULL;
    size_t e;
    for (i = 0; i < n && !lib; i++) {
        int is_path = strchr(paths[i], '/') != NULL;
        if (is_path && !override && !file_exists(paths[i])) {
            CUASYNC_TRACE("nvrtc candidate %s: no such file", paths[i]);
            continue;
        }
        lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        CUASYNC_TRACE("dlopen(\"%s\"): %s", paths[i], lib ? "ok" : dlerror());
        if (lib) loaded_path(lib, paths[i]);
    }
    if (!lib) {
        if (override)
            snprintf(nvrtc.message, sizeof nvrtc.message,
                     "no NVRTC: %s could not be loaded (CUASYNC_NVRTC)", paths[0]);
        else
            snprintf(nvrtc.message, sizeof nvrtc.message,
                     "no NVRTC: libnvrtc not found in $CUDA_HOME/lib64, /usr/local/cuda/lib64 or the "
                     "library path (set CUDA_HOME or CUASYNC_NVRTC)");
        return CUASYNC_E_NONVRTC;
    }
    for (e = 0; e < N_NVRTC_ENTRIES; e++) {
        *nvrtc_entries[e].slot = dlsym(lib, nvrtc_entries[e].name);
        CUASYNC_TRACE("dlsym(\"%s\"): %s", nvrtc_entries[e].name, *nvrtc_entries[e].slot ? "ok" : "not found");
        if (!*nvrtc_entries[e].slot) {
            snprintf(nvrtc.message, sizeof nvrtc.message, "no NVRTC: %s lacks %s (NVRTC too old)",
                     nvrtc_loaded_path, nvrtc_entries[e].name);
            return CUASYNC_E_NONVRTC;
        }
    }
    for (e = 0; e < N_NVRTC_OPTIONAL; e++) {
        *nvrtc_optional[e].slot = dlsym(lib, nvrtc_optional[e].name);
        CUASYNC_TRACE("dlsym(\"%s\"): %s (optional)", nvrtc_optional[e].name, *nvrtc_optional[e].slot ? "ok" : "not found");
    }
    return CUASYNC_OK;
}

int cuasync_nvrtc_init(char *err, size_t errlen)
{
    if (nvrtc.state == 1) return CUASYNC_OK;
    if (nvrtc.state == -1) return cuasync_fail(err, errlen, nvrtc.code, "%s", nvrtc.message);
    return cuasync_load_remember(&nvrtc, nvrtc_open(), err, errlen);
}

int cuasync_nvrtc_version(int *major, int *minor, char *err, size_t errlen)
{
    int rc = cuasync_nvrtc_init(err, errlen);
    if (rc) return rc;
    rc = cuasync_nvrtc.nvrtcVersion(major, minor);
    if (rc) return cuasync_fail(err, errlen, CUASYNC_E_NVRTC, "nvrtcVersion: %s while reading the "
                                "NVRTC version", cuasync_nvrtc.nvrtcGetErrorString(rc));
    return CUASYNC_OK;
}

const char *cuasync_nvrtc_path(void)
{
    return nvrtc.state == 1 ? nvrtc_loaded_path : "";
}

static int identity_of(const char *path, char *out, size_t outlen)
{
    struct stat st;
    char real[4096];
    if (!realpath(path, real) || stat(real, &st) != 0) return 0;
    snprintf(out, outlen, "%s %lld %lld", real, (long long)st.st_size, (long long)st.st_mtime);
    return 1;
}

int cuasync_nvrtc_identity(char *out, size_t outlen, char *err, size_t errlen)
{
    char paths[12][1024];
    int override, n, i, rc;
    if (nvrtc.state == 1 && identity_of(nvrtc_loaded_path, out, outlen)) return CUASYNC_OK;
    n = nvrtc_candidates(paths, 12, &override);
    for (i = 0; i < n; i++)
        if (strchr(paths[i], '/') && file_exists(paths[i]) && identity_of(paths[i], out, outlen))
            return CUASYNC_OK;
    if (override)
        return cuasync_fail(err, errlen, CUASYNC_E_NONVRTC,
                            "no NVRTC: %s could not be loaded (CUASYNC_NVRTC)", paths[0]);
    /* Only a bare SONAME is left: the dynamic linker must find it, so open it to learn where. */
    rc = cuasync_nvrtc_init(err, errlen);
    if (rc) return rc;
    if (!identity_of(nvrtc_loaded_path, out, outlen))
        snprintf(out, outlen, "%s", nvrtc_loaded_path);
    return CUASYNC_OK;
}

/* -- Include directory ------------------------------------------------------------------------- */

/* The include directory: the first toolkit root with include/cooperative_groups.h, else the
 * include/ beside the NVRTC found (<root>/targets/<arch>/lib/libnvrtc.so -> .../include). */
int cuasync_toolkit_include(char *out, size_t outlen, char *err, size_t errlen)
{
    char roots[4][1024], id[4200], dir[1100];
    int n = cuasync_toolkit_roots(roots, 4), i;
    char *cut;
    out[0] = 0;
    for (i = 0; i < n; i++) {
        snprintf(dir, sizeof dir, "%.1000s/include", roots[i]);
        if (dir_has(dir, "cooperative_groups.h")) { snprintf(out, outlen, "%s", dir); return CUASYNC_OK; }
    }
    if (cuasync_nvrtc_identity(id, sizeof id, err, errlen) == CUASYNC_OK) {
        if ((cut = strchr(id, ' '))) *cut = 0;   /* "path size mtime" */
        if ((cut = strrchr(id, '/'))) *cut = 0;
        if ((cut = strrchr(id, '/'))) {
            *cut = 0;
            snprintf(dir, sizeof dir, "%.1000s/include", id);
            if (dir_has(dir, "cooperative_groups.h")) snprintf(out, outlen, "%s", dir);
        }
    }
    return CUASYNC_OK;
}

/* -- cuBLAS ------------------------------------------------------------------------------------ */

/* cuBLAS, the GEMM yardstick (cuasync_blas.c): opened on first use from the toolkit roots' lib64,
 * then the library path; NULL and a CUASYNC_E_NOBLAS message when it is not there. */
void *cuasync_blas_symbol(const char *name, char *err, size_t errlen)
{
    static void *blas;
    void *sym;
    if (!blas) {
        char roots[4][1024], paths[6][1100];
        int i, n = 0, nroots = cuasync_toolkit_roots(roots, 4);
        for (i = 0; i < nroots; i++) snprintf(paths[n++], sizeof paths[0], "%.1000s/lib64/libcublas.so.13", roots[i]);
        snprintf(paths[n++], sizeof paths[0], "libcublas.so.13");
        snprintf(paths[n++], sizeof paths[0], "libcublas.so");
        for (i = 0; i < n && !blas; i++) {
            blas = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
            CUASYNC_TRACE("dlopen(\"%s\"): %s", paths[i], blas ? "ok" : dlerror());
        }
        if (!blas) {
            cuasync_fail(err, errlen, CUASYNC_E_NOBLAS,
                         "cuBLAS not found (libcublas.so.13 in $CUDA_HOME/lib64, /usr/local/cuda/lib64 or the library path)");
            return NULL;
        }
    }
    sym = dlsym(blas, name);
    if (!sym) cuasync_fail(err, errlen, CUASYNC_E_NOBLAS, "cuBLAS lacks %s (cuBLAS too old)", name);
    return sym;
}
