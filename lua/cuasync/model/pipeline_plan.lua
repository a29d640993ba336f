-- A pipeline plan's arithmetic: every byte count, offset and arrival count a TMA/bulk pipeline
-- needs, derived from its loads and roles (pipeline.lua turns tensor maps into the load
-- descriptors below and adds the device side). Pure Lua.
-- A load descriptor: { name, bytes = transaction bytes of one box, smem = shared-memory bytes of
--   one box, boxes = TMA instructions per stage, align = stage-buffer alignment, what = text,
--   padded = why smem > bytes (or nil), edge = text (or nil), multicast = "x" | "y" | "z" | nil }
-- Rules (each verified on the H200 by spec/model/pipeline_derivation_spec.lua):
--   * a box counts in full even where it hangs over the tensor's edge (the fill completes too);
--   * a swizzled row narrower than the span is padded in shared memory, not in the count;
--   * a load of several boxes per stage (a tile wider than the swizzle span) counts every box;
--   * multicast: each block of the line issues one slice and multicasts it; a block's stage
--     receives every slice once, so its count is the whole tile, never multiplied by the cluster.
local util = require("cuasync.util")
local ring = require("cuasync.model.ring")
local rules = require("cuasync.model.launch_rules")
local cp_async = require("cuasync.model.cp_async_plan")
local layout = require("cuasync.model.pipeline_layout")
local orders = require("cuasync.model.order_plan")

local M = {}
M.MAX_STAGES = 64        -- pipeline.cuh's bound
M.MAX_TX = 2 ^ 20 - 1    -- an mbarrier's tx-count
M.MAX_ARRIVALS = 2 ^ 20 - 1
M.DIMS = { x = 1, y = 2, z = 3 }

local function fail(msg) util.fail("pipeline", msg) end
local round_up = ring.round_up

-- How consumers release a stage (arrive on empty): the arrivals each block's empty barrier
-- expects from each block whose copies land there, per form.
M.RELEASES = { thread = "every consumer thread arrives", warp = "one lane of each consumer warp arrives",
               warpgroup = "one lane of each consumer warpgroup (4 warps) arrives" }

