-- A timeline (model/timeline.lua) as Chrome / Perfetto trace-event JSON: open it at
-- ui.perfetto.dev (Open trace file) or in chrome://tracing. One process per SM, one thread per
-- track (a warp of a block); waits and ranges as complete events (X), issue, arm, release and
-- marks as thread instants (i), each copy's issue -> landed as a flow (s -> f). ts and dur are
-- microseconds (the format's unit) from T.t0, kept to the nanosecond.
--   perfetto.document(T) -> { traceEvents = { ... }, displayTimeUnit = "ns", otherData = { ... } }
--   perfetto.write(T, path) -> path     (raises "cuasync.trace.perfetto: <why>" where it cannot)
local util = require("cuasync.util")
local timeline = require("cuasync.model.timeline")
local fs = require("cuasync.fs")
local json = require("cuasync.json")

local M = {}

-- pid 0 and tid 0 stand for the idle task in Perfetto's model: SM n is pid PID_BASE + n, and a
-- track's tid is its index in T.tracks (from 1).
M.PID_BASE = 1000
local NO_SM = M.PID_BASE - 1

local function us(ns) return ns / 1000 end

local function pid_of(track) return tonumber(track.sm) and (M.PID_BASE + tonumber(track.sm)) or NO_SM end

-- An absolute time as decimal text: a 64-bit cdata prints with a ULL suffix, a number as %.0f.
local function decimal(t)
  if t == nil then return nil end
  if type(t) == "number" then return ("%.0f"):format(t) end
  return (tostring(t):gsub("[UuLl]+$", ""))
end

local function check(T) timeline.check(T, "trace.perfetto") end

function M.document(T)
  check(T)
  local ev = {}
  local function add(e) ev[#ev + 1] = e end
  -- names first: a process per SM, a thread per track (sort indices keep the blocks' order)
  local sms, seen = {}, {}
  for _, tr in ipairs(T.tracks) do
    local pid = pid_of(tr)
    if not seen[pid] then seen[pid] = true sms[#sms + 1] = { pid = pid, sm = tr.sm } end
  end
  table.sort(sms, function(a, b) return a.pid < b.pid end)
  for _, s in ipairs(sms) do
    add({ ph = "M", name = "process_name", pid = s.pid, args = { name = "SM " .. tostring(s.sm == nil and "?" or s.sm) } })
    add({ ph = "M", name = "process_sort_index", pid = s.pid, args = { sort_index = s.pid } })
  end
  for ti, tr in ipairs(T.tracks) do
    add({ ph = "M", name = "thread_name", pid = pid_of(tr), tid = ti, args = { name = tr.name } })
    add({ ph = "M", name = "thread_sort_index", pid = pid_of(tr), tid = ti, args = { sort_index = ti } })
  end
  -- slices before instants and flows: Perfetto binds a flow to the slice on top of its
  -- thread's stack when it reads the flow, and reads events of one time in file order
  for _, s in ipairs(T.spans) do
    local tr = T.tracks[s.track]
    add({ ph = "X", name = s.name, cat = s.kind, ts = us(s.t0), dur = us(s.t1 - s.t0), pid = pid_of(tr), tid = s.track,
          args = { barrier = s.barrier, stage = s.stage, parity = s.parity, iteration = s.iteration, role = s.role,
                   id = s.id, open = s.open } })
  end
  -- a landed copy's flow starts at its issue instant (the first one of that time: T.flows' from
  -- and issued) and finishes in the consumer wait that saw it land
  local function key(track, t, stage, it) return table.concat({ tostring(track), tostring(t), tostring(stage), tostring(it) }, "\0") end
  local function flow_name(f) return ("copy stage %s · it %s"):format(tostring(f.stage), tostring(f.iteration)) end
  local landed, started = {}, {}
  for _, f in ipairs(T.flows) do if f.landed then landed[key(f.from, f.issued, f.stage, f.iteration)] = f end end
  for _, x in ipairs(T.instants) do
    local tr = T.tracks[x.track]
    add({ ph = "i", s = "t", name = x.name, cat = x.kind, ts = us(x.t), pid = pid_of(tr), tid = x.track,
          args = { barrier = x.barrier, stage = x.stage, iteration = x.iteration, role = x.role, bytes = x.bytes, id = x.id } })
    local k = x.kind == "issue" and key(x.track, x.t, x.stage, x.iteration)
    local f = k and landed[k]
    if f and not started[f] then
      started[f] = #started + 1
      started[#started + 1] = f
      -- right after its issue instant, so that it binds to it
      add({ ph = "s", id = started[f], name = flow_name(f), cat = "copy", ts = us(x.t), pid = pid_of(tr), tid = x.track })
    end
  end
  for id, f in ipairs(started) do
    -- inside the consumer wait that saw the data land (bp = "e": bound to that enclosing slice);
    -- the landing is that wait's end, T.flows[i].landed
    add({ ph = "f", bp = "e", id = id, name = flow_name(f), cat = "copy", ts = us(f.asked + (f.landed - f.asked) / 2),
          pid = pid_of(T.tracks[f.to]), tid = f.to })
  end
  if #ev == 0 then   -- the format wants a list; an empty table would be written as {}
    add({ ph = "i", s = "g", name = "no events recorded", ts = 0 })
  end
  local other = { kernel = T.kernel and tostring(T.kernel), cap = T.cap, lost = T.lost, dropped = T.dropped,
                  duration_ns = T.duration, t0_ns = decimal(T.t0), t1_ns = decimal(T.t1) }
  if T.problems and #T.problems > 0 then other.problems = T.problems end
  return { traceEvents = ev, displayTimeUnit = "ns", otherData = other }
end

function M.write(T, path)
  util.cstring("trace.perfetto", "path", path)
  local ok, why = fs.write(path, json.encode(M.document(T)))
  if not ok then util.fail("trace.perfetto", why) end
  return path
end

return M
