-- The arithmetic of a cp.async (LDGSTS) pipeline plan: per-thread copies of 4, 8 or 16 bytes,
-- completed on the stage's full barrier by one cp.async.mbarrier.arrive.noinc per producer thread
-- (completion = "mbarrier"), or by each thread's own async-groups (completion = "group":
-- commit_group per stage, wait_group stages-1, then a plain arrival on full so that the other
-- threads may read what this one copied). pipeline_plan.lua lays the stages out; this file
-- checks the loads and derives what each producer thread issues. Pure Lua.
-- A load { cp_async = bytes per stage, vector = 16 | 8 | 4, name, cache = "cg" | "ca",
--          zero_fill = bool, row = bytes } becomes a descriptor { name, cp_async = true, bytes,
--          smem, boxes = 1, align = M.ALIGN, vector, cache, zero_fill, row, rows, what }.
local util = require("cuasync.util")

local M = {}
M.VECTORS = { [4] = true, [8] = true, [16] = true }
M.MAX_BYTES = 2 ^ 20 - 1
-- Stage buffers start on a 128-byte line. Measured on the H200 (docs/cp-async.md): 16-byte
-- copies into a buffer at 16 mod 32 bytes ask L2 for every source sector twice (ncu: twice the
-- read sectors, L2 hit rate 68% instead of 51%) and stream ~8% slower than the same copies into
-- an aligned buffer; only 16-byte alignment, which PTX requires, was the layout before.
M.ALIGN = 128
M.COMPLETIONS = { mbarrier = "one cp.async.mbarrier.arrive.noinc per producer thread completes full[s] once that thread's copies landed",
                  group = "each thread commits a group per stage, waits for it (wait_group) and then arrives on full[s]" }
local FIELDS = { cp_async = true, vector = true, name = true, cache = true, zero_fill = true, row = true }

local function fail(msg) util.fail("pipeline", msg) end

function M.is_load(l) return type(l) == "table" and l.cp_async ~= nil end

-- loads[i] = { cp_async = ... } as a descriptor (i names it in messages).
function M.load(i, l)
  local at = ("loads[%d]"):format(i)
  util.known_fields("pipeline", l, FIELDS, at)
  local bytes = util.int_in("pipeline", at .. ".cp_async", l.cp_async, 4, M.MAX_BYTES)
  local v = l.vector == nil and 16 or l.vector
  if not M.VECTORS[v] then
    fail(("%s.vector must be 4, 8 or 16: the bytes one cp.async copies (got %s)"):format(at, util.describe(v)))
  end
  local cache = l.cache == nil and (v == 16 and "cg" or "ca") or l.cache
  if cache ~= "cg" and cache ~= "ca" then
    fail(('%s.cache must be "cg" (L2 only) or "ca" (L1 and L2) (got %s)'):format(at, util.describe(cache)))
  end
  if cache == "cg" and v ~= 16 then
    fail(('%s.cache = "cg" needs vector = 16: cp.async.cg copies 16 bytes only (got vector = %d); use cache = "ca"'):format(at, v))
  end
  if bytes % v ~= 0 then
    fail(("%s.cp_async = %d is not a multiple of its vector (%d bytes): a stage is whole copies"):format(at, bytes, v))
  end
  local row = l.row == nil and bytes or util.int_in("pipeline", at .. ".row", l.row, v, bytes)
  if row % v ~= 0 then fail(("%s.row = %d is not a multiple of its vector (%d bytes)"):format(at, row, v)) end
  if bytes % row ~= 0 then
    fail(("%s.row = %d does not divide the stage's %d bytes: a stage is whole rows"):format(at, row, bytes))
  end
  if l.zero_fill ~= nil and type(l.zero_fill) ~= "boolean" then
    fail(("%s.zero_fill must be true or false (got %s)"):format(at, util.describe(l.zero_fill)))
  end
  local name = l.name == nil and ("load" .. i) or l.name
  util.kind("pipeline", at .. ".name", name, "string")
  if not name:match("^[%a_][%w_]*$") then fail(("%s.name must be a C identifier (got %s)"):format(at, util.describe(name))) end
  local rows = bytes / row
  return { name = name, cp_async = true, bytes = bytes, smem = bytes, boxes = 1, align = M.ALIGN, vector = v, cache = cache,
           zero_fill = l.zero_fill == true, row = row, rows = rows,
           what = ("cp.async.%s %d B x %d = %d B%s"):format(cache, v, bytes / v, bytes,
             rows > 1 and (", %d rows of %d B (each row from its own source pointer)"):format(rows, row) or "") }
