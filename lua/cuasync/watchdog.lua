-- The hang watchdog, host side. A program built with a watchdog (cuasync.program{ watchdog =
-- true | { timeout_ms = n, action = "exit" | "trap" } }, CUASYNC_WATCHDOG=1 for every program, and
-- by default for P:program) compiles kernels-src/cuasync/watchdog.cuh's bounded waits. At load,
-- its module gets a post-mortem record in host-mapped memory; after a launch, the next
-- synchronize (device, stream, event, or a download) reads it and raises a Hang error:
--   cuasync.watchdog: kernel 'k' hung: block (17,0,0) warp 4 (consumer) waited 2000 ms on full[2]
--   of pipeline 'main' (stage 2, parity 1, iteration 37); 49152 bytes armed for the stage
-- err.kind == "hang", err.block, err.barrier, err.stage, err.context_ok, err:explain().
local ffi = require("ffi")
local native = require("cuasync.native")
local util = require("cuasync.util")
local errors = require("cuasync.errors")
local mbarrier = require("cuasync.model.mbarrier")
local capture = require("cuasync.capture")
require("cuasync.cdef.memory")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

-- The layout of cuasync::watchdog::record (watchdog.cuh); written by the device, read here.
ffi.cdef [[
typedef struct cuasync_watchdog_record {
    unsigned state, module;
    unsigned block[3];
    unsigned cluster_rank, warp, lane;
    unsigned bar, parity, base, stage, role, iteration;
    unsigned phase_parity, received, armed, pad_;
    unsigned long long waited_ns, timeout_ns;
} cuasync_watchdog_record;
]]

local M = {}
M.DEFAULT_MS = 2000
M.MAX_MS = 3600 * 1000
M.ROLES = { [1] = "producer", [2] = "consumer" }

-- -- Options -----------------------------------------------------------------------------------

local function env_ms()
  local v = os.getenv("CUASYNC_WATCHDOG_MS")
  if v == nil or v == "" then return nil end
  local n = tonumber(v)
  if not util.is_integer(n) or n < 1 or n > M.MAX_MS then
    util.fail("program", ("CUASYNC_WATCHDOG_MS=%s must be an integer number of milliseconds in 1..%d"):format(
              util.describe(v), M.MAX_MS))
  end
  return n
end

-- The program's `watchdog` field (and the environment) as nil (off) or { timeout_ms, action }.
-- (P:program passes watchdog = true unless the user set it: plans watch by default.)
function M.options(v)
  local env = os.getenv("CUASYNC_WATCHDOG")
  if env ~= nil and env ~= "" and env ~= "0" and env ~= "1" then
    util.fail("program", ("CUASYNC_WATCHDOG=%s must be 0 or 1"):format(util.describe(env)))
  end
  if v == false then return nil end
  if v == nil then
    if env ~= "1" then return nil end
    v = true
  end
  local o = { timeout_ms = env_ms() or M.DEFAULT_MS, action = "exit" }
  if v == true then return o end
  if type(v) ~= "table" then
    util.fail("program", ('watchdog must be true, false or { timeout_ms = n, action = "exit" | "trap" } (got %s)'):format(
              util.describe(v)))
  end
  util.known_fields("program", v, { timeout_ms = true, action = true }, "watchdog")
  if v.timeout_ms ~= nil then o.timeout_ms = util.int_in("program", "watchdog.timeout_ms", v.timeout_ms, 1, M.MAX_MS) end
  if v.action ~= nil then
    if v.action ~= "exit" and v.action ~= "trap" then
      util.fail("program", ('watchdog.action must be "exit" (the context survives) or "trap" (a core dump; the context is lost) (got %s)'):format(
                util.describe(v.action)))
    end
    o.action = v.action
  end
  return o
end

-- The defines a watched program is compiled with.
function M.defines(o)
  local d = { CUASYNC_WATCHDOG = 1, CUASYNC_WATCHDOG_NS = ("%dull"):format(o.timeout_ms * 1000000) }
  if o.action == "trap" then d.CUASYNC_WATCHDOG_TRAP = 1 end
  return d
end

-- -- Records -----------------------------------------------------------------------------------

-- id -> { record, host (pointer to free), generation, abort/claim/first (device addresses), last }.
-- Weak: the module holds its entry (mod.watch), and freeing the entry frees the record.
local watched = setmetatable({}, { __mode = "v" })
local next_id = 0
local modules = setmetatable({}, { __mode = "v" })

