-- The GEMM's scheduler axis (kernels/gemm.lua): the cuasync.scheduler named "gemm_sched" whose
-- walk<Config> kernels-src/gemm_tma.cu follows, the persistent grid, and the turnstile's workspace.
--   gemm.plan{ ..., scheduler = "persistent" | "stream_k" | "split_k", splits = n, mode = "serial", sms = n }
-- persistent: whole tiles in raster bands (the order gemm_tma.cu always had); stream_k: the last
-- waves' tiles cut into k-iterations dealt evenly to every SM; split_k: every tile in `splits`
-- k-ranges. The two that cut a tile's k loop meet its partials through the turnstile (serial,
-- deterministic), in an f32 workspace and flags that gemm.build allocates (M.workspace).
local util = require("cuasync.util")
local errors = require("cuasync.errors")
local scheduler = require("cuasync.scheduler")
local device = require("cuasync.device")
local buffer = require("cuasync.buffer")

local M = {}
M.NAME = "gemm_sched"   -- <cuasync/schedulers/gemm_sched.cuh>
M.KINDS = { "persistent", "stream_k", "split_k" }
M.SMS = 132             -- the SM count of a plan made where no GPU is open (an H100 or H200 SXM)

-- A refusal of a plan by rule: an error of kind "plan" (cuasync.errors), which a sweep prunes.
local function fail(msg) util.fail("gemm", msg, { kind = "plan" }) end
M.fail = fail

-- The scheduler of gemm.plan's options o for a tile bm x bn, `cluster` blocks a cluster, k-tiles of bk.
function M.new(o, bm, bn, cluster, bk, raster)
  local kind = o.scheduler or "persistent"
  if kind ~= "persistent" and kind ~= "stream_k" and kind ~= "split_k" then
    fail(('scheduler must be "persistent", "stream_k" or "split_k" (got %s)'):format(util.describe(kind)))
  end
  if kind ~= "split_k" and o.splits ~= nil then fail(('splits is for scheduler = "split_k" (scheduler is "%s")'):format(kind)) end
  if kind == "split_k" and o.splits == nil then fail('scheduler = "split_k" needs splits = n (the k-ranges of a tile, 2 or more)') end
  if o.mode ~= nil and o.mode ~= "serial" then
    fail(('mode must be "serial" (the turnstile; the cluster reduce is not built in gemm_tma.cu) (got %s)'):format(util.describe(o.mode)))
  end
  if o.mode ~= nil and kind ~= "split_k" then fail(('mode is for scheduler = "split_k" (scheduler is "%s")'):format(kind)) end
  if cluster > 1 and kind ~= "persistent" then
    fail(('scheduler = "%s" needs cluster = 1 (a cluster of 2 shares the A tile of a pair of whole tiles: the persistent walk only)'):format(kind))
  end
  local dev = device.peek()
  local sms = o.sms or (dev and dev.sms) or M.SMS
  if not util.is_integer(sms) or sms < 1 or sms > 4096 then fail(("sms must be an integer in 1..4096 (got %s)"):format(util.describe(sms))) end
  -- The scheduler counts tiles of the cluster (a pair along N with cluster = 2) on sms / cluster
  -- slots. An extent shorter than a tile is one tile (the loads zero-fill, the stores clip), so it
  -- sees at least one tile; a raster band taller than the tile rows is the same order as one as
  -- tall as them.
  -- the k rules with the caller's k (the scheduler below sees k no shorter than bk)
  local k_tiles = math.ceil(o.k / bk)
  if kind == "stream_k" and k_tiles < 2 then
    fail(('scheduler = "stream_k": k = %d is one k-tile of bk = %d: stream-K cuts the k loop, and there is none to cut (scheduler = "persistent")'):format(
      o.k, bk))
  end
  if kind == "split_k" and util.is_integer(o.splits) and o.splits > k_tiles then
    fail(('scheduler = "split_k": splits = %d is more than the %d k-tiles (k = %d in steps of bk = %d): a split would get no k-iteration'):format(
      o.splits, k_tiles, o.k, bk))
  end
  local tn = bn * cluster
  local m, n, k = math.max(o.m, bm), math.max(o.n, tn), math.max(o.k, bk)
  local ok, s = pcall(scheduler.new, { name = M.NAME, kind = kind, m = m, n = n, k = k, tile = { bm, tn }, bk = bk,
    raster = math.min(raster, math.ceil(m / bm)), splits = o.splits, mode = kind == "split_k" and "serial" or nil,
    sms = math.max(1, math.floor(sms / cluster)) })
  if not ok then
    -- its rule in gemm's words: the field is `scheduler` here
    fail(('scheduler = "%s": %s'):format(kind, (errors.message(s):gsub("^cuasync%.scheduler: ", ""):gsub('%(kind = "', '(scheduler = "'))))
  end
  return s
end

-- The launch config of plan P on dev: the plan's block, smem and cluster; the scheduler's grid
-- (one block per SM at most; with clusters, at most as many as can be co-resident, so that a
-- persistent grid never runs a second wave).
function M.launch_config(P, dev, kernel)
  local s, c = P.sched, P.cluster_blocks or 1
  if s.turnstile then return s:launch_config(P:check(dev):launch_config{ grid = s.ctas }) end
  local cfg = P:check(dev):launch_config{ grid = c * s.ctas }
  if c > 1 and kernel then
    local active = kernel:max_active_clusters(cfg)
    if active < 1 then fail(("no cluster of %d blocks of this plan can be resident"):format(c)) end
    cfg.grid = c * math.min(active, s.ctas)
  end
  return cfg
end

-- The turnstile's f32 partials and flags for plan P (16 bytes each where it has none: the kernel
-- takes the pointers and never reads them); the flags zeroed once, as docs/schedulers.md asks.
function M.workspace(P, stream)
  local s = P.sched
  local work, flags = buffer.alloc(math.max(16, s.workspace_bytes)), buffer.alloc(math.max(16, s.flag_bytes))
  flags:fill(0, nil, nil, stream)
  return work, flags
end

-- The epoch of the next launch of P: sched:next_epoch() where P has a turnstile, else 0 (unread).
function M.epoch(P)
  return P.sched.turnstile and P.sched:next_epoch() or 0
end

return M
