-- The sweep's worker processes: parallel work re-runs the calling script (S.script, with its
-- arguments) with CUASYNC_SWEEP_WORKER set; the script reaches S:run, which serves the work and
-- exits. Compile workers are a pool that lives for the whole sweep (M.pool) and fills the shared
-- disk cache; measure workers (one per GPU, per batch, through isolate.spawn) build and time
-- their share, each writing a line to fd 3 per point done and its result as JSON.
local device = require("cuasync.device")
local isolate = require("cuasync.tools.isolate")
local fs = require("cuasync.fs")
local json = require("cuasync.tools.json")
local toolkit = require("cuasync.toolkit")
local runner = require("cuasync.tools.sweep.measure")
local row = require("cuasync.tools.sweep.row")
local stop = require("cuasync.tools.sweep.stop")
local method = require("cuasync.tools.sweep.method")

local ffi = require("ffi")

local M = {}

local function write_file(path, text)
  local ok, why = fs.write(path, text)
  if not ok then error("cuasync.sweep: " .. why, 0) end
end

-- The task this process serves, or nil in the main process.
function M.task()
  local file = os.getenv("CUASYNC_SWEEP_WORKER")
  if not file then return nil end
  local fifo = file:match("^pool:(.+)$")
  if fifo then return { mode = "pool", fifo = fifo } end
  local doc = json.decode_file(file)
  if type(doc) ~= "table" then error("cuasync.sweep: worker task " .. file .. " is unreadable", 0) end
  return doc
end

local function tell(line)
  fs.append("/dev/fd/3", line .. "\n")   -- progress only: a line lost costs a tick, never a row
end