-- Give a freshly loaded module of a watched program its record (called by module.lua).
function M.attach(mod)
  next_id = next_id + 1
  local id = next_id
  local host, dev = ffi.new("void *[1]"), ffi.new("CUdeviceptr[1]")
  native.check(C.cuasync_mem_alloc_mapped(host, dev, ffi.sizeof("cuasync_watchdog_record"), errbuf, ERRLEN))
  local rec = ffi.cast("cuasync_watchdog_record *", host[0])
  ffi.fill(rec, ffi.sizeof("cuasync_watchdog_record"))
  local w = { id = id, record = rec, host = host[0], generation = native.state.generation, program = mod.program }
  -- the words a hang leaves raised, cleared after its record is read (addresses, not views: a
  -- view would keep the module alive)
  local function global(name)
    local v = mod:global(name)
    local address, bytes = v.ptr, tonumber(v.nbytes)
    return v, address, bytes
  end
  local v
  v, w.abort = global("cuasync_watchdog_abort"); v:close()
  v, w.claim = global("cuasync_watchdog_claim"); v:close()
  v, w.first = global("cuasync_watchdog_first"); v:close()
  v = mod:global("cuasync_watchdog_record"); v:upload(ffi.new("uint64_t[1]", dev[0]), 8); v:close()
  v = mod:global("cuasync_watchdog_module"); v:upload(ffi.new("uint32_t[1]", id), 4); v:close()
  -- the record goes with the module (freed when the module object is collected or unloaded)
  local function free(host)
    if host and w.generation == native.state.generation then C.cuasync_mem_free_host(host, errbuf, ERRLEN) end
  end
  w.guard = ffi.gc(ffi.new("char[1]"), function()
    local host = w.host
    w.host = nil
    watched[id] = nil
    -- inside cuasync.graph's capture a free would break it: it waits for the capture's end
    if not capture.defer(free, host) then free(host) end
  end)
  watched[id] = w
  modules[id] = mod
  mod.watch = w
  return w
end

