-- Declarations of native/cuasync_hash.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")

local declarations = [[
void cuasync_sha256_hex(const void *data, size_t len, char *hex);
]]

ffi.cdef(declarations)
return declarations