-- Compile a task's points; say(line) after each.
local function compile_task(S, task, space, say)
  local out = {}
  for k, i in ipairs(task.indices) do
    local prog, err = runner.program_of(S, space:point(i))
    if prog then
      -- the arch the main process resolved: a worker never brings up the driver to learn it
      local ok, ms, hit = pcall(runner.compile_one, prog, task.archs and task.archs[k])
      out[#out + 1] = ok and { index = i, ms = ms, cache = hit } or { index = i, error = tostring(ms) }
    else
      out[#out + 1] = { index = i, error = err }
    end
    say("compiled " .. i)
  end
  write_file(task.out, json.encode(out))
end

-- Serve a task in a worker: compile or measure the points, write the result, exit. A pool
-- worker takes compile tasks from its stdin, one JSON line each, until the sweep closes it.
function M.serve(S, task, space)
  -- the terminal's Ctrl-C reaches the whole process group: a worker counts it (and cancels a
  -- watched kernel, as the main process does) instead of dying with its share half done; the
  -- rule of a second one inside a variant's code, or a third, is the main process's (stop.lua)
  stop.begin()
  S.result = S.result or { rows = {} }   -- a measure worker sends its notes back with its rows
  if task.mode == "pool" then
    local function say(line)   -- one short line per write: atomic in a FIFO
      fs.append(task.fifo, line .. "\n")
    end
    for line in io.stdin:lines() do
      local t = json.lib().decode(line)
      compile_task(S, t, space, say)
      say("done " .. t.worker)
    end
  else
    if not S.host then device.open(task.gpu) end
    local rows = {}
    method.apply(S, task.method)   -- the main process's rounds, warm-up, spread bar, rotate
    for k, i in ipairs(task.indices) do rows[k] = row.new(i, space:point(i)) end
    local base = runner.measure(S, rows, function() tell("measured") end, task.gpu, task.best_cost)
    write_file(task.out, json.encode({ rows = rows, baseline = base, notes = S.result.notes }))
  end
  os.exit(0)
end

-- Run one task per entry of `shares` ({ indices, gpu }), all at once; returns each task's
-- decoded result (or nil) and its log's tail, in order.
local function run(S, mode, shares, step, extra)
  local lua = os.getenv("LUAJIT") or "luajit"
  local jobs, tasks = {}, {}
  for w, share in ipairs(shares) do
    local file = os.tmpname()
    local t = { mode = mode, indices = share.indices, archs = share.archs, gpu = share.gpu, out = file .. ".out", best_cost = extra,
                method = method.of(S) }
    write_file(file, json.encode(t))
    tasks[w] = { file = file, out = t.out, log = file .. ".log" }
    local argv = { lua, S.script }
    for _, a in ipairs(S.args) do argv[#argv + 1] = a end
    -- the worker finds the modules where this process did
    jobs[w] = { argv = argv, log = tasks[w].log,
                env = { CUASYNC_SWEEP_WORKER = file, LUA_PATH = package.path, LUA_CPATH = package.cpath } }
  end
  local codes = isolate.spawn(jobs, step)
  local out = {}
  for w, t in ipairs(tasks) do
    out[w] = { doc = json.decode_file(t.out), code = codes[w], log = (toolkit.read_file(t.log) or ""):sub(-300) }
    os.remove(t.file); os.remove(t.out); os.remove(t.log)
  end
  return out
end

-- -- The compile pool: workers that live for the whole sweep ----------------------------------
-- Each reads tasks on its stdin and compiles them one after another (its NVRTC and precompiled
-- headers stay warm across batches); progress, "done" and, from the shell that ran it, "exit"
-- come back through one FIFO the main process holds open for reading and writing (so a read
-- never sees an end of file between messages).

pcall(ffi.cdef, "typedef void (*cuasync_sighandler)(int); cuasync_sighandler signal(int sig, cuasync_sighandler h);")
local SIGPIPE, SIG_IGN = 13, ffi.cast("cuasync_sighandler", 1)

function M.pool(S, n)
  local fifo = os.tmpname()
  os.remove(fifo)
  -- without its FIFO there is no pool: the main process compiles every point, and says so
  local function none(why)
    return { workers = {}, spawned = 0, deaths = { ("no compile workers (%s): the main process compiled every point"):format(why) } }
  end
  local ok, why = fs.mkfifo(fifo)
  if not ok then return none(why) end
  local reader, err = io.open(fifo, "r+")
  if not reader then os.remove(fifo) return none(tostring(err)) end
  -- a worker that died: its stdin refuses the write with EPIPE instead of killing this process
  local P = { fifo = fifo, reader = reader, workers = {}, spawned = 0, deaths = {}, sigpipe = ffi.C.signal(SIGPIPE, SIG_IGN) }
  local lua = os.getenv("LUAJIT") or "luajit"
  local env = { CUASYNC_SWEEP_WORKER = "pool:" .. fifo, LUA_PATH = package.path, LUA_CPATH = package.cpath }
  local keys, prefix = { "CUASYNC_SWEEP_WORKER", "LUA_CPATH", "LUA_PATH" }, {}
  for _, k in ipairs(keys) do prefix[#prefix + 1] = k .. "=" .. isolate.shell_quote(env[k]) end
  for w = 1, n do
    local argv = { isolate.shell_quote(lua), isolate.shell_quote(S.script) }
    for _, a in ipairs(S.args) do argv[#argv + 1] = isolate.shell_quote(a) end
    local log = ("%s.%d.log"):format(fifo, w)
    local cmd = ("( env %s %s >%s 2>&1; echo \"exit %d $?\" >>%s )"):format(table.concat(prefix, " "), table.concat(argv, " "),
      isolate.shell_quote(log), w, isolate.shell_quote(fifo))
    local pipe = isolate.pipe_writer(cmd)
    P.workers[w] = { pipe = pipe, log = log, alive = pipe ~= nil }
    P.spawned = P.spawned + 1
  end
  return P
end

-- Compile rows (each with r.prog) on the pool's live workers; sets r.compile_ms and r.cache
-- where a worker compiled it (the main process then loads every program from the disk cache).
function M.pool_compile(P, rows, step)
  local live = {}
  for w, k in ipairs(P.workers) do if k.alive then live[#live + 1] = w end end
  if #live == 0 then return end
  local tasks, pending = {}, 0
  for k, r in ipairs(rows) do
    local w = live[(k - 1) % #live + 1]
    local t = tasks[w] or { indices = {}, archs = {}, worker = w, out = ("%s.%d.out"):format(P.fifo, w) }
    tasks[w] = t
    t.indices[#t.indices + 1] = r.index
    t.archs[#t.archs + 1] = r.prog:arch()
  end
  for w, t in pairs(tasks) do
    local ok = P.workers[w].pipe:write(json.encode(t), "\n")
    if ok then ok = P.workers[w].pipe:flush() end
    if ok then pending = pending + 1 else P.workers[w].alive, tasks[w] = false, nil end
  end
  local by = {}
  while pending > 0 do
    local line, why = P.reader:read("*l")
    if not line then
      P.deaths[#P.deaths + 1] = ("the compile pool's FIFO stopped answering (%s); the main process compiled the rest"):format(tostring(why or "end of file"))
      break
    end
    local w = tonumber(line:match("^done (%d+)$"))
    local dead, code = line:match("^exit (%d+) (%d+)$")
    dead = tonumber(dead)
    if line:match("^compiled ") then step()
    elseif w and tasks[w] then
      for _, e in ipairs(json.decode_file(tasks[w].out) or {}) do by[e.index] = e end
      os.remove(tasks[w].out)
      tasks[w], pending = nil, pending - 1
    elseif dead then   -- its rows get compiled by the main process, as any the pool missed
      P.workers[dead].alive = false
      local log = (toolkit.read_file(P.workers[dead].log) or ""):gsub("%s+$", "")
      P.deaths[#P.deaths + 1] = ("compile worker %d ended (exit %s) during a batch; the main process compiled its points: %s"):format(
        dead, code, log:sub(-300))
      if tasks[dead] then tasks[dead], pending = nil, pending - 1 end
    end
  end
  for _, r in ipairs(rows) do
    local e = by[r.index]
    if e and e.ms then r.compile_ms, r.cache = e.ms, e.cache end
  end
end

-- End the pool: each worker's stdin closes, it leaves its loop and exits.
function M.pool_close(P)
  if not (P and P.reader) then return end
  for _, k in ipairs(P.workers) do
    if k.pipe then k.pipe:close(); k.pipe = nil end
    os.remove(k.log)
  end
  P.reader:close()
  os.remove(P.fifo)
  ffi.C.signal(SIGPIPE, P.sigpipe)
end

-- Measure rows on several GPUs, one worker each. Returns the first worker's baseline row.
function M.measure(S, rows, gpus, step, best_cost)
  local shares, by = {}, {}
  for w, g in ipairs(gpus) do shares[w] = { indices = {}, gpu = g } end
  for k, r in ipairs(rows) do
    table.insert(shares[(k - 1) % #gpus + 1].indices, r.index)
    by[r.index] = r
  end
  local base
  for w, res in ipairs(run(S, "measure", shares, step, best_cost)) do
    local doc, got = type(res.doc) == "table" and res.doc or {}, {}
    for _, wr in ipairs(doc.rows or {}) do
      local r = by[wr.index]
      if r then
        row.copy(r, wr, "measure")
        got[wr.index] = true
      end
    end
    base = base or doc.baseline
    for _, n in ipairs(type(doc.notes) == "table" and doc.notes or {}) do   -- NVML, the ceiling, rotate: each said once
      if type(n) == "string" then runner.note(S, ("GPU %d: %s"):format(shares[w].gpu, n)) end
    end
    for _, i in ipairs(shares[w].indices) do
      if not got[i] then
        row.set(by[i], "failed", ("the worker on GPU %d ended (exit %s) before measuring it: %s"):format(shares[w].gpu, tostring(res.code), res.log), "worker")
      end
    end
  end
  return base
end

return M