-- Role shapes: producer = "all" | { warps = n } | { threads = n } (cp.async: the threads that
-- issue copies); consumer = { warps = n } | { threads = n }; release = "thread" | "warp" |
-- "warpgroup" (default: warp for consumer warps, thread for threads).
function M.roles(producer, consumer, release, cp)
  local r = {}
  if producer == "all" then
    r.unified, r.producer_warps = true, 0
  elseif type(producer) == "table" then
    util.known_fields("pipeline", producer, { warps = true, threads = true }, "producer")
    r.unified = false
    if (producer.warps == nil) == (producer.threads == nil) then
      fail("producer needs exactly one of warps or threads")
    end
    if producer.threads ~= nil then
      if not cp then
        fail("producer = { threads = n } is for cp.async loads (each producer thread issues copies); a TMA or bulk stage is issued by one elected thread: use producer = { warps = n }")
      end
      r.producer_threads = util.int_in("pipeline", "producer.threads", producer.threads, 1, 1024)
      r.producer_warps = math.ceil(r.producer_threads / 32)
    else
      r.producer_warps = util.int_in("pipeline", "producer.warps", producer.warps, 1, 32)
      r.producer_threads = 32 * r.producer_warps
    end
  else
    fail(('producer must be "all" (every thread consumes%s), { warps = n }%s (got %s)'):format(
         cp and " and copies" or ", one issues the copies", cp and " or { threads = n }" or "", util.describe(producer)))
  end
  if type(consumer) ~= "table" then
    fail(("consumer must be { warps = n } or { threads = n } (got %s)"):format(util.describe(consumer)))
  end
  util.known_fields("pipeline", consumer, { warps = true, threads = true }, "consumer")
  if (consumer.warps == nil) == (consumer.threads == nil) then
    fail("consumer needs exactly one of warps (one elected lane per warp arrives on empty) or threads (every thread arrives)")
  end
  if consumer.warps ~= nil then
    r.consumer_warps = util.int_in("pipeline", "consumer.warps", consumer.warps, 1, 32)
    r.consumer_threads = 32 * r.consumer_warps
  else
    r.consumer_threads = util.int_in("pipeline", "consumer.threads", consumer.threads, 1, 1024)
    r.consumer_warps = math.ceil(r.consumer_threads / 32)
  end
  release = release == nil and (consumer.warps and "warp" or "thread") or release
  if type(release) ~= "string" or not M.RELEASES[release] then
    fail(('release must be "thread", "warp" or "warpgroup" (got %s)'):format(util.describe(release)))
  end
  if release ~= "thread" and consumer.warps == nil then
    fail(('release = "%s" needs consumer = { warps = n }: with consumer = { threads = n } every thread releases (release = "thread")'):format(release))
  end
  if release == "warpgroup" and r.consumer_warps % 4 ~= 0 then
    fail(('release = "warpgroup" needs consumer warps in whole warpgroups (a multiple of 4; got %d)'):format(r.consumer_warps))
  end
  if release == "warpgroup" and not r.unified and r.producer_warps % 4 ~= 0 then
    fail(('release = "warpgroup" needs producer warps in whole warpgroups (a multiple of 4; got %d), so that consumer warpgroups are aligned'):format(
      r.producer_warps))
  end
  r.release = release
  r.arrive_by = release   -- (the post-mortem's name for it)
  r.arrivals = release == "thread" and r.consumer_threads or release == "warp" and r.consumer_warps or r.consumer_warps / 4
  r.block = r.unified and r.consumer_threads or 32 * (r.producer_warps + r.consumer_warps)
  if r.unified then r.producer_threads = cp and r.consumer_threads or 1 end
  if r.block > 1024 then
    fail(("the roles need %d threads per block (%d producer warp%s + %d consumer threads rounded to warps), more than 1024"):format(
         r.block, r.producer_warps, r.producer_warps == 1 and "" or "s", r.consumer_threads))
  end
  return r
end

-- Cluster dims {x, y, z} (or nil) and, per load, the multicast dimension and its extent.
function M.cluster(cluster)
  if cluster == nil then return { 1, 1, 1 }, 1 end
  util.list("pipeline", "cluster", cluster)
  if #cluster < 1 or #cluster > 3 then fail(("cluster must have 1..3 entries (got %d)"):format(#cluster)) end
  local c = { 1, 1, 1 }
  for i = 1, #cluster do c[i] = util.int_in("pipeline", ("cluster[%d]"):format(i), cluster[i], 1, 16) end
  local size = c[1] * c[2] * c[3]
  if size > rules.MAX_CLUSTER then
    fail(("cluster {%d, %d, %d} has %d blocks; a cluster has at most %d (%d portable)"):format(c[1], c[2], c[3], size,
         rules.MAX_CLUSTER, rules.PORTABLE_CLUSTER))
  end
  return c, size
end

-- Which blocks of the cluster a load's slice reaches from block rank r (its multicast line).
function M.line(c, dim, r)
  local x, y, z = r % c[1], math.floor(r / c[1]) % c[2], math.floor(r / (c[1] * c[2]))
  local out = {}
  local d = M.DIMS[dim]
  for i = 0, c[d] - 1 do
    local p = { x, y, z }
    p[d] = i
    out[#out + 1] = p[1] + c[1] * (p[2] + c[2] * p[3])
  end
  return out
end

-- The blocks whose copies land in block r's stages (itself included): the union of its lines.
function M.peers(plan, r)
  local set, list = { [r] = true }, { r }
  for _, l in ipairs(plan.loads) do
    if l.multicast then
      for _, p in ipairs(M.line(plan.cluster, l.multicast, r)) do
        if not set[p] then set[p] = true; list[#list + 1] = p end
      end
    end
  end
  table.sort(list)
  return list
end

-- derive{ name, stages, loads = {descriptors} | stage_bytes = n, roles, cluster, cluster_size, scratch = bytes,
--         completion = "mbarrier" | "group" (cp.async loads), order = model/order_plan.check's result }
function M.derive(o)
  local plan = { name = o.name, stages = o.stages, roles = o.roles, cluster = o.cluster, cluster_size = o.cluster_size,
                 loads = {}, kind = "tma" }
  local offset, max_align, tx = 0, 16, 0
  for i, l in ipairs(o.loads) do
    local n = 1
    if l.multicast then n = o.cluster[M.DIMS[l.multicast]] end
    local d = {}
    for k, v in pairs(l) do d[k] = v end
    d.index = i - 1
    d.slices = n                       -- slices landing per stage (one per block of the line)
    d.mdim = l.multicast and M.DIMS[l.multicast] or 0
    d.tx = l.cp_async and 0 or l.bytes * l.boxes * n   -- bytes this block's stage receives from this load
    d.stage_smem = l.smem * l.boxes * n
    d.offset = round_up(offset, l.align)
    offset = d.offset + d.stage_smem
    if l.align > max_align then max_align = l.align end
    tx = tx + d.tx
    plan.loads[i] = d
  end
  plan.tx_bytes = tx
  if tx > M.MAX_TX then
    fail(("tx per stage is %d bytes, more than an mbarrier's tx-count holds (2^20-1 = %d): smaller boxes or fewer loads per stage"):format(
         tx, M.MAX_TX))
  end
  plan.align = max_align
  plan.stage_used = offset
  plan.pitch = round_up(offset, max_align)
  plan.data_bytes = plan.pitch * o.stages
  plan.full_offset = round_up(plan.data_bytes, ring.BARRIER_BYTES)
  plan.empty_offset = plan.full_offset + ring.BARRIER_BYTES * o.stages
  plan.barrier_end = plan.empty_offset + ring.BARRIER_BYTES * o.stages
  if o.order then orders.place(plan, o.order) end   -- the ordered barrier's [d][g] follow empty[]
  -- scratch: a region of the kernel's own after the barriers (an epilogue's staging buffer),
  -- 1024-aligned so that any swizzle or TMA store may use it
  plan.scratch_bytes = o.scratch or 0
  plan.scratch_offset = plan.scratch_bytes > 0 and round_up(plan.barrier_end, 1024) or plan.barrier_end
  if plan.scratch_bytes > 0 and max_align < 1024 then max_align = 1024 end
  plan.align = max_align
  local last = plan.scratch_offset + plan.scratch_bytes
  -- the dynamic-smem base is only 16-byte aligned by contract: carve from the next aligned byte
  plan.slack = max_align > 16 and max_align - 16 or 0
  plan.smem_bytes = last + plan.slack
  plan.block = o.roles.block
  plan.full_count = 1   -- one elected producer thread arrives (with expect_tx) per stage
  plan.peer_count = #M.peers(plan, 0)
  plan.empty_count = orders.arrivals(plan, o.roles) * plan.peer_count
  -- the watchdog's progress words (static shared memory, 4 bytes each): the arrivals each
  -- empty barrier received, then the stages the producer armed; the Config carries the offsets
  plan.progress = { received = 0, armed = o.stages, words = o.stages + 1 }
  orders.progress(plan)
  if o.completion then cp_async.derive(plan, o.completion) end
  if plan.empty_count > M.MAX_ARRIVALS then
    fail(("empty barriers would expect %d arrivals, more than 2^20-1"):format(plan.empty_count))
  end
  return plan
end

-- The layout, its check and the explanation (pipeline_layout.lua).
M.layout, M.check_layout, M.explain = layout.layout, layout.check_layout, layout.explain

return M
