-- The watchdog's post-mortem: a hung kernel's record (watchdog.lua reads it from host-mapped
-- memory) turned into a Hang error (errors.lua, kind "hang") whose message says who waited on
-- what, and its err:explain(): the progress the pipeline recorded, replayed in the CPU mbarrier
-- model, and the likely cause. Reads the record's fields, and for a traced module the hung
-- block's last events (trace/read.lua: one copy from the device).
local errors = require("cuasync.errors")
local mbarrier = require("cuasync.model.mbarrier")
local names = require("cuasync.model.barrier_names")
local orders = require("cuasync.model.order_plan")
local layouts = require("cuasync.model.layout_plan")
local trace = require("cuasync.trace.read")
local tiles = require("cuasync.model.tile_scheduler")

local M = {}
-- The watchdog site's roles (watchdog.cuh's site::role). 3 is the ordered barrier's
-- (order_plan.ROLE); the turnstile's wait (turnstile.cuh's ROLE) is 4: past the 2 bits a trace
-- event keeps of a role, so a turnstile wait is never on the timeline (trace.cuh's detail::left skips it).
M.TURNSTILE = 4
M.ROLES = { [1] = "producer", [2] = "consumer", [orders.ROLE] = "consumer group", [M.TURNSTILE] = "turnstile" }
M.LAST_EVENTS = 4   -- per warp, in the post-mortem of a traced kernel

local Hang = errors.Hang

-- The barrier's name in its pipeline ("full[2]", as the CPU model names it: barrier_names), from
-- its offset in the stage ring.
local function barrier_name(plan, r, base)
  if not plan or base == 0 or r.bar < base then return nil end
  local off = r.bar - base
  for _, which in ipairs({ "full", "empty" }) do
    local first = plan[which .. "_offset"]
    if off >= first and off < first + 8 * plan.stages and (off - first) % 8 == 0 then
      return names.name(which, (off - first) / 8), which
    end
  end
end

local NONE = 0xFFFFFFFF   -- a record field the wait did not fill

-- Build the error from a written record. `mod` may be gone (nil).
function M.error_from(r, mod, rc_ok)
  local hooks = mod and mod.program.hooks
  local plan, base = hooks and hooks.plan, r.base
  -- a kernel of several pipelines (cuasync.layout): the record's base is the layout's origin; the
  -- pipeline whose span holds the barrier is the one named, its base that span's start
  local part = hooks and hooks.parts and r.base ~= 0 and r.bar >= r.base and layouts.part_at(hooks.parts, r.bar - r.base)
  if part then plan, base = part.plan, r.base + part.offset end
  local e = {
    kind = "hang", kernel = mod and mod.watch and mod.watch.last or "?", module = mod and mod.name,
    node = mod and mod.watch and mod.watch.where or nil,
    kernels = mod and mod.watch and mod.watch.labels or nil,
    block = { r.block[0], r.block[1], r.block[2] }, cluster_rank = r.cluster_rank, warp = r.warp, lane = r.lane,
    role = M.ROLES[r.role], stage = r.base ~= 0 and r.stage or nil, parity = r.parity ~= NONE and r.parity or nil,
    iteration = r.base ~= 0 and r.iteration or nil, address = r.bar,
    phase_parity = r.phase_parity < 2 and r.phase_parity or nil,
    received = r.received ~= NONE and r.received or nil, armed_stages = r.armed ~= NONE and r.armed or nil,
    waited_ms = tonumber(r.waited_ns) / 1e6, timeout_ms = tonumber(r.timeout_ns) / 1e6,
    pipeline = plan and plan.name or nil, plan = plan, context_ok = rc_ok, sticky = not rc_ok,
  }
  local name, which = barrier_name(plan, r, base)
  -- a wait for a turn of the plan's ordered barrier (order.cuh): named as the CPU model names it
  local turn = not name and plan and base ~= 0 and r.bar >= base and orders.hang_place(plan, r.bar - base, r,
    plan.cluster_size > 1 and r.cluster_rank or nil)
  if turn then
    name, which = turn.name, "order"
    e.order, e.group, e.round, e.phase = plan.order.name, turn.group, turn.round, turn.phase
    e.role = ("consumer group %d"):format(turn.group)
  end
  e.barrier, e.which = name or (r.bar ~= 0 and ("the mbarrier at shared 0x%x"):format(r.bar) or "a bounded wait"), which
  if r.role == M.TURNSTILE then   -- a turnstile's flag (turnstile.cuh): stage = the tile, iteration = the tag awaited
    e.tile, e.epoch, e.awaited = r.stage, tiles.untag(r.iteration)
    e.barrier = ("the turnstile flag of tile %d (waiting for it to count %d k-tiles in launch epoch %d: the next launch, with its own epoch, ignores the flags this one left)"):format(
      r.stage, e.awaited, e.epoch)
  end
  if which and which ~= "order" and e.iteration then e.phase = names.phase(which, e.iteration, plan.stages) end
  if which == "full" and plan.kind ~= "cp_async" then e.armed = plan.tx_bytes end
  local who = e.kernels and #e.kernels > 0 and table.concat(e.kernels, " or ") or ("'%s'"):format(e.kernel)
  local parts = { ("cuasync.watchdog: kernel %s hung: block (%d,%d,%d)"):format(who, e.block[1], e.block[2], e.block[3]) }
  local placed = e.pipeline and name and e.stage and e.iteration
  local rank = plan and plan.cluster_size > 1 and e.cluster_rank or nil
  if rank and not placed then parts[#parts + 1] = (" (cluster rank %d)"):format(rank) end
  -- a plan's barrier placed in the words the CPU model's result uses for it (barrier_names)
  local where = turn and turn.at or placed and names.place{ pipeline = e.pipeline, which = which, stage = e.stage, phase = e.phase,
                                        parity = e.parity, iteration = e.iteration, rank = rank } or e.barrier
  e.at = placed and where or nil
  parts[#parts + 1] = (" warp %d%s waited %d ms on %s"):format(e.warp, e.role and (" (" .. e.role .. ")") or "",
    math.floor(e.waited_ms + 0.5), where)
  if not placed and e.parity then parts[#parts + 1] = (" (parity %d)"):format(e.parity) end
  if e.armed then parts[#parts + 1] = ("; %d bytes armed for the stage"):format(e.armed) end
  local p = M.progress(e)
  if p then parts[#parts + 1] = "; " .. p.text end
  if e.kernels and #e.kernels > 1 then
    parts[#parts + 1] = ("; the record names the module '%s', and these %d of its kernels were launched since the last synchronize"):format(
      tostring(e.module), #e.kernels)
  end
  if not rc_ok then
    local wd = mod and mod.program and mod.program.watchdog
    if wd and wd.action == "exit" then
      -- "exit" keeps the context: what lost it is not the watchdog's own doing
      parts[#parts + 1] = "; the CUDA context is lost too, though the watchdog's action was \"exit\" (which keeps it): the kernel" ..
        " also faulted (a block that leaves with copies still landing in its shared memory is one way): start a new process to use the GPU again"
    else
      parts[#parts + 1] = "; the CUDA context is lost (watchdog action \"trap\"): start a new process to use the GPU again"
    end
  end
  e.message = table.concat(parts)
  -- a traced module: what each warp of the hung block did just before (trace/read.lua)
  e.last_events = trace.recent(mod, e.block, M.LAST_EVENTS)
  return errors.new("hang", e)
end

-- What the pipeline's progress words say about the waited phase, or nil:
-- { phase = the phase waited for, got = arrivals it received, need = arrivals it needs (empty), or
--   armed = whether the producer armed it (full), text }.
function M.progress(e)
  local plan = e.plan
  if not (plan and e.which and e.iteration) then return nil end
  if e.which == "order" then return orders.hang_progress(plan, e) end
  local phase = names.phase(e.which, e.iteration, plan.stages)   -- of the barrier waited on
  if e.which == "empty" and e.received and phase >= 0 then
    local need = plan.empty_count
    local got = e.received - phase * need
    return { phase = phase, got = got, need = need,
             text = ("%s has received %d of the %d arrivals of phase %d"):format(e.barrier, math.max(0, got), need, phase) }
  elseif e.which == "full" and plan.kind == "cp_async" and e.received then
    -- the commits full[s] was sent: one per producer thread per pass (noinc arrive, or the
    -- arrival after wait_group), counted since the start
    local need = plan.full_count
    local got = e.received - phase * need
    return { phase = phase, got = got, need = need,
             text = ("%s has received %d of the %d arrivals of phase %d (%s)"):format(e.barrier, math.max(0, got), need, phase,
               plan.completion == "group" and "one per thread, after its wait_group" or "one cp.async.mbarrier.arrive.noinc per producer thread") }
  elseif e.which == "full" and e.armed_stages then
    local armed = e.armed_stages > e.iteration
    return { phase = phase, armed = armed,
             text = armed and ("the producer armed iteration %d (%d armed in all)"):format(e.iteration, e.armed_stages)
                    or ("the producer armed %d iterations, not iteration %d"):format(e.armed_stages, e.iteration) }
  end
end

-- The likely cause: the progress the pipeline recorded, replayed in the CPU mbarrier model
-- (the arrivals and stages the barrier received), and the plan's parity rule.
function Hang:explain()
  local plan = self.plan
  local out = { tostring(self) }
  local p = M.progress(self)
  local causes = {}
  if self.which == "order" then orders.hang_causes(plan, self, p, causes)
  elseif plan and self.role and self.iteration then
    local pass = math.floor(self.iteration / plan.stages)
    local want = self.role == "consumer" and pass % 2 or (pass + 1) % 2
    if self.parity ~= want then
      causes[#causes + 1] = ("a parity off by one: the %s's iteration %d (pass %d of the %d-stage ring) waits for parity %d, but this wait asked for parity %d"):format(
        self.role, self.iteration, pass, plan.stages, want, self.parity)
    end
  end
  if p and self.which == "empty" then
    local mb = mbarrier.new(p.need, self.barrier)
    local left = self.received
    while left > 0 do
      local n = math.min(left, mb.pending)
      mb:arrive(n)
      left = left - n
    end
    out[#out + 1] = ("replayed in the CPU model: %d arrivals on %s (count %d) leave it at %s; test_wait.parity(%d) = %s"):format(
      self.received, self.barrier, p.need, mb:state(), self.parity, tostring(mb:test_wait_parity(self.parity)))
    if p.got < p.need then
      causes[#causes + 1] = ("an arrival missing: %d of %d arrivals came in phase %d, %d never did (a consumer warp that does not release the stage, or a peer block that does not arrive remotely)"):format(
        math.max(0, p.got), p.need, p.phase, p.need - math.max(0, p.got))
    end
  elseif p and self.which == "full" and plan.kind == "cp_async" then
    local mb = mbarrier.new(p.need, self.barrier)
    for _ = 1, p.phase do mb:arrive(p.need) end
    if p.got > 0 then mb:cp_async_arrive(true, math.min(p.got, p.need)):land() end
    out[#out + 1] = ("replayed in the CPU model: %d phases, then %d noinc arrivals, leave %s at %s; test_wait.parity(%d) = %s"):format(
      p.phase, math.max(0, math.min(p.got, p.need)), self.barrier, mb:state(), self.parity, tostring(mb:test_wait_parity(self.parity)))
    if p.got < p.need then
      causes[#causes + 1] = ("an arrival missing: %d of the %d threads arrived for iteration %d, %d never did (%s)"):format(
        math.max(0, p.got), p.need, self.iteration, p.need - math.max(0, p.got), plan.completion == "group"
          and "a thread that left its loop before consuming the stage, or never reached consumer_wait"
          or "a producer thread that skipped producer_commit, or left its loop early")
    end
  elseif p and self.which == "full" then
    local mb = mbarrier.new(plan.full_count, self.barrier)
    for _ = 1, p.phase do mb:arrive_expect_tx(plan.tx_bytes); mb:complete_tx(plan.tx_bytes) end
    if p.armed then mb:arrive_expect_tx(plan.tx_bytes) end
    out[#out + 1] = ("replayed in the CPU model: %d phases filled%s leave %s at %s; test_wait.parity(%d) = %s"):format(
      p.phase, p.armed and ", then this one armed and its copies not all counted" or "", self.barrier, mb:state(),
      self.parity, tostring(mb:test_wait_parity(self.parity)))
    if p.armed then
      causes[#causes + 1] = ("bytes armed ≠ bytes the loads bring: the producer armed iteration %d but the phase never completed, so its tx-count never came back to 0 (the plan's loads bring %d bytes per stage: a copy missing, or a byte count that differs from the loads)"):format(
        self.iteration, plan.tx_bytes)
    else
      causes[#causes + 1] = ("the producer never armed iteration %d (it armed %d): it left its loop early, or is itself blocked"):format(
        self.iteration, self.armed_stages)
    end
  end
  if self.last_events then
    out[#out + 1] = "the timeline of the hung block, each warp's last events:"
    for _, l in ipairs(self.last_events) do out[#out + 1] = "  " .. l end
  end
  if #causes == 0 then causes[1] = "no single cause stands out in what was recorded" end
  out[#out + 1] = "likely cause: " .. table.concat(causes, "; and ")
  return table.concat(out, "\n")
end

return M
