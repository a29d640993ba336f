-- pipeline_tma.lua: the pipeline-depth sweep of a 2D TMA copy built from cuasync.pipeline
-- (kernels-src/pipeline_tma.cu holds no byte count or smem offset): stages x box rows x consumer
-- warps x bytes in flight per SM (0: as many blocks as fit, up to 4; n: blocks per SM cut so
-- that their stages hold about n bytes, as examples/tma_copy.lua sizes its grid), each verified
-- on fresh data, GB/s beside cuMemcpyDtoD in interleaved rounds, then the knee. `make run`:
--   luajit bin/cuasync sweep examples/pipeline_tma.lua --out build [--param stages=2,4] [--jobs 2] ...
--   luajit examples/pipeline_tma.lua --out build [--stages 2,4] [--slurm SHARDS] ...   (--help: every option)
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local cli = require("cuasync.tools.cli")
local command = require("cuasync.tools.commands.sweep")
local copy_data = require("example.copy")

local o = cli.script{ sweep = true, options = {
  { "--stages LIST", "stages of the pipeline", default = { 1, 2, 3, 4, 6, 8 } },
  { "--rows LIST", "rows of a box (64 floats wide)", default = { 32, 64 } },
  { "--warps LIST", "consumer warps", default = { 2, 4 } },
  { "--inflight LIST", "bytes in flight per SM the grid aims for (0: as many blocks as fit, up to 4)", default = { 0, 40960 } },
  { "--width N", "the matrix's width, floats", default = 16384 },
  { "--height N", "the matrix's height", default = 8192 },
  { "--rounds N", "interleaved rounds", default = 5 },
  { "--reps N", "launches timed per round", default = 10 },
  "on its own (through cuasync sweep, the command's --out, --gpus and --slurm serve):",
  { "--out DIR", "write pipeline_tma.csv, .json, .t4.json and a plot to DIR (made if missing)", alone = true },
  { "--gpus all|0,1", "the GPUs that measure (default: GPU 0)", type = command.gpus, alone = true },
  { "--slurm SHARDS", "run as a Slurm job array of SHARDS shards and wait for the merged rows", default = 0, alone = true },
  { "--slurm-gpus N", "GPUs per Slurm task", default = 1, alone = true },
  { "--slurm-dir DIR", "the Slurm scripts and results (default cuasync-slurm/pipeline_tma)", alone = true },
} }
local W, Hh = o.width, o.height
local bytes = W * Hh * 4
local cp   -- made on first use: a worker that only compiles never touches the GPU
local function buffers() cp = cp or copy_data(bytes) return cp end
local function map(rows, real)   -- a plan-only map (no driver) unless a launch needs the real one
  return cuasync.tensormap{ buffer = real and buffers().src or nil, ptr = not real and 256 or nil, bytes = not real and bytes or nil,
    encode = real or false, dtype = "f32", dims = { W, Hh }, box = { 64, rows } }
end
local function plan(p) return cuasync.pipeline{ name = "tma", stages = p.stages, loads = { { map = map(p.rows), name = "in" } },
  producer = { warps = 1 }, consumer = { warps = p.warps } } end
local function program(p) return plan(p):program{ file = "pipeline_tma.cu", defines = { BOX_X = 64, BOX_Y = p.rows } } end
local S = cuasync.sweep{ name = "pipeline_tma", params = { stages = o.stages, rows = o.rows, warps = o.warps, inflight = o.inflight },
  order = { "inflight", "rows", "warps", "stages" }, program = program, rounds = o.rounds, reps = o.reps,
  -- a copy draws far less power than a GEMM: settled 50 ms, its rows' spread was 0.2% on the H200
  -- (3 runs, every row stable); the sweep's default of 200 ms is for power-bound work (docs/sweeps.md)
  settle_ms = 50,
  build = function(p)
    local P, c, dev = plan(p), buffers(), cuasync.current_device()
    local k = program(p):compile():kernel("pipeline_tma", "tensormap, ptr, u32, u32, u32")
    local per_sm = math.min(4, k:occupancy(P.block, P.smem_bytes))
    if p.inflight > 0 then per_sm = math.min(per_sm, math.max(1, math.floor(p.inflight / (P.stages * P.tx_bytes)))) end
    local cfg = P:check(dev):launch_config{ grid = dev.sms * per_sm }
    return { run = k:prepare(cfg, map(p.rows, true), c.dst, W, W / 64, W / 64 * Hh / p.rows), bytes = 2 * bytes,
             inflight = P.tx_bytes * P.stages * per_sm,   -- bytes in flight per SM, for the knee
             stage_inflight = P.tx_bytes * per_sm,        -- one stage of every block: the one still landing
             poison = function() c.dst:poison() end, verify = function() c.verify("pipeline_tma") return true end }
  end,
  baseline = { name = "cuMemcpyDtoD", run = function() buffers().base.run() end, bytes = 2 * bytes } }

-- After the table and the files, both ways: where extra stages stop paying (beside what Little's
-- law predicts from the memory probe), a plot beside the files --out wrote, the last line.
local function after(_, run)
  if S.best then
    print(S:knee{ x = "stages", series = { "inflight", "rows", "warps" }, memory = cuasync.probe.memory(cuasync.current_device()) }:text())
  end
  if run.out and S.best then   -- a plot needs measured rows; without them it is a note, not an error
    local ok, err, note = pcall(S.plot, S, run.out .. "/pipeline_tma.png", { x = "stages", series = "rows" })
    print(ok and ("plot: " .. err .. (note and (": " .. note) or "")) or ("plot: not drawn (" .. tostring(err):gsub("^[^\n]-: ", "", 1) .. ")"))
  end
  local compiled = 0
  for _, r in ipairs(S.rows) do if r.compile_ms then compiled = compiled + 1 end end
  print(S.result.skipped_launches and ("done: %d variants compiled; nothing launched, so no knee and no plot (%s)"):format(compiled, S.result.skipped_launches)
        or ("done: %d variants, best %s"):format(#S.rows, S.best and S:label(S.best.params) or "none"))
end
if not cuasync.sweep.main() then return S, after end   -- `cuasync sweep` runs it, with its options
-- --slurm N: a Slurm job array of N shards, followed until the merged rows are in
local slurm = o.slurm > 0 and { shards = o.slurm, wait = true, gpus_per_task = o.slurm_gpus, dir = o.slurm_dir, poll_s = 0.5 } or nil
command.report(S:run{ gpus = o.gpus, slurm = slurm }, o, after)
