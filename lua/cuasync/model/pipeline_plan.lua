-- A pipeline plan's arithmetic: every byte count, offset and arrival count a TMA/bulk pipeline
-- needs, derived from its loads and roles (pipeline.lua turns tensor maps into the load
-- descriptors below and adds the device side). Pure Lua.
-- A load descriptor: { name, bytes = transaction bytes of one box, smem = shared-memory bytes of
--   one box, boxes = TMA instructions per stage, align = stage-buffer alignment, what = text,
--   padded = why smem > bytes (or nil), edge = text (or nil), multicast = "x" | "y" | "z" | nil }
-- Rules (each verified on the H200 by spec/pipeline_derivation_spec.lua):
--   * a box counts in full even where it hangs over the tensor's edge (the fill completes too);
--   * a swizzled row narrower than the span is padded in shared memory, not in the count;
--   * a load of several boxes per stage (a tile wider than the swizzle span) counts every box;
--   * multicast: each block of the line issues one slice and multicasts it; a block's stage
--     receives every slice once, so its count is the whole tile, never multiplied by the cluster.
local util = require("cuasync.util")
local ring = require("cuasync.model.ring")
local rules = require("cuasync.model.launch_rules")
local cp_async = require("cuasync.model.cp_async_plan")

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
--         completion = "mbarrier" | "group" (cp.async loads) }
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
  plan.empty_count = o.roles.arrivals * plan.peer_count
  -- the watchdog's progress words (static shared memory, 4 bytes each): the arrivals each
  -- empty barrier received, then the stages the producer armed; the Config carries the offsets
  plan.progress = { received = 0, armed = o.stages, words = o.stages + 1 }
  if o.completion then cp_async.derive(plan, o.completion) end
  if plan.empty_count > M.MAX_ARRIVALS then
    fail(("empty barriers would expect %d arrivals, more than 2^20-1"):format(plan.empty_count))
  end
  return plan
end

