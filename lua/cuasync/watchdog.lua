-- The hang watchdog, host side. A program built with a watchdog (cuasync.program{ watchdog =
-- true | { timeout_ms = n, action = "exit" | "trap" } }, CUASYNC_WATCHDOG=1 for every program, and
-- by default for P:program) compiles kernels-src/cuasync/watchdog.cuh's bounded waits. At load,
-- its module gets a post-mortem record in host-mapped memory; after a launch, the next
-- synchronize (device, stream, event, or a download) reads it and raises a Hang error:
--   cuasync.watchdog: kernel 'k' hung: block (17,0,0) warp 4 (consumer) waited 2000 ms on full[2]
--   of pipeline 'main' (stage 2, phase 9, parity 1, iteration 37); 49152 bytes armed for the stage
-- err.kind == "hang", err.block, err.barrier, err.stage, err.context_ok, err:explain() (the
-- post-mortem is hang.lua's). This file owns the record and the abort words: options, the
-- host-mapped record of each watched module, raising and lowering its abort word, reading it.
local ffi = require("ffi")
local native = require("cuasync.native")
local util = require("cuasync.util")
local errors = require("cuasync.errors")
local hang = require("cuasync.hang")
local capture = require("cuasync.capture")
require("cuasync.cdef.memory")
require("cuasync.cdef.stream")

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
M.ROLES = hang.ROLES
-- the post-mortem (hang.lua), still reachable here for callers from before the split
M.error_from, M.progress, M.is_hang = hang.error_from, hang.progress, errors.is_hang

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

-- The records of watched modules with launches pending in this context (what a cancel from
-- the host reaches: cancel.lua): each { abort, claim, first (device addresses), record, labels, last }.
function M.pending()
  local out = {}
  for _, w in pairs(watched) do
    if w.generation == native.state.generation and w.host and w.labels then out[#out + 1] = w end
  end
  return out
end

-- -- The abort words ---------------------------------------------------------------------------
-- A watched module's abort word is raised from the host (cancel.lua decides when) and lowered,
-- with the claim and first-waiter words a hang leaves, after the record was read or the
-- cancelled kernels left. Only these two functions write them.

-- The raise: a 4-byte copy of 1 from pinned memory on a non-blocking stream of its own, so it
-- does not queue behind the running kernel (a copy engine carries it while the kernel holds
-- every SM). One stream and word per context generation.
local abort = { generation = -1, pending = false }

function M.raise(w)
  if abort.generation ~= native.state.generation then
    local s, p = ffi.new("CUstream[1]"), ffi.new("void *[1]")
    native.check(C.cuasync_stream_create(s, 1, errbuf, ERRLEN))
    native.check(C.cuasync_mem_alloc_host(p, 4, errbuf, ERRLEN))
    ffi.cast("uint32_t *", p[0])[0] = 1
    abort.stream, abort.word, abort.generation = s[0], p[0], native.state.generation
  end
  native.check(C.cuasync_mem_htod_async(w.abort, abort.word, 4, abort.stream, errbuf, ERRLEN))
  abort.pending = true
end

-- The lowering waits first for a raise still in flight: landing after it, the raise would
-- abort the module's next launch.
function M.lower(w)
  if abort.pending and abort.generation == native.state.generation then
    native.check(C.cuasync_stream_synchronize(abort.stream, "lowering the watchdog's abort word", errbuf, ERRLEN))
  end
  abort.pending = false
  native.check(C.cuasync_mem_set8(w.abort, 0, 4, errbuf, ERRLEN))
  native.check(C.cuasync_mem_set8(w.claim, 0, 4, errbuf, ERRLEN))
  native.check(C.cuasync_mem_set8(w.first, 0, 8, errbuf, ERRLEN))
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
      if rc == 0 then M.lower(w) end
      error(err, 0)
    end
  end
  if rc ~= 0 then native.check(rc) end
  if settle then M.settled() end
end

return M
