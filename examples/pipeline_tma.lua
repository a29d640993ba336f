-- pipeline_tma.lua: the pipeline-depth sweep of a 2D TMA copy built from cuasync.pipeline
-- (kernels-src/pipeline_tma.cu holds no byte count or smem offset): stages x box rows x consumer
-- warps x bytes in flight per SM (0: as many blocks as fit, up to 4; n: blocks per SM cut so
-- that their stages hold about n bytes, as examples/tma_copy.lua sizes its grid), each verified
-- on fresh data, GB/s beside cuMemcpyDtoD in interleaved rounds. `make run`.
--   luajit examples/pipeline_tma.lua [--stages 1,2,3,4,6,8] [--rows 32,64] [--warps 2,4] [--inflight 0,40960]
--                                    [--out build] [--slurm SHARDS [--slurm-gpus 1] [--slurm-dir DIR]]
-- --slurm N runs the sweep as a Slurm job array of N shards and waits for the merged rows.
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
dofile(dir .. "/_path.lua")
local cuasync = require("cuasync")
local o = dofile(dir .. "/_args.lua")({ width = 16384, height = 8192, stages = "1,2,3,4,6,8", rows = "32,64", warps = "2,4", inflight = "0,40960",
  rounds = 5, reps = 10, out = "", gpus = "0", slurm = 0, ["slurm-gpus"] = 1, ["slurm-dir"] = "" },
  "pipeline_tma.lua [--stages 2,4] [--rows 32,64] [--warps 2,4] [--inflight 0,40960] [--width N] [--height N] [--out DIR] [--gpus all|0,1] [--slurm SHARDS] [--slurm-gpus N] [--slurm-dir DIR]")
local function list(s) local t = {} for x in tostring(s):gmatch("%d+") do t[#t + 1] = tonumber(x) end return t end
local W, Hh = o.width, o.height
local bytes = W * Hh * 4
local cp   -- made on first use: a worker that only compiles never touches the GPU
local function buffers() cp = cp or dofile(dir .. "/_copy.lua")(bytes) return cp end
local function map(rows, real)   -- a plan-only map (no driver) unless a launch needs the real one
  return cuasync.tensormap{ buffer = real and buffers().src or nil, ptr = not real and 256 or nil, bytes = not real and bytes or nil,
    encode = real or false, dtype = "f32", dims = { W, Hh }, box = { 64, rows } }
end
local function plan(p) return cuasync.pipeline{ name = "tma", stages = p.stages, loads = { { map = map(p.rows), name = "in" } },
  producer = { warps = 1 }, consumer = { warps = p.warps } } end
local function program(p) return plan(p):program{ file = "pipeline_tma.cu", defines = { BOX_X = 64, BOX_Y = p.rows } } end
local S = cuasync.sweep{ name = "pipeline_tma", params = { stages = list(o.stages), rows = list(o.rows), warps = list(o.warps), inflight = list(o.inflight) },
  order = { "inflight", "rows", "warps", "stages" }, program = program, rounds = o.rounds, reps = o.reps,
  build = function(p)
    local P, c, dev = plan(p), buffers(), cuasync.current_device()
    local k = program(p):compile():kernel("pipeline_tma", "tensormap, ptr, u32, u32, u32")
    local per_sm = math.min(4, k:occupancy(P.block, P.smem_bytes))
    if p.inflight > 0 then per_sm = math.min(per_sm, math.max(1, math.floor(p.inflight / (P.stages * P.tx_bytes)))) end
    local cfg = P:check(dev):launch_config{ grid = dev.sms * per_sm }
    return { run = k:prepare(cfg, map(p.rows, true), c.dst, W, W / 64, W / 64 * Hh / p.rows), bytes = 2 * bytes,
             inflight = P.tx_bytes * P.stages * per_sm,   -- bytes in flight per SM, for the knee
             stage_inflight = P.tx_bytes * per_sm,        -- one stage of every block: the one still landing
             poison = function() c.dst:fill(0xA5) end, verify = function() c.verify("pipeline_tma") return true end }
  end,
  baseline = { name = "cuMemcpyDtoD", run = function() buffers().base.run() end, bytes = 2 * bytes } }
S:run{ gpus = o.gpus == "all" and "all" or list(o.gpus), slurm = o.slurm > 0 and { shards = o.slurm, wait = true,
  gpus_per_task = o["slurm-gpus"], dir = o["slurm-dir"] ~= "" and o["slurm-dir"] or nil, poll_s = 0.5 } or nil }:print()
-- where extra stages stop paying, beside what Little's law predicts from the memory probe
local mem = S.best and cuasync.probe.memory(cuasync.current_device()) or nil
if S.best then print(S:knee{ x = "stages", series = { "inflight", "rows", "warps" }, memory = mem }:text()) end
if o.out ~= "" then
  os.execute("mkdir -p " .. require("cuasync.tools.isolate").shell_quote(o.out))   -- --out is made if missing
  print("wrote " .. S:csv(o.out .. "/pipeline_tma.csv") .. ", " .. S:json(o.out .. "/pipeline_tma.json") .. ", "
        .. S:write("t4", o.out .. "/pipeline_tma.t4.json"))
  if S.best then   -- a plot needs measured rows; without them it is a note, not an error
    local ok, err = pcall(S.plot, S, o.out .. "/pipeline_tma.png", { x = "stages", series = "rows" })
    print(ok and ("plot: " .. err) or ("plot: not drawn (" .. tostring(err):gsub("^[^\n]-: ", "", 1) .. ")"))
  end
end
local compiled = 0
for _, r in ipairs(S.rows) do if r.compile_ms then compiled = compiled + 1 end end
print(S.skipped_launches and ("done: %d variants compiled; nothing launched, so no knee and no plot (%s)"):format(compiled, S.skipped_launches)
      or ("done: %d variants, best %s"):format(#S.rows, S.best and S:label(S.best.params) or "none"))