-- { {name, offset, bytes, align}, ... } in address order: stage buffers, then full[], empty[].
function M.layout(plan)
  local out = {}
  for s = 0, plan.stages - 1 do
    for _, l in ipairs(plan.loads) do
      out[#out + 1] = { name = ("stage[%d].%s"):format(s, l.name), offset = s * plan.pitch + l.offset,
                        bytes = l.stage_smem, align = l.align }
    end
  end
  for _, which in ipairs({ "full", "empty" }) do
    local base = plan[which .. "_offset"]
    for s = 0, plan.stages - 1 do
      out[#out + 1] = { name = ("%s[%d]"):format(which, s), offset = base + s * ring.BARRIER_BYTES,
                        bytes = ring.BARRIER_BYTES, align = ring.BARRIER_BYTES }
    end
  end
  if (plan.scratch_bytes or 0) > 0 then
    out[#out + 1] = { name = "scratch", offset = plan.scratch_offset, bytes = plan.scratch_bytes, align = 1024 }
  end
  return out
end

-- Every buffer at its alignment and no two overlapping (a plan built here always passes; a
-- mutated or hand-edited one may not).
function M.check_layout(plan)
  local l = M.layout(plan)
  local last_end, last_name = 0, nil
  for _, e in ipairs(l) do
    if e.offset % e.align ~= 0 then
      fail(("%s is at offset %d, not a multiple of its %d-byte alignment%s"):format(e.name, e.offset, e.align,
           e.align >= 256 and " (the swizzle pattern repeats every 8 spans: the buffer must start on a repeat)" or ""))
    end
    if e.offset < last_end then
      fail(("%s at offset %d overlaps %s, which ends at %d"):format(e.name, e.offset, last_name, last_end))
    end
    last_end, last_name = e.offset + e.bytes, e.name
  end
  if last_end + plan.slack > plan.smem_bytes then
    fail(("the layout ends at %d (+%d slack) past smem_bytes %d"):format(last_end, plan.slack, plan.smem_bytes))
  end
end

local function plural(n, word) return ("%d %s%s"):format(n, word, n == 1 and "" or "s") end

function M.explain(plan)
  local r = plan.roles
  local out = {}
  local cp = plan.kind == "cp_async"
  local consumers = r.release ~= "thread" and plural(r.consumer_warps, "warp") or plural(r.consumer_threads, "thread")
  local roles
  if cp then
    roles = r.unified and ("cp.async, completion = \"%s\"; unified: all %d threads copy and consume"):format(plan.completion, r.block)
      or ("cp.async, completion = \"%s\"; partitioned: %d producer threads (%s) copy, %s consume = %d threads"):format(
           plan.completion, plan.producer_threads, plural(r.producer_warps, "warp"), consumers, r.block)
  else
    roles = r.unified and ("unified: all %d threads consume, thread 0 also issues the copies"):format(r.block)
      or ("partitioned: %s produce (one elected thread issues the copies), %s consume = %d threads"):format(
           plural(r.producer_warps, "warp"), consumers, r.block)
  end
  out[#out + 1] = ("pipeline '%s': %s, %s"):format(plan.name, plural(plan.stages, "stage"), roles)
  if plan.cluster_size > 1 then
    out[#out + 1] = ("  cluster {%d, %d, %d} = %s; each block has its own stages and barriers"):format(
      plan.cluster[1], plan.cluster[2], plan.cluster[3], plural(plan.cluster_size, "block"))
  end
  local terms = {}
  if cp then cp_async.explain(plan, out) end
  for _, l in ipairs(cp and {} or plan.loads) do
    local line = l.mode and ("  load %s: %s = %d B per box"):format(l.name, l.what, l.bytes)
                 or ("  load %s: %s"):format(l.name, l.what)
    if l.boxes > 1 then
      line = line .. ("; %d boxes per stage (%s), every one counted: %d B"):format(l.boxes,
        l.split or "several TMA instructions", l.bytes * l.boxes)
    end
    if l.padded then line = line .. "; " .. l.padded end
    if l.edge then line = line .. "; " .. l.edge end
    if l.multicast then
      line = line .. ("; multicast along %s: each of the %d blocks of the line issues one slice to all of them, so this block's stage receives %d slices = %d B, the whole tile once (not multiplied by the cluster)"):format(
        l.multicast, l.slices, l.slices, l.tx)
    end
    line = line .. ("; at stage offset %d, %d B of shared memory, aligned to %d"):format(l.offset, l.stage_smem, l.align)
    out[#out + 1] = line
    terms[#terms + 1] = tostring(l.tx)
  end
  if not cp then
    out[#out + 1] = ("  tx per stage: %s%d B (full[s] is armed with it by arrive.expect_tx)"):format(
      #terms > 1 and (table.concat(terms, " + ") .. " = ") or "", plan.tx_bytes)
  end
  out[#out + 1] = ("  stage pitch %d B (aligned to %d) x %d = %d B; full[0..%d] at %d, empty[0..%d] at %d; + %d B slack to align the dynamic base to %d = %d B of dynamic shared memory"):format(
    plan.pitch, plan.align, plan.stages, plan.data_bytes, plan.stages - 1, plan.full_offset, plan.stages - 1,
    plan.empty_offset, plan.slack, plan.align, plan.smem_bytes)
  if (plan.scratch_bytes or 0) > 0 then
    out[#out + 1] = ("  scratch: %d B at %d (the kernel's own region, 1024-aligned)"):format(plan.scratch_bytes, plan.scratch_offset)
  end
  out[#out + 1] = ("  %sempty: %d arrivals (%s%s)"):format(
    cp and "" or ("full: %d arrival (the producer's arrive.expect_tx) + %d tx bytes; "):format(plan.full_count, plan.tx_bytes),
    plan.empty_count,
    r.release == "warp" and ("release = \"warp\": one lane of each of %d consumer warps"):format(r.consumer_warps)
      or r.release == "warpgroup" and ("release = \"warpgroup\": one lane of each of %d consumer warpgroups; a warpgroup releases when its warps are done with the stage, as after wgmma.wait_group"):format(r.consumer_warps / 4)
      or ("release = \"thread\": each of %d consumer threads"):format(r.consumer_threads),
    plan.peer_count > 1 and (", from each of the %d blocks whose copies land here (%s)"):format(plan.peer_count,
      r.release == "thread" and "each thread arrives on every one of them"
      or ("lane k of the releasing %s arrives on the k-th of them, in parallel"):format(r.release == "warp" and "warp" or "warpgroup's warps")) or "")
  return table.concat(out, "\n")
end

return M
