-- bench_compile.lua: how long prog:compile() takes in a new process — cold (NVRTC) and again
-- from the disk cache — each in a fresh LuaJIT process with a fresh cache directory; and a
-- compile that hits the memory cache (the same program built again in one process); then
-- NVRTC's precompiled headers in one process, and a 36-variant GEMM sweep's compile phase.
--   luajit examples/bench_compile.lua
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local o = require("cuasync.tools.cli").script{ options = {
  "internal: the benchmark runs itself in new processes with these",
  { "--child KIND", "compile copy_bulk.cu (copy), 6 variants of one program (pch), a 36-variant sweep's compile phase (sweep)",
    choices = { "copy", "pch", "sweep" } },
  { "--which NAME", "the pch child's program", default = "gemm", choices = { "libcu++", "gemm" } },
  { "--pch", "the pch child compiles with NVRTC's precompiled headers" },
  { "--jobs N", "the sweep child's compile workers", default = 1 },
} }

-- -- Processes and files: through isolate (the one place that starts a process) and cuasync.fs --
local isolate = require("cuasync.tools.isolate")
local fs = require("cuasync.fs")
local SELF = debug.getinfo(1, "S").source:match("^@(.*)$")
local quote = isolate.shell_quote
-- command(line) -> ok, output, code (a child's stderr goes where its line sends it)
local function command(line) return isolate.command(line) end
local cores = isolate.cores
-- a fresh cache directory's name (nothing made: the child makes it), and its removal
local function fresh_dir() local d = os.tmpname() fs.remove(d) return d end
local function remove_tree(dir) assert(fs.remove_tree(dir)) end

if o.child == "copy" then
  local cuasync = require("cuasync")
  local t0 = cuasync.now_ns()
  local prog = cuasync.program{ file = "copy_bulk.cu", defines = { STAGES = 4, CHUNK = 16384 }, arch = "sm_90a" }
  local mod = prog:compile()
  local t1 = cuasync.now_ns()
  -- memory-cache hits: a new program object with the same source and defines, compiled again
  local hits = {}
  for i = 1, 200 do
    local p = cuasync.program{ source = prog.source, name = prog.name, defines = { STAGES = 4, CHUNK = 16384 }, arch = "sm_90a" }
    local a = cuasync.now_ns()
    p:compile()
    hits[i] = tonumber(cuasync.now_ns() - a) / 1e6
  end
  print(("%.3f %d %d %.4f"):format((t1 - t0) / 1e6, cuasync.cache.stats.nvrtc, cuasync.cache.stats.disk,
        cuasync.median(hits)), #mod:cubin())
  return
end

if o.child == "pch" then
  local cuasync = require("cuasync")
  local gemm = require("cuasync.kernels.gemm")
  local pch = o.pch == true
  local t = {}
  for i, v in ipairs({ 2, 3, 4, 5, 6, 7 }) do
    local p = o.which == "libcu++"
      and cuasync.program{ file = "libcudacxx_pipelines.cu", arch = "sm_90a", defines = { STAGES = v }, pch = pch }
      or gemm.program({ stages = v, tile = "128x128", m = 8192, n = 8192, k = 8192 }, { pch = pch, arch = "sm_90a" })
    local t0 = cuasync.now_ns()
    local log = p:compile():log()
    t[i] = tonumber(cuasync.now_ns() - t0) / 1e6
    for l in log:gmatch("[^\n]*precompiled header[^\n]*") do io.stderr:write(("  variant %d: %s\n"):format(i, l)) end
  end
  print(table.concat(t, " "))
  io.stderr:write(("  PCH heap retries: %d\n"):format(require("cuasync.native").C.cuasync_compile_pch_retries()))
  return
end
if o.child == "sweep" then
  local cuasync = require("cuasync")
  local gemm = require("cuasync.kernels.gemm")
  local S = cuasync.sweep{ name = "bench_compile_gemm", host = true, rounds = 1, reps = 1,
    params = { stages = { 2, 3, 4 }, tile = { "128x128", "128x256" }, cluster = { 1, 2 }, raster = { 1, 8, 16 } },
    program = function(p) return gemm.program({ stages = p.stages, tile = p.tile, cluster = p.cluster, raster = p.raster,
                                                m = 8192, n = 8192, k = 8192 }, { arch = "sm_90a" }) end,
    build = function() return { run = function() end } end }
  S:run{ jobs = o.jobs, quiet = true, force = true }
  local n = 0
  for _, r in ipairs(S.rows) do if r.compile_ms then n = n + 1 end end
  print(("%.3f %d"):format(S.result.compile_s, n))
  return
end
local dir = fresh_dir()
local function child()
  local _, out = command(("CUASYNC_CACHE_DIR=%s luajit %s --child copy"):format(quote(dir), quote(SELF)))
  local ms, nvrtc, disk, hit = out:match("^(%S+) (%d+) (%d+) (%S+)")
  assert(ms, "child failed: " .. out)
  return tonumber(ms), tonumber(nvrtc), tonumber(disk), tonumber(hit)
end
local cold, n1, _, hit = child()
local warm = {}
for i = 1, 5 do
  local ms, n2, d2 = child()
  assert(n2 == 0 and d2 == 1, "expected a disk-cache hit")
  warm[i] = ms
end
table.sort(warm)
print(("copy_bulk.cu, new process each: cold compile %.1f ms (NVRTC runs: %d); from the disk cache %.2f ms (median of 5)"):format(
  cold, n1, warm[3]))
print(("prog:compile() hitting the memory cache (a new program object, same source): %.3f ms (median of 200)"):format(hit))
remove_tree(dir)

-- Precompiled headers (NVRTC's automatic PCH, what a sweep's compile workers use): each program
-- compiled as 6 variants one after another in one fresh process, without and with PCH. The
-- first compile is cold; the other five are warm in the worker (median, min, max). (Across processes NVRTC's PCH does
-- not carry: its automatic files are deleted at exit, and an explicit --create-pch file is
-- refused by another process, "incompatible PCH heap allocation address".)
local function pch_run(which, on)
  local d = fresh_dir()
  local _, out = command(("CUASYNC_CACHE_DIR=%s CUASYNC_PCH=verbose luajit %s --child pch --which %s%s 2>>%s"):format(quote(d), quote(SELF),
    quote(which), on and " --pch" or "", quote(os.getenv("BENCH_PCH_LOG") or "/dev/null")))
  remove_tree(d)
  local t = {}
  for x in out:gmatch("%S+") do t[#t + 1] = tonumber(x) end
  assert(#t == 6, "pch child failed: " .. out)
  local warm = { unpack(t, 2) }
  table.sort(warm)
  return t[1], warm[3], warm[1], warm[5]
end
print("\nprecompiled headers: 6 variants compiled one after another in one new process (ms)")
print(("%-44s %8s %12s %8s %8s"):format("", "cold", "warm median", "min", "max"))
for _, which in ipairs({ "libcu++", "gemm" }) do
  for _, on in ipairs({ false, true }) do
    local cold, med, lo, hi = pch_run(which, on)
    print(("%-44s %8.0f %12.0f %8.0f %8.0f"):format(
      (which == "libcu++" and "libcudacxx_pipelines.cu (<cuda/pipeline>)" or "gemm_tma.cu (128x128)") .. (on and ", PCH" or ", no PCH"),
      cold, med, lo, hi))
  end
end

-- The compile phase of a 36-variant GEMM sweep on a cold cache (a host sweep: compiles only),
-- with the compile workers (--jobs) and PCH varied.
local ncores = cores()
print(("\n36-variant GEMM sweep, compile phase on a cold cache (%d cores here)"):format(ncores))
for round, jobs in ipairs({ 1, 4, math.min(16, math.max(4, ncores)), 1, 4, math.min(16, math.max(4, ncores)) }) do   -- twice: the spread
  for _, on in ipairs(round <= 3 and { false, true } or { true, false }) do
    local d = fresh_dir()
    local _, out = command(("CUASYNC_CACHE_DIR=%s CUASYNC_PCH=%d luajit %s --child sweep --jobs %d"):format(quote(d), on and 1 or 0,
      quote(SELF), jobs))
    remove_tree(d)
    local s, n = out:match("^(%S+) (%d+)")
    assert(s, "sweep child failed: " .. out)
    print(("  --jobs %2d, %-7s %6.2f s for %s variants"):format(jobs, on and "PCH" or "no PCH", tonumber(s), n))
  end
end
