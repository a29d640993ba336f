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
local mbarrier = require("cuasync.model.mbarrier")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

-- The layout of cuasync::watchdog::record (watchdog.cuh); written by the device, read here.
ffi.cdef [[
typedef struct cuasync_watchdog_record {
    unsigned state, module;
    unsigned block[3];
    unsigned cluster_rank, warp, lane;
    unsigned bar, parity, base, stage, role, iteration;
    unsigned long long raw, waited_ns, timeout_ns;
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
-- `default_on`: programs built from a cuasync.pipeline watch unless told otherwise.
function M.options(v, default_on)
  local env = os.getenv("CUASYNC_WATCHDOG")
  if env ~= nil and env ~= "" and env ~= "0" and env ~= "1" then
    util.fail("program", ("CUASYNC_WATCHDOG=%s must be 0 or 1"):format(util.describe(env)))
  end
  if v == false then return nil end
  if v == nil then
    if not (default_on or env == "1") then return nil end
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

-- id -> { record, host (pointer to free), module (weak), generation, abort, claim, last }
local watched = {}
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
  w.abort = mod:global("cuasync_watchdog_abort")
  w.claim = mod:global("cuasync_watchdog_claim")
  w.first = mod:global("cuasync_watchdog_first")
  local ptr = ffi.new("uint64_t[1]", dev[0])
  mod:global("cuasync_watchdog_record"):upload(ptr, 8)
  mod:global("cuasync_watchdog_module"):upload(ffi.new("uint32_t[1]", id), 4)
  -- the record goes with the module (freed when the module object is collected or unloaded)
  w.guard = ffi.gc(ffi.new("char[1]"), function()
    if w.host and w.generation == native.state.generation then C.cuasync_mem_free_host(w.host, errbuf, ERRLEN) end
    w.host = nil
    watched[id] = nil
  end)
  watched[id] = w
  modules[id] = mod
  mod.watch = w
  return w
end

-- Forget every record (cuasync.reset(): their memory went with the context).
function M.forget_all()
  for id, w in pairs(watched) do w.host = nil; watched[id] = nil end
end

-- -- The error object --------------------------------------------------------------------------

local Hang = { kind = "hang" }
local Hang_mt = {
  __index = function(_, k)
    local v = Hang[k]
    if v ~= nil then return v end
    local f = string[k]
    if f then return function(self, ...) return f(tostring(self), ...) end end
  end,
  __tostring = function(e) return e.message end,
  __concat = function(a, b) return tostring(a) .. tostring(b) end,
}

function M.is_hang(e) return getmetatable(e) == Hang_mt end

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

local function decode(raw)
  local hi = tonumber(bit.rshift(raw, 32))
  local lo = tonumber(bit.band(raw, 0xFFFFFFFFULL))
  return mbarrier.decode(hi, lo)
end

-- Build the error from a written record. `mod` may be gone (nil).
function M.error_from(r, mod, rc_ok)
  local plan = mod and mod.program and mod.program.pipeline
  local e = {
    kind = "hang", kernel = mod and mod.watch and mod.watch.last or "?", module = mod and mod.name,
    block = { r.block[0], r.block[1], r.block[2] }, cluster_rank = r.cluster_rank, warp = r.warp, lane = r.lane,
    role = M.ROLES[r.role], stage = r.base ~= 0 and r.stage or nil, parity = r.parity ~= 0xFFFFFFFF and r.parity or nil,
    iteration = r.base ~= 0 and r.iteration or nil, address = r.bar, raw = r.raw,
    waited_ms = tonumber(r.waited_ns) / 1e6, timeout_ms = tonumber(r.timeout_ns) / 1e6,
    pipeline = plan and plan.name or nil, plan = plan, context_ok = rc_ok, sticky = not rc_ok,
  }
  e.state = r.bar ~= 0 and decode(r.raw) or nil
  local name, which = barrier_name(plan, r)
  e.barrier, e.which = name or (r.bar ~= 0 and ("the mbarrier at shared 0x%x"):format(r.bar) or "a bounded wait"), which
  if which == "full" then e.armed = plan.tx_bytes end
  local parts = { ("cuasync.watchdog: kernel '%s' hung: block (%d,%d,%d)"):format(e.kernel, e.block[1], e.block[2], e.block[3]) }
  if plan and plan.cluster_size > 1 then parts[#parts + 1] = (" (cluster rank %d)"):format(e.cluster_rank) end
  parts[#parts + 1] = (" warp %d%s waited %d ms on %s"):format(e.warp, e.role and (" (" .. e.role .. ")") or "",
    math.floor(e.waited_ms + 0.5), e.barrier)
  if e.pipeline and name then
    parts[#parts + 1] = (" of pipeline '%s' (stage %d, parity %d, iteration %d)"):format(e.pipeline, e.stage, e.parity, e.iteration)
  elseif e.parity then
    parts[#parts + 1] = (" (parity %d)"):format(e.parity)
  end
  if e.armed then parts[#parts + 1] = ("; %d bytes armed for the stage"):format(e.armed) end
  if e.state then
    parts[#parts + 1] = ("; the barrier: phase parity %d, %d of %d arrivals pending, tx-count %d"):format(
      e.state.parity, e.state.pending, e.state.expected, e.state.tx)
  end
  if not rc_ok then
    parts[#parts + 1] = "; the CUDA context is lost (watchdog action \"trap\"): cuasync.reset() makes a new one"
  end
  e.message = table.concat(parts)
  return setmetatable(e, Hang_mt)
end

-- The likely cause, from the recorded barrier state replayed in the CPU mbarrier model and, when
-- the kernel was built from a cuasync.pipeline, from its plan.
function Hang:explain()
  local s, plan = self.state, self.plan
  local out = { tostring(self) }
  if not s then
    out[#out + 1] = "no barrier state was recorded (the wait was not on an mbarrier)"
    return table.concat(out, "\n")
  end
  -- replay: a model barrier in the recorded state; the wait's parity must still be incomplete
  local mb = mbarrier.new(math.max(1, s.expected), self.barrier)
  mb.pending, mb.tx, mb.phase = s.pending, s.tx, s.parity
  local done = self.parity and mb:test_wait_parity(self.parity)
  out[#out + 1] = ("replayed in the CPU model: %s; test_wait.parity(%s) = %s"):format(mb:state(),
    tostring(self.parity), tostring(done))
  local causes = {}
  if done then
    causes[#causes + 1] = "the recorded state completes this wait: the phase completed just as the wait gave up (a timeout close to the kernel's real run time: raise timeout_ms)"
  end
  if plan and self.role and self.iteration then
    local pass = math.floor(self.iteration / plan.stages)
    local want = self.role == "consumer" and pass % 2 or (pass + 1) % 2
    if self.parity ~= want then
      causes[#causes + 1] = ("a parity off by one: the %s's iteration %d (pass %d of the %d-stage ring) waits for parity %d, but %s"):format(
        self.role, self.iteration, pass, plan.stages, want, ("this wait asked for parity %d"):format(self.parity))
    end
  end
  if s.pending == 0 and s.tx > 0 then
    causes[#causes + 1] = ("bytes armed ≠ bytes the loads bring: every arrival is in but the phase still expects %d bytes no copy will deliver%s"):format(
      s.tx, plan and self.which == "full" and (" (the plan's loads bring %d per stage; %d were armed)"):format(plan.tx_bytes, plan.tx_bytes + s.tx) or "")
  elseif s.pending == 0 and s.tx < 0 then
    causes[#causes + 1] = ("bytes armed ≠ bytes the loads bring: the copies brought %d bytes more than the phase was armed with%s"):format(
      -s.tx, plan and self.which == "full" and (" (the plan's loads bring %d per stage; %d were armed)"):format(plan.tx_bytes, plan.tx_bytes + s.tx) or "")
  elseif s.pending > 0 and s.pending < s.expected then
    causes[#causes + 1] = ("an arrival missing: %d of %d arrivals came in this phase, %d never did%s"):format(
      s.expected - s.pending, s.expected, s.pending,
      self.which == "empty" and " (a consumer warp that does not release the stage, or a peer block that does not arrive remotely)" or "")
  elseif s.pending == s.expected and s.tx == 0 then
    causes[#causes + 1] = self.which == "full"
      and "nothing arrived in this phase: the producer never armed the stage (it left its loop early, or is itself blocked)"
      or ("nothing arrived in this phase: %s"):format(self.which == "empty"
        and "no consumer released the stage (they are blocked, or the producer waits for a phase that will not come)"
        or "whoever should arrive never did")
  end
  if #causes == 0 then causes[1] = "no single cause stands out in the recorded state" end
  out[#out + 1] = "likely cause: " .. table.concat(causes, "; and ")
  return table.concat(out, "\n")
end

-- -- Reading the records -----------------------------------------------------------------------

-- Note that module `mod`'s kernel `name` was launched (its name goes into the message).
function M.launched(w, name) w.last = name end

-- After a synchronize that returned rc: a written record raises the Hang (and is cleared so
-- the module can launch again); else a failed rc raises its driver error.
function M.check(rc)
  for id, w in pairs(watched) do
    if w.generation == native.state.generation and w.host and w.record.state ~= 0 then
      local mod = modules[id]
      local err = M.error_from(w.record, mod, rc == 0)
      ffi.fill(w.record, ffi.sizeof("cuasync_watchdog_record"))
      if rc == 0 then
        w.abort:fill(0)
        w.claim:fill(0)
        w.first:fill(0)
      end
      error(err, 0)
    end
  end
  if rc ~= 0 then native.check(rc) end
end

return M