-- A launch of kernel `name` from watched module w (where: "node 2 of graph 'g'" for a graph's;
-- label: the name as the Hang shows it, when the caller made it once for many launches).
-- A record names the module, not the kernel: every kernel launched from it since the last
-- device-wide synchronize is a candidate, and the Hang names them all.
function M.launched(w, name, where, label)
  w.last, w.where = name, where
  label = label or (where and ("'%s' (%s)"):format(name, where) or ("'%s'"):format(name))
  local l = w.labels
  if not l then l = {}; w.labels = l end
  if not l[label] then l[label] = true; l[#l + 1] = label end
end

-- After a device-wide synchronize returned: nothing launched before it still runs.
function M.settled()
  for _, w in pairs(watched) do w.labels, w.last, w.where = nil, nil, nil end
end

-- Forget every record (cuasync.reset(): their memory went with the context).
function M.forget_all()
  for id, w in pairs(watched) do w.host = nil; watched[id] = nil end
end

-- -- The error object --------------------------------------------------------------------------

-- errors.lua's Hang (kind "hang"); its explain is this file's post-mortem
local Hang = errors.Hang
M.is_hang = errors.is_hang

-- The barrier's name in its pipeline ("full[2]"), from its offset in the stage ring.
local function barrier_name(plan, r)
  if not plan or r.base == 0 or r.bar < r.base then return nil end
  local off = r.bar - r.base
  for _, which in ipairs({ "full", "empty" }) do
    local first = plan[which .. "_offset"]
    if off >= first and off < first + 8 * plan.stages and (off - first) % 8 == 0 then
      return ("%s[%d]"):format(which, (off - first) / 8), which
    end
  end
end

local NONE = 0xFFFFFFFF

-- Build the error from a written record. `mod` may be gone (nil).
function M.error_from(r, mod, rc_ok)
  local plan = mod and mod.program.hooks and mod.program.hooks.plan
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
  local name, which = barrier_name(plan, r)
  e.barrier, e.which = name or (r.bar ~= 0 and ("the mbarrier at shared 0x%x"):format(r.bar) or "a bounded wait"), which
  if which == "full" and plan.kind ~= "cp_async" then e.armed = plan.tx_bytes end
  local who = e.kernels and #e.kernels > 0 and table.concat(e.kernels, " or ") or ("'%s'"):format(e.kernel)
  local parts = { ("cuasync.watchdog: kernel %s hung: block (%d,%d,%d)"):format(who, e.block[1], e.block[2], e.block[3]) }
  if plan and plan.cluster_size > 1 then parts[#parts + 1] = (" (cluster rank %d)"):format(e.cluster_rank) end
  parts[#parts + 1] = (" warp %d%s waited %d ms on %s"):format(e.warp, e.role and (" (" .. e.role .. ")") or "",
    math.floor(e.waited_ms + 0.5), e.barrier)
  if e.pipeline and name then
    parts[#parts + 1] = (" of pipeline '%s' (stage %d, parity %d, iteration %d)"):format(e.pipeline, e.stage, e.parity, e.iteration)
  elseif e.parity then
    parts[#parts + 1] = (" (parity %d)"):format(e.parity)
  end
  if e.armed then parts[#parts + 1] = ("; %d bytes armed for the stage"):format(e.armed) end
  local p = M.progress(e)
  if p then parts[#parts + 1] = "; " .. p.text end
  if e.kernels and #e.kernels > 1 then
    parts[#parts + 1] = ("; the record names the module '%s', and these %d of its kernels were launched since the last synchronize"):format(
      tostring(e.module), #e.kernels)
  end
  if not rc_ok then
    parts[#parts + 1] = "; the CUDA context is lost (watchdog action \"trap\"): start a new process to use the GPU again"
  end
  e.message = table.concat(parts)
  return errors.new("hang", e)
end

-- What the pipeline's progress words say about the waited phase, or nil:
-- { phase = the phase waited for, got = arrivals it received, need = arrivals it needs (empty), or
--   armed = whether the producer armed it (full), text }.
function M.progress(e)
  local plan = e.plan
  if not (plan and e.which and e.iteration) then return nil end
  local pass = math.floor(e.iteration / plan.stages)
  if e.which == "empty" and e.received and pass >= 1 then
    local phase, need = pass - 1, plan.empty_count
    local got = e.received - phase * need
    return { phase = phase, got = got, need = need,
             text = ("%s has received %d of the %d arrivals of phase %d"):format(e.barrier, math.max(0, got), need, phase) }
  elseif e.which == "full" and plan.kind == "cp_async" and e.received then
    -- the commits full[s] was sent: one per producer thread per pass (noinc arrive, or the
    -- arrival after wait_group), counted since the start
    local need = plan.full_count
    local got = e.received - pass * need
    return { phase = pass, got = got, need = need,
             text = ("%s has received %d of the %d arrivals of phase %d (%s)"):format(e.barrier, math.max(0, got), need, pass,
               plan.completion == "group" and "one per thread, after its wait_group" or "one cp.async.mbarrier.arrive.noinc per producer thread") }
  elseif e.which == "full" and e.armed_stages then
    local armed = e.armed_stages > e.iteration
    return { phase = pass, armed = armed,
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
  if plan and self.role and self.iteration then
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
  if #causes == 0 then causes[1] = "no single cause stands out in what was recorded" end
  out[#out + 1] = "likely cause: " .. table.concat(causes, "; and ")
  return table.concat(out, "\n")
end

-- The records of watched modules with launches pending in this context (what a cancel from
-- the host reaches: cancel.lua): each { abort, claim, first (device addresses), record, labels, last }.
function M.pending()
  local out = {}
  for _, w in pairs(watched) do
    if w.generation == native.state.generation and w.host and w.labels then out[#out + 1] = w end
  end
  return out
end

-- -- Reading the records -----------------------------------------------------------------------

-- After a synchronize that returned rc: a written record raises the Hang (and is cleared so
-- the module can launch again); else a failed rc raises its driver error. settle: the
-- synchronize was device-wide, so nothing launched before it still runs (M.settled).
function M.check(rc, settle)
  for id, w in pairs(watched) do
    if w.generation == native.state.generation and w.host and w.record.state ~= 0 then
      local mod = modules[id]
      local err = M.error_from(w.record, mod, rc == 0)
      if settle and rc == 0 then M.settled() end
      ffi.fill(w.record, ffi.sizeof("cuasync_watchdog_record"))
      if rc == 0 then
        native.check(C.cuasync_mem_set8(w.abort, 0, 4, errbuf, ERRLEN))
        native.check(C.cuasync_mem_set8(w.claim, 0, 4, errbuf, ERRLEN))
        native.check(C.cuasync_mem_set8(w.first, 0, 8, errbuf, ERRLEN))
      end
      error(err, 0)
    end
  end
  if rc ~= 0 then native.check(rc) end
  if settle then M.settled() end
end

return M
