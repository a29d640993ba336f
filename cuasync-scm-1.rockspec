-- Builds and installs with `luarocks make` (no network): make builds libcuasync.so, make install
-- puts the Lua modules and kernels-src under LUADIR and the library under LIBDIR.
rockspec_format = "3.0"
package = "cuasync"
version = "scm-1"
source = { url = "git+file://." }
description = {
  summary = "Hopper async copies, barriers, pipelines, TMA tensor maps and cluster launches from LuaJIT",
  detailed = [[
cuasync compiles CUDA C++ kernels with NVRTC at run time, loads them through the CUDA Driver API
(both dlopen'ed, never linked) and exposes devices, buffers, programs, kernels and launches as
LuaJIT objects, with every launch rule checked before the driver sees it.]],
  license = "MIT",
}
dependencies = { "lua == 5.1" }   -- LuaJIT 2.1 (the FFI is required)
build = {
  type = "make",
  build_variables = { CFLAGS = "$(CFLAGS)", LIBFLAG = "$(LIBFLAG)" },
  install_variables = { LUADIR = "$(LUADIR)", LIBDIR = "$(LIBDIR)", BINDIR = "$(BINDIR)" },
}
test = { type = "busted" }
