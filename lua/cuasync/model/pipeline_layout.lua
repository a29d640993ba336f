-- A pipeline plan as a reader sees it: its shared-memory layout in address order, the check that
-- every buffer is at its alignment and none overlaps, and explain()'s words for every number
-- (pipeline_plan.lua derives the plan; it re-exports these). Pure Lua.
local util = require("cuasync.util")
local ring = require("cuasync.model.ring")
local cp_async = require("cuasync.model.cp_async_plan")
local orders = require("cuasync.model.order_plan")

local M = {}

local function fail(msg) util.fail("pipeline", msg) end

-- { {name, offset, bytes, align}, ... } in address order: stage buffers, then full[], empty[], an
-- order's [d][g], the scratch region.
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
  orders.layout(plan, out)
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
  orders.explain(plan, out)
  if (plan.scratch_bytes or 0) > 0 then
    out[#out + 1] = ("  scratch: %d B at %d (the kernel's own region, 1024-aligned)"):format(plan.scratch_bytes, plan.scratch_offset)
  end
  -- the releasing warps, warpgroups or threads of one block (consume = "alternate": one group's)
  local units = orders.arrivals(plan, r)
  local of_group = units ~= r.arrivals and (", one group's of %d: with order.consume = \"alternate\" a stage is read by one group"):format(
    plan.order.groups) or ""
  out[#out + 1] = ("  %sempty: %d arrivals (%s%s)"):format(
    cp and "" or ("full: %d arrival (the producer's arrive.expect_tx) + %d tx bytes; "):format(plan.full_count, plan.tx_bytes),
    plan.empty_count,
    r.release == "warp" and ("release = \"warp\": one lane of each of %d consumer warps%s"):format(units, of_group)
      or r.release == "warpgroup" and ("release = \"warpgroup\": one lane of each of %d consumer warpgroups%s; a warpgroup releases when its warps are done with the stage, as after wgmma.wait_group"):format(units, of_group)
      or ("release = \"thread\": each of %d consumer threads%s"):format(units, of_group),
    plan.peer_count > 1 and (", from each of the %d blocks whose copies land here (%s)"):format(plan.peer_count,
      r.release == "thread" and "each thread arrives on every one of them"
      or ("lane k of the releasing %s arrives on the k-th of them, in parallel"):format(r.release == "warp" and "warp" or "warpgroup's warps")) or "")
  return table.concat(out, "\n")
end

return M
