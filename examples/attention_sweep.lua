-- attention_sweep.lua: attention forward on Hopper (kernels-src/attention_fwd.cu on a
-- cuasync.pipeline plan, lua/cuasync/kernels/attention.lua) swept over stages x q_tile x kv_tile
-- x schedule x overlap for each of the issue's shapes (B x H x S x D, causal and not), every variant
-- verified against the f32 reference kernel (kernels-src/attention_ref.cu: O and LSE), then shown
-- beside torch's SDPA backends timed on the same GPU in the same run (examples/peers/sdpa.py:
-- cuDNN, flash = FlashAttention-2, efficient). Where torch does not import, it says so and shows
-- cuasync alone. TFLOP/s counts 4 B H S^2 D, halved for causal.
--   luajit examples/attention_sweep.lua [--shapes 4x16x4096x128,4x16x4096x128c] [--stages 2,3,4]
--                                       [--q-tiles 64,128,192] [--kv-tiles 64,128] [--schedules cooperative,pingpong]
--                                       [--overlap off,on] [--persistent off,on] [--watchdog on|off]
--                                       [--timeline] [--peers python3] [--rounds 5] [--reps 10]
-- A shape is BxHxSxD, a trailing c for causal. --persistent on: a grid of at most one block an SM
-- walking (head, q tile) units, causal longest first (attention.plan{ persistent = true }); the
-- default is off only, so that the measured defaults stay what they were.
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
local root = require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local cuasync = require("cuasync")
local attention = require("cuasync.kernels.attention")
local cli = require("cuasync.tools.cli")
local json = require("cuasync.json")
local isolate = require("cuasync.tools.isolate")
local random = require("example.random")
local timeline = require("cuasync.model.timeline")

local SHAPES = { "4x16x4096x128", "4x16x4096x128c", "2x16x8192x128", "2x16x8192x128c", "1x16x16384x128",
                 "4x16x4096x64", "4x16x4096x64c" }
local o = cli.script{ options = {
  { "--shapes LIST", "BxHxSxD[c] (c: causal)", default = SHAPES },
  { "--stages LIST", "slots of the K/V ring (K and V tiles alternate through it)", default = { 2, 3, 4, 5, 6 } },
  { "--q-tiles LIST", "query rows of a block (64 per consumer warpgroup; 192: three, d = 64 led with it)", default = { 64, 128, 192 } },
  { "--kv-tiles LIST", "keys of a K or V tile", default = { 64, 128 } },
  { "--schedules LIST", "cooperative, pingpong (the warpgroups take turns issuing their MMAs)", default = { "cooperative", "pingpong" } },
  { "--overlap LIST", "off, on (S of the next tile issued with O of this one: the softmax overlaps O's MMAs)", default = { "off", "on" } },
  { "--persistent LIST", "off (one block a q tile), on (min(units, SMs) blocks walking the units: docs/attention.md)", default = { "off" } },
  { "--watchdog WHICH", "on (the library's default for a plan's kernels) or off: the watchdog's bounded waits take registers in the loop (docs/attention.md)", choices = { "on", "off" }, default = "on" },
  { "--timeline", "each shape's best variant again, traced (1 block in 8), verified: its timeline's summary (where each role waits)" },
  { "--peers CMD", "the python that runs examples/peers/sdpa.py (none: skip the peers)", default = "python3" },
  { "--rounds N", "interleaved rounds", default = 5 }, { "--reps N", "launches timed per round", default = 10 },
} }

local function parse(text)
  local b, h, s, d, c = tostring(text):match("^(%d+)x(%d+)x(%d+)x(%d+)(c?)$")
  if not b then error(("attention_sweep: shape %q is not BxHxSxD[c]"):format(tostring(text)), 0) end
  return { b = tonumber(b), h = tonumber(h), s = tonumber(s), d = tonumber(d), causal = c == "c", text = text }
end

-- The peers first: their run does not share the GPU with ours.
local peers, why = {}, nil
if o.peers ~= "none" then
  -- argv, not a shell string: a checkout path with spaces stays one argument
  local _, out = isolate.command({ o.peers, root .. "/examples/peers/sdpa.py", "--shapes", table.concat(o.shapes, ",") })
  local line = (out or ""):match("(%b{})%s*$")
  local ok, res = pcall(json.decode, line or "")
  if not ok or type(res) ~= "table" then why = "examples/peers/sdpa.py gave no JSON: " .. tostring(out):sub(1, 300)
  elseif not res.torch then why = res.why
  else for _, r in ipairs(res.results) do peers[r.shape] = r end; print(("peers: torch %s, cuDNN %s, %s"):format(res.torch, tostring(res.cudnn_version), res.device)) end
else
  why = "--peers none"
end
if why then print("peers: none (" .. why .. "); cuasync alone") end

