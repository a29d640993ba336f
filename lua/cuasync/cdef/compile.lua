-- Declarations of native/cuasync_compile.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
typedef struct cuasync_compiled cuasync_compiled;
int cuasync_compile(const char *source, const char *name,
                    int nheaders, const char *const *header_sources, const char *const *header_names,
                    int noptions, const char *const *options,
                    int nexpressions, const char *const *expressions,
                    cuasync_compiled **out, char *err, size_t errlen);
const char *cuasync_compiled_log(const cuasync_compiled *c, size_t *len);
const char *cuasync_compiled_ptx(const cuasync_compiled *c, size_t *len);
const char *cuasync_compiled_cubin(const cuasync_compiled *c, size_t *len);
const char *cuasync_compiled_lowered(const cuasync_compiled *c, int index);
void cuasync_compiled_free(cuasync_compiled *c);
int cuasync_compile_pch_retries(void);
]]

ffi.cdef(declarations)
return declarations
