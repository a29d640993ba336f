-- The 0.1.0 release (CHANGELOG.md). `make dist` writes build/dist/cuasync-0.1.0.tar.gz (git archive
-- of the tracked tree) and the source rock build/dist/cuasync-0.1.0-1.src.rock that carries it and
-- this file; install that rock with no network:
--   luarocks --lua-version=5.1 install build/dist/cuasync-0.1.0-1.src.rock
-- (there is no download host: `source.url` is the tarball's name, found inside the rock).
-- make builds libcuasync.so; make install puts the Lua modules and kernels-src under LUADIR, the
-- library under LIBDIR and the `cuasync` command under BINDIR. cuasync-scm-1.rockspec builds the
-- checkout as it is.
rockspec_format = "3.0"
package = "cuasync"
version = "0.1.0-1"
source = { url = "cuasync-0.1.0.tar.gz", dir = "cuasync-0.1.0" }
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
-- `luarocks test`: busted (run it under LuaJIT; .busted puts lua/ and build/ on the paths), the
-- GPU specs left out; dkjson for the sweep specs' JSON. `make test` runs everything, GPU included.
test_dependencies = { "busted >= 2.0", "dkjson >= 2.5" }
test = { type = "busted", flags = { "--exclude-tags=gpu" } }