-- A timeline's ranges by name over the consumer tracks: count, median ns, share of the time those
-- tracks' rings kept (a track that lost events: from its first kept event).
local function ranges(T)
  local by, order, window = {}, {}, 0
  for _, tr in ipairs(T.tracks) do if tr.role == "consumer" then window = window + timeline.window(T, tr) end end
  for _, sp in ipairs(T.spans) do
    if sp.kind == "range" and T.tracks[sp.track].role == "consumer" then
      local r = by[sp.name]
      if not r then r = { name = sp.name, count = 0, total = 0, d = {} } by[sp.name] = r order[#order + 1] = r end
      r.count, r.total, r.d[#r.d + 1] = r.count + 1, r.total + (sp.t1 - sp.t0), sp.t1 - sp.t0
    end
  end
  for _, r in ipairs(order) do
    table.sort(r.d)
    r.median, r.share, r.d = r.d[math.ceil(#r.d / 2)], window > 0 and r.total / window or 0, nil
  end
  return order
end

local summary, failed = {}, 0   -- failed: traced variants that did not build or verify (the exit status)
for _, text in ipairs(o.shapes) do
  local sh = parse(text)
  local n, rows = sh.b * sh.h * sh.s * sh.d, sh.b * sh.h * sh.s
  local bufs   -- made on first use: without a GPU the sweep still plans, prunes and compiles
  local function data()
    if bufs then return bufs end
    bufs = { q = cuasync.alloc(n * 2), k = cuasync.alloc(n * 2), v = cuasync.alloc(n * 2), o = cuasync.alloc(n * 4),
             lse = cuasync.alloc(rows * 4), ref_o = cuasync.alloc(n * 4), ref_lse = cuasync.alloc(rows * 4) }
    for _, f in ipairs({ "q", "k", "v" }) do bufs[f]:fill_random{ dtype = "bf16", seed = random.seed() } end
    attention.reference(bufs.q, bufs.k, bufs.v, bufs.ref_o, bufs.ref_lse, sh.b * sh.h, sh.s, sh.d, sh.causal)
    return bufs
  end
  local function opts(p)
    return { b = sh.b, h = sh.h, s = sh.s, d = sh.d, causal = sh.causal, q_tile = p.q_tile, kv_tile = p.kv_tile,
             stages = p.stages, schedule = p.schedule, overlap = p.overlap == "on", out = "bf16", persistent = p.persistent == "on" }
  end
  local watchdog = o.watchdog == "on"
  local S = cuasync.sweep{
    name = "attention_" .. text, params = { stages = o.stages, q_tile = o.q_tiles, kv_tile = o.kv_tiles, schedule = o.schedules,
    overlap = o.overlap, persistent = o.persistent }, order = { "persistent", "schedule", "overlap", "q_tile", "kv_tile", "stages" }, unit = "TFLOP/s", rounds = o.rounds, reps = o.reps,
    where = function(p) return pcall(function() attention.plan(opts(p)):check(attention.limits()) end) end,
    program = function(p) return attention.program(opts(p), { watchdog = watchdog }) end,
    build = function(p) local q = opts(p); q.watchdog = watchdog; return attention.build(q, data()) end,
  }
  S:run()
  S:print()
  local best = S.best
  summary[#summary + 1] = { shape = text, best = best, peer = peers[text] }
  if o.timeline and best and bufs then   -- where the best variant's time goes (docs/attention.md, section 6)
    local ran, err = pcall(function()
      local q = opts(best.params)
      q.watchdog, q.trace = watchdog, { names = attention.TRACE_NAMES }
      local b = attention.build(q, bufs)
      b.poison(); b.run(); cuasync.synchronize()
      local ok, why = b.verify()
      if not ok then error("the traced variant failed its check: " .. tostring(why), 0) end
      print(("timeline of %s's best (traced, verified):"):format(text))
      local T = b.kernel:trace()
      io.write(T:text())
      -- the unit's boundary: each range's count and median, and its share of the consumer warps'
      -- time (the time their rings kept, as the summary's shares)
      for _, r in ipairs(ranges(T)) do
        print(("range %-9s %6d  median %8.0f ns  %5.1f%% of the consumers' time"):format(r.name, r.count, r.median, 100 * r.share))
      end
    end)
    if not ran then
      print(("timeline of %s's best: not traced (%s)"):format(text, tostring(err)))
      failed = failed + 1
    end
  end
  for _, b in pairs(bufs or {}) do b:close() end
end

local function tf(x) return x and ("%.0f"):format(x) or "-" end
local function ratio(a, b) return (a and b) and ("%.2f"):format(a / b) or "-" end
print("\nshape            cuasync best                            TFLOP/s  cuDNN  FA2  efficient  /cuDNN  /FA2")
for _, r in ipairs(summary) do
  local p = r.peer or {}
  local function peer(name) return p[name] and p[name].tflops end
  local best = r.best and r.best.tflops
  local bp = r.best and r.best.params
  local params = bp and ("st %d q %d kv %d %s%s%s"):format(bp.stages, bp.q_tile, bp.kv_tile, bp.schedule,
    bp.overlap == "on" and "+ovl" or "", bp.persistent == "on" and "+pers" or "") or "(none verified)"
  print(("%-16s %-39s %7s %6s %4s %9s %7s %5s"):format(r.shape, params, tf(best), tf(peer("cudnn")), tf(peer("flash")),
    tf(peer("efficient")), ratio(best, peer("cudnn")), ratio(best, peer("flash"))))
end
if failed > 0 then os.exit(1) end