end

-- The plan-level fields of a cp.async pipeline, checked against its loads and roles.
function M.check(spec, loads, roles, cluster_given)
  local completion = spec.completion == nil and "mbarrier" or spec.completion
  if type(completion) ~= "string" or not M.COMPLETIONS[completion] then
    fail(('completion must be "mbarrier" or "group" (got %s)'):format(util.describe(completion)))
  end
  if completion == "group" then
    if cluster_given then
      fail('completion = "group" with a cluster: async-groups complete per thread, in its own block; use completion = "mbarrier"')
    end
    if not roles.unified then
      fail('completion = "group" needs producer = "all": a thread can wait only for its own cp.async groups (cp.async.wait_group), so the threads that copy must be the threads that consume; use completion = "mbarrier" for producer warps')
    end
  end
  if spec.multicast ~= nil then fail("multicast is for tensor-map loads; a cp.async copy lands in its own block only") end
  for i, l in ipairs(loads) do
    local vectors = l.bytes / l.vector
    local P = roles.producer_threads
    if vectors % P ~= 0 then
      local unit = P * l.vector
      fail(("loads[%d] (%s): %d B per stage in %d-byte vectors is %d copies, which %d producer threads cannot share evenly (%d / %d is not a whole number): make the stage a multiple of %d x %d = %d B (%d or %d B), or change the producer threads"):format(
        i, l.name, l.bytes, l.vector, vectors, P, vectors, P, P, l.vector, unit,
        math.max(unit, math.floor(l.bytes / unit) * unit), math.ceil(l.bytes / unit) * unit))
    end
    l.copies = vectors / P
  end
  return completion
end

-- The counts: full expects one arrival per producer thread in either form; the group form waits
-- with stages-1 groups still in flight.
function M.derive(plan, completion)
  plan.kind, plan.completion = "cp_async", completion
  plan.producer_threads = plan.roles.producer_threads
  plan.full_count = plan.producer_threads
  plan.tx_bytes = 0
  plan.stage_bytes = 0
  for _, l in ipairs(plan.loads) do plan.stage_bytes = plan.stage_bytes + l.bytes end
  plan.wait_depth = completion == "group" and plan.stages - 1 or nil
  -- progress words: empty[s]'s arrivals, stages armed (unused here), then full[s]'s commits
  plan.progress = { received = 0, armed = plan.stages, committed = plan.stages + 1, words = 2 * plan.stages + 1 }
end

local function copies(n) return ("%d cop%s"):format(n, n == 1 and "y" or "ies") end

-- explain()'s lines for the loads and the full barrier.
function M.explain(plan, out)
  local P = plan.producer_threads
  for _, l in ipairs(plan.loads) do
    out[#out + 1] = ("  load %s: %s; each of the %d producer threads issues %s per stage (vector %d: %s); at stage offset %d, %d B of shared memory%s"):format(
      l.name, l.what, P, copies(l.copies), l.vector,
      l.vector == 16 and "source and destination 16-byte aligned" or ("source and destination %d-byte aligned, .ca only"):format(l.vector),
      l.offset, l.stage_smem, l.zero_fill and "; zero-fill: bytes past the valid count read as 0" or "")
  end
  if plan.completion == "mbarrier" then
    out[#out + 1] = ("  full: %d arrivals, one cp.async.mbarrier.arrive.noinc per producer thread (it arrives once that thread's copies landed; no tx bytes)"):format(plan.full_count)
  else
    out[#out + 1] = ("  full: %d arrivals: each thread commits one group per stage, waits with cp.async.wait_group %d (stages - 1 groups in flight; in the tail, where no later stage is committed, as many as were: down to wait_group 0 for the last), then arrives, so that every thread may read what the others copied"):format(
      plan.full_count, plan.wait_depth)
  end
end

return M
