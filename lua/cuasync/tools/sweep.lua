-- cuasync.sweep: a parameter sweep in one call. Every point of the cross product ends as a row:
-- measured (time, GB/s or TFLOP/s, ratio to the baseline, verified), pruned (why, before any
-- compile), failed (compile, build, launch, verification, hang) or skipped (why). Nothing is
-- dropped silently.
--   local S = cuasync.sweep{ name = "copy", params = { stages = {2, 4, 8}, chunk = {4096, 16384} },
--     where = function(p) return p.stages * p.chunk <= 200000, "does not fit" end,
--     program = function(p) return cuasync.program{...} end,     -- compiled in parallel workers
--     build = function(p) return { run = run, verify = fn, poison = fn, bytes = n, flops = f } end,
--                                  -- or nil, "why": a point that cannot run here (pruned)
--     baseline = { name = "cuMemcpyDtoD", run = fn, bytes = n }, rounds = 5, reps = 10, timeout_ms = 5000 }
--   S:run{ jobs = 8, gpus = "all" | {0, 1}, force = false, shard = "1/4" }
--   S:print()  S:csv(path)  S:json(path)  S:plot(path, { x = "stages", y = "GB/s", series = "chunk" })
--   S.rows, S.best
-- Parallel work re-runs the calling script in worker processes (CUASYNC_SWEEP_WORKER names their
-- task): `program` runs there and compiles into the shared disk cache; with several GPUs, one
-- worker per GPU builds and measures its share. A script must therefore reach S:run() without
-- side effects that matter (allocate GPU memory lazily, in build). Measured rows are kept in
-- $CUASYNC_CACHE_DIR/sweeps and not measured again unless force = true.
local ffi = require("ffi")
local device = require("cuasync.device")
local streams = require("cuasync.stream")
local watchdog = require("cuasync.watchdog")
local bench = require("cuasync.tools.bench")
local compiler = require("cuasync.compiler")
require("cuasync.cdef.event")
require("cuasync.cdef.loader")
local native = require("cuasync.native")
local util = require("cuasync.util")
local cache = require("cuasync.cache")
local report = require("cuasync.tools.report")
local nvtx = require("cuasync.tools.nvtx")
local store = require("cuasync.tools.sweep_store")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN
pcall(ffi.cdef, "int isatty(int fd);")

local M = {}
local Sweep = {}
Sweep.__index = Sweep

local FIELDS = { name = true, params = true, order = true, where = true, program = true, build = true,
                 baseline = true, rounds = true, reps = true, timeout_ms = true, unit = true, script = true,
                 host = true }
local WHERE = "sweep"
local function fail(msg) util.fail(WHERE, msg) end

local function is_scalar(v) return type(v) == "number" or type(v) == "string" or type(v) == "boolean" end

-- The script a worker re-runs: the first frame outside the library, and the arguments it got.
local function caller_script()
  local level = 3
  while true do
    local info = debug.getinfo(level, "S")
    if not info then return nil end
    local src = info.source
    if src:sub(1, 1) == "@" and not src:find("lua/cuasync/", 1, true) and not src:find("/cuasync/tools/", 1, true) then
      return src:sub(2)
    end
    level = level + 1
  end
end

function M.new(spec)
  util.kind(WHERE, "argument", spec, "table")
  util.known_fields(WHERE, spec, FIELDS)
  local S = setmetatable({}, Sweep)
  util.cstring(WHERE, "name", spec.name)
  if not spec.name:match("^[%w_%.%-]+$") then
    fail(("name must be letters, digits, '_', '.' or '-' (it names result files; got %s)"):format(util.describe(spec.name)))
  end
  S.name = spec.name
  util.kind(WHERE, "params", spec.params, "table")
  local names = {}
  for k, vs in pairs(spec.params) do
    if type(k) ~= "string" or not k:match("^[%a_][%w_]*$") then
      fail(("params key %s must be a name"):format(util.describe(k)))
    end
    util.list(WHERE, "params." .. k, vs)
    if #vs == 0 then fail(("params.%s is empty: the cross product has no point"):format(k)) end
    for i, v in ipairs(vs) do
      if not is_scalar(v) then fail(("params.%s[%d] must be a number, string or boolean (got %s)"):format(k, i, type(v))) end
    end
    names[#names + 1] = k
  end
  if #names == 0 then fail("params must name at least one parameter") end
  table.sort(names)
  if spec.order ~= nil then
    util.list(WHERE, "order", spec.order)
    local seen = {}
    for _, k in ipairs(spec.order) do
      if spec.params[k] == nil then fail(("order names %s, which is not in params"):format(util.describe(k))) end
      seen[k] = true
    end
    for _, k in ipairs(names) do if not seen[k] then fail(("order leaves out params.%s"):format(k)) end end
    names = spec.order
  end
  S.order, S.params = names, spec.params
  for _, f in ipairs({ "where", "program" }) do
    if spec[f] ~= nil then util.kind(WHERE, f, spec[f], "function") end
  end
  util.kind(WHERE, "build", spec.build, "function")
  S.where, S.program, S.build = spec.where, spec.program, spec.build
  if spec.baseline ~= nil then
    util.kind(WHERE, "baseline", spec.baseline, "table")
    util.known_fields(WHERE, spec.baseline, { name = true, run = true, bytes = true, flops = true }, "baseline")
    util.cstring(WHERE, "baseline.name", spec.baseline.name)
    util.kind(WHERE, "baseline.run", spec.baseline.run, "function")
  end
  S.baseline = spec.baseline
  S.baseline_name = spec.baseline and spec.baseline.name
  S.rounds = util.int_in(WHERE, "rounds", spec.rounds or 5, 1, 1000)
  S.reps = util.int_in(WHERE, "reps", spec.reps or 10, 1, 100000)
  S.timeout_ms = util.int_in(WHERE, "timeout_ms", spec.timeout_ms or 10000, 1, 3600 * 1000)
  if spec.unit ~= nil and spec.unit ~= "GB/s" and spec.unit ~= "TFLOP/s" then
    fail(('unit must be "GB/s" or "TFLOP/s" (got %s)'):format(util.describe(spec.unit)))
  end
  S.unit = spec.unit or "GB/s"
  -- host = true: run() is host work, timed with the host clock (no GPU needed: compile times, the
  -- CPU model, a reference implementation)
  if spec.host ~= nil and type(spec.host) ~= "boolean" then fail(("host must be a boolean (got %s)"):format(type(spec.host))) end
  S.host = spec.host == true
  S.script = spec.script or caller_script()
  S.args = {}
  for i = 1, #(arg or {}) do S.args[i] = arg[i] end
  S.rows = {}
  return S
end

-- Every point of the cross product, in order (the last parameter varies fastest).
function Sweep:points()
  local pts = { {} }
  for _, k in ipairs(self.order) do
    local nxt = {}
    for _, p in ipairs(pts) do
      for _, v in ipairs(self.params[k]) do
        local q = {}
        for kk, vv in pairs(p) do q[kk] = vv end
        q[k] = v
        nxt[#nxt + 1] = q
      end
    end
    pts = nxt
  end
  return pts
end

-- Replace a parameter's values (the command line's --param name=v1,v2).
function Sweep:set_param(name, values)
  if self.params[name] == nil then
    fail(("unknown param %s (params: %s)"):format(util.describe(name), table.concat(self.order, ", ")))
  end
  util.list(WHERE, "params." .. name, values)
  if #values == 0 then fail(("params.%s is empty: the cross product has no point"):format(name)) end
  self.params[name] = values
end

function Sweep:label(p) return self.name .. " " .. report.params_text(self.order, p) end

-- -- Progress -----------------------------------------------------------------------------------

local function tty() return ffi.C.isatty(2) == 1 end

local function progress(S, quiet)
  local t0 = C.cuasync_now_ns()
  local live = not quiet and tty()
  return function(what, n, m)
    if not live then return end
    local el = (C.cuasync_now_ns() - t0) / 1e9
    local eta = n > 0 and el / n * (m - n) or 0
    io.stderr:write(("\r%s %s %d/%d  %.1f s, ETA %.1f s   "):format(S.name, what, n, m, el, eta))
    if n == m then io.stderr:write("\n") end
  end
end

-- -- Workers ------------------------------------------------------------------------------------

local shell_quote = require("cuasync.tools.isolate").shell_quote

local function json() return report.json_lib() end

local function write_file(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local read_file = require("cuasync.toolkit").read_file

-- Run `tasks` (each { file = task file }) as workers re-running the script, all at once; each
-- writes a line to fd 3 per point done, which counts towards progress. Returns the workers' exit codes.
local function spawn(S, tasks, step)
  local parts = {}
  local lua = os.getenv("LUAJIT") or "luajit"
  local args = {}
  for _, a in ipairs(S.args) do args[#args + 1] = shell_quote(a) end
  for i, t in ipairs(tasks) do
    t.log = t.file .. ".log"
    -- the worker finds the modules where this process did
    parts[#parts + 1] = ("( CUASYNC_SWEEP_WORKER=%s LUA_PATH=%s LUA_CPATH=%s %s %s %s 3>&1 1>%s 2>&1; echo \"exit %d $?\" ) &"):format(
      shell_quote(t.file), shell_quote(package.path), shell_quote(package.cpath), lua, shell_quote(S.script),
      table.concat(args, " "), shell_quote(t.log), i)
  end
  local p = io.popen("sh -c " .. shell_quote(table.concat(parts, "\n") .. "\nwait"))
  local codes = {}
  for line in p:lines() do
    local w, rc = line:match("^exit (%d+) (%d+)$")
    if w then codes[tonumber(w)] = tonumber(rc) else step(line) end
  end
  p:close()
  return codes
end

local function worker_task()
  local file = os.getenv("CUASYNC_SWEEP_WORKER")
  if not file then return nil end
  local doc = json().decode(read_file(file) or "")
  if type(doc) ~= "table" then error("cuasync.sweep: worker task " .. file .. " is unreadable", 0) end
  return doc, file
end

local function tell(line)
  local f = io.open("/dev/fd/3", "w")
  if f then f:write(line, "\n"); f:close() end
end

-- -- Compiles ----------------------------------------------------------------------------------

-- An error's message without the position error() put in front of it (the row says where).
local function message(e)
  return (tostring(e):gsub("^[^\n]-%.lua:%d+: ", ""))
end


-- program(p) for a point, or nil and why (a cuasync.pipeline refusal prunes; other errors fail).
local function program_of(S, p)
  local ok, prog = pcall(S.program, p)
  if not ok then return nil, message(prog) end
  if type(prog) ~= "table" or type(prog.compile) ~= "function" then
    return nil, ("program(p) must return a cuasync.program (got %s)"):format(util.describe(prog))
  end
  return prog
end

local function compile_one(prog)
  local before = cache.stats.nvrtc
  local t0 = C.cuasync_now_ns()
  prog:compile()
  return (C.cuasync_now_ns() - t0) / 1e6, cache.stats.nvrtc > before and "miss" or "hit"
end

-- -- Rows -------------------------------------------------------------------------------------

local function row(S, index, p, kind, reason)
  return { index = index, params = p, kind = kind, reason = reason, label = S:label(p) }
end

-- A refusal from a pipeline plan or a launch rule prunes; anything else is a failure.
local function prunes(msg)
  msg = tostring(msg)
  return msg:find("cuasync%.pipeline[%.%w_]*: ") ~= nil
end

-- The build result's shape.
local function check_build(v)
  if type(v) ~= "table" then return ("build(p) must return a table { run = fn, verify = fn, bytes = n } (got %s)"):format(util.describe(v)) end
  if type(v.run) ~= "function" then return "build(p) returned no run function" end
  for _, f in ipairs({ "verify", "poison" }) do
    if v[f] ~= nil and type(v[f]) ~= "function" then return ("build(p).%s must be a function"):format(f) end
  end
  for _, f in ipairs({ "bytes", "flops" }) do
    if v[f] ~= nil and (type(v[f]) ~= "number" or v[f] < 0) then return ("build(p).%s must be a non-negative number"):format(f) end
  end
end

-- Interleaved rounds timed with the host clock: v.ms = the median over rounds of each round's median.
local function host_rounds(all, rounds, reps)
  for _, v in ipairs(all) do v.times = {} end
  for _ = 1, rounds do
    for _, v in ipairs(all) do
      local t = {}
      for k = 1, reps do
        local t0 = C.cuasync_now_ns()
        v.run()
        t[k] = (C.cuasync_now_ns() - t0) / 1e6
      end
      table.sort(t)
      v.times[#v.times + 1] = t[math.ceil(reps / 2)]
    end
  end
  for _, v in ipairs(all) do
    table.sort(v.times)
    v.ms = v.times[math.ceil(#v.times / 2)]
  end
end

-- Measure the points `indices` (into pts) on the current device: build, a verified run under
-- the timeout, then interleaved rounds with the baseline. Fills rows[index].
local function measure(S, pts, indices, rows, step, gpu)
  local variants = {}
  local blocked
  for _, i in ipairs(indices) do
    local p = pts[i]
    local r = rows[i]
    if blocked then
      r.kind, r.reason = "skipped", blocked
    else
      local ok, v, why_not = pcall(S.build, p)
      local bad = ok and v ~= nil and check_build(v)
      if ok and v == nil and why_not ~= nil then
        r.kind, r.reason = "pruned", message(why_not)   -- build(p) -> nil, "why": it cannot run here
      elseif ok and v == nil then
        r.kind, r.reason = "failed", check_build(v)
      elseif not ok then
        r.kind, r.reason = prunes(v) and "pruned" or "failed", (prunes(v) and "" or "build: ") .. message(v)
      elseif bad then
        r.kind, r.reason = "failed", bad
      else
        local ok2, err = pcall(function()
          if v.poison then v.poison() end
          nvtx.push(S:label(p))
          v.run()
          nvtx.pop()
          if not S.host then streams.synchronize{ timeout_ms = S.timeout_ms } end
        end)
        if not ok2 then
          r.kind = "failed"
          if watchdog.is_hang(err) then
            r.reason = "hang: " .. tostring(err)
          else
            r.reason = "run: " .. tostring(err)
            if tostring(err):find("still running after", 1, true) then
              blocked = ("the GPU is still busy with the hung variant #%d (no watchdog): not run"):format(i)
            elseif native.is_driver_error(err) and err.sticky then
              blocked = ("the CUDA context was lost at variant #%d: not run"):format(i)
            end
          end
        else
          local vok, vwhy = true, nil
          if v.verify then
            local ok3, res, why = pcall(v.verify)
            if not ok3 then vok, vwhy = false, tostring(res)
            elseif res == false then vok, vwhy = false, why or "verify returned false" end
          end
          if vok then
            r.verified = v.verify and true or nil
            variants[#variants + 1] = { label = r.label, run = v.run, times = {}, row = r, bytes = v.bytes, flops = v.flops,
                                        keep = v }
          else
            r.kind, r.reason = "failed", "verification: " .. tostring(vwhy)
          end
        end
      end
    end
    step()
  end
  -- interleaved rounds: the baseline and every verified variant, each launch inside its NVTX range
  local all = {}
  local base
  if S.baseline and #variants > 0 then
    base = { label = S.baseline.name, run = S.baseline.run, times = {} }
    all[1] = base
  end
  for _, v in ipairs(variants) do
    if nvtx.enabled() then
      local run, label, push, pop = v.run, v.label, nvtx.push, nvtx.pop
      v.run = function() push(label); run(); pop() end
    end
    all[#all + 1] = v
  end
  if #all > 0 then
    local ok, err
    if S.host then ok, err = pcall(host_rounds, all, S.rounds, S.reps)
    else ok, err = pcall(bench.rounds, all, { rounds = S.rounds, reps = S.reps }) end
    if not ok then
      for _, v in ipairs(variants) do v.row.kind, v.row.reason = "failed", "timing: " .. tostring(err) end
      return base
    end
  end
  if base then
    base.bytes, base.flops = S.baseline.bytes, S.baseline.flops
  end
  for _, v in ipairs(variants) do
    local r = v.row
    r.kind, r.ms, r.gpu = "measured", v.ms, gpu
    if v.bytes then r.gbps = v.bytes / (v.ms * 1e6) end
    if v.flops then r.tflops = v.flops / (v.ms * 1e9) end
    if base then r.ratio = base.ms / v.ms end
  end
  return base
end

-- -- run ----------------------------------------------------------------------------------------

local function parse_shard(s)
  if s == nil then return nil end
  local i, n
  if type(s) == "string" then i, n = s:match("^(%d+)/(%d+)$") i, n = tonumber(i), tonumber(n)
  elseif type(s) == "table" then i, n = s[1], s[2] end
  if not (util.is_integer(i) and util.is_integer(n) and n >= 1 and i >= 1 and i <= n) then
    fail(('shard must be "i/n" with 1 <= i <= n (got %s)'):format(util.describe(s)))
  end
  return i, n
end

local function gpu_list(g, available)
  if g == nil then return nil end
  if g == "all" then
    if not available then return nil end
    local n = device.count()
    local t = {}
    for i = 0, n - 1 do t[#t + 1] = i end
    return t
  end
  util.list(WHERE, "gpus", g)
  for i, d in ipairs(g) do util.int_in(WHERE, ("gpus[%d]"):format(i), d, 0, 63) end
  return g
end

function Sweep:run(o)
  o = o or {}
  util.kind(WHERE .. ".run", "argument", o, "table")
  util.known_fields(WHERE .. ".run", o, { jobs = true, gpus = true, force = true, shard = true, quiet = true })
  local jobs = util.int_in(WHERE .. ".run", "jobs", o.jobs or 4, 1, 256)
  local shard_i, shard_n = parse_shard(o.shard)
  local task = worker_task()
  local pts = self:points()
  local gpu_ok, why = device.available()
  local can_measure = gpu_ok or self.host

  -- a worker: compile or measure its share, report, and leave
  if task then
    if task.mode == "compile" then
      local out = {}
      for _, i in ipairs(task.indices) do
        local prog, err = program_of(self, pts[i])
        if prog then
          local ok, ms, hit = pcall(compile_one, prog)
          out[#out + 1] = ok and { index = i, ms = ms, cache = hit } or { index = i, error = tostring(ms) }
        else
          out[#out + 1] = { index = i, error = err }
        end
        tell("compiled " .. i)
      end
      write_file(task.out, json().encode(out))
    else
      if not self.host then device.open(task.gpu) end
      local rows = {}
      for _, i in ipairs(task.indices) do rows[i] = row(self, i, pts[i], "measured") end
      local base = measure(self, pts, task.indices, rows, function() tell("measured") end, task.gpu)
      local list = {}
      for _, i in ipairs(task.indices) do list[#list + 1] = rows[i] end
      write_file(task.out, json().encode({ rows = list, baseline = base and { name = base.label, ms = base.ms } or nil }))
    end
    os.exit(0)
  end

  local t0 = C.cuasync_now_ns()
  local rows = {}
  self.rows = rows
  local todo = {}
  -- prune, before any compile
  for i, p in ipairs(pts) do
    if shard_i and (i - 1) % shard_n ~= shard_i - 1 then
      -- another shard's point: not a row of this run
    else
      local r = row(self, i, p, "measured")
      rows[#rows + 1] = r
      local keep, reason = true, nil
      if self.where then
        local ok, res, why2 = pcall(self.where, p)
        if not ok then
          r.kind, r.reason = prunes(res) and "pruned" or "failed", (prunes(res) and "" or "where: ") .. message(res)
          keep = false
        elseif res == false or res == nil then
          keep, reason = false, why2 and message(why2) or "where(p) returned false"
          r.kind, r.reason = "pruned", reason
        end
      end
      if keep and self.program then
        local prog, err = program_of(self, p)
        if not prog then
          r.kind, r.reason = prunes(err) and "pruned" or "failed", (prunes(err) and "" or "program: ") .. err
          keep = false
        else
          r.prog = prog
        end
      end
      if keep then todo[#todo + 1] = r end
    end
  end
  if #rows == 0 then fail("the shard holds no point of the cross product") end

  -- the result cache: rows measured before on this device, driver and program
  local stored = store.load(WHERE .. ".run", self.name)
  local entries = stored.entries
  local device_key = self.host and "host" or "none"
  if gpu_ok and not self.host then
    local dev = device.open(0)
    device_key = store.device_key(dev)
    self.device_name = dev.name
  end
  local fresh = {}
  for _, r in ipairs(todo) do
    local digest = "-"
    if r.prog then
      local okk, key = pcall(compiler.key, r.prog, r.prog:arch())
      digest = okk and key or "-"
    end
    r.key = device_key .. "|" .. digest .. "|" .. report.params_text(self.order, r.params)
    local e = entries[r.key]
    if can_measure and e and not o.force then
      -- a stored entry brings figures, never the row's identity
      local index, params = r.index, r.params
      for k, v in pairs(e) do r[k] = v end
      r.index, r.params, r.cached = index, params, true
    else
      fresh[#fresh + 1] = r
    end
  end

  -- compile: worker processes share the disk cache; the main process then loads from it
  local step = progress(self, o.quiet)
  local with_prog = {}
  for _, r in ipairs(fresh) do if r.prog then with_prog[#with_prog + 1] = r end end
  local done = 0
  if #with_prog > 1 and jobs > 1 and self.script and os.getenv("CUASYNC_CACHE") ~= "0" and pcall(require, "dkjson") then
    local tasks = {}
    local n = math.min(jobs, #with_prog)
    for w = 1, n do tasks[w] = { indices = {}, file = os.tmpname() } end
    for k, r in ipairs(with_prog) do table.insert(tasks[(k - 1) % n + 1].indices, r.index) end
    for _, t in ipairs(tasks) do
      t.out = t.file .. ".out"
      write_file(t.file, json().encode({ mode = "compile", indices = t.indices, out = t.out }))
    end
    spawn(self, tasks, function() done = done + 1; step("compiled", done, #with_prog) end)
    local by_index = {}
    for _, t in ipairs(tasks) do
      local res = json().decode(read_file(t.out) or "[]") or {}
      for _, e in ipairs(res) do by_index[e.index] = e end
      os.remove(t.file); os.remove(t.out); os.remove(t.log)
    end
    for _, r in ipairs(with_prog) do
      local e = by_index[r.index]
      if e and e.ms then r.compile_ms, r.cache = e.ms, e.cache end
    end
  end
  done = 0
  for _, r in ipairs(with_prog) do
    local ok, ms, hit = pcall(compile_one, r.prog)
    if not ok then
      r.kind, r.reason = "failed", "compile: " .. tostring(ms)
    elseif not r.compile_ms then
      r.compile_ms, r.cache = ms, hit
    end
    done = done + 1
    step("compiled", done, #with_prog)
  end
  self.compile_s = (C.cuasync_now_ns() - t0) / 1e9

  -- measure
  local measure_rows = {}
  for _, r in ipairs(fresh) do if r.kind == "measured" then measure_rows[#measure_rows + 1] = r end end
  if not can_measure then
    for _, r in ipairs(measure_rows) do r.kind, r.reason = "skipped", "launches skipped: " .. why end
    self.skipped_launches = why
  else
    local gpus = (not self.host and gpu_list(o.gpus, gpu_ok)) or { 0 }
    local byi = {}
    for _, r in ipairs(measure_rows) do byi[r.index] = r end
    local indices = {}
    for _, r in ipairs(measure_rows) do indices[#indices + 1] = r.index end
    local mdone = 0
    local mstep = function() mdone = mdone + 1; step("measured", mdone, #indices) end
    if #gpus > 1 and #indices > 1 and self.script then
      local tasks = {}
      for w, g in ipairs(gpus) do tasks[w] = { indices = {}, file = os.tmpname(), gpu = g } end
      for k, i in ipairs(indices) do table.insert(tasks[(k - 1) % #gpus + 1].indices, i) end
      for _, t in ipairs(tasks) do
        t.out = t.file .. ".out"
        write_file(t.file, json().encode({ mode = "measure", indices = t.indices, out = t.out, gpu = t.gpu }))
      end
      local codes = spawn(self, tasks, mstep)
      for w, t in ipairs(tasks) do
        local doc = json().decode(read_file(t.out) or "") or {}
        local got = {}
        for _, wr in ipairs(doc.rows or {}) do
          local r = byi[wr.index]
          if r then
            for _, k in ipairs({ "kind", "reason", "ms", "gbps", "tflops", "ratio", "verified", "gpu" }) do r[k] = wr[k] end
            got[wr.index] = true
          end
        end
        if doc.baseline then self.baseline_row = self.baseline_row or doc.baseline end
        for _, i in ipairs(t.indices) do
          if not got[i] then
            byi[i].kind = "failed"
            byi[i].reason = ("the worker on GPU %d ended (exit %s) before measuring it: %s"):format(t.gpu,
              tostring(codes[w]), (read_file(t.log) or ""):sub(-300))
          end
        end
        os.remove(t.file); os.remove(t.out); os.remove(t.log)
      end
      self.gpus = gpus
    else
      if not self.host then device.open(gpus[1]) end
      local sub = {}
      for _, i in ipairs(indices) do sub[i] = byi[i] end
      local base = measure(self, pts, indices, sub, mstep, gpus[1])
      if base then self.baseline_row = { name = base.label, ms = base.ms } end
      self.gpus = not self.host and { gpus[1] } or nil
    end
    if self.baseline_row and self.baseline and self.baseline.bytes then
      self.baseline_row.gbps = self.baseline.bytes / (self.baseline_row.ms * 1e6)
    end
    -- keep what was measured, for the next run
    for _, r in ipairs(measure_rows) do
      if r.kind == "measured" and r.key then
        entries[r.key] = { kind = r.kind, ms = r.ms, gbps = r.gbps, tflops = r.tflops, ratio = r.ratio,
                           verified = r.verified, gpu = r.gpu, compile_ms = r.compile_ms, cache = r.cache,
                           params = r.params }
      end
    end
    -- this run's rows, measured now or taken from the store: what cuasync.sweep.best ranks
    local keys = {}
    for _, r in ipairs(todo) do
      if r.kind == "measured" and r.key and entries[r.key] then keys[#keys + 1] = r.key end
    end
    stored.runs[device_key] = { at = os.time(), keys = keys }
    store.save(self.name, stored)
  end
  for _, r in ipairs(rows) do r.prog, r.key, r.label = nil, nil, nil end
  self.best = nil
  for _, r in ipairs(rows) do
    if r.kind == "measured" and r.verified ~= false and report.figure(r)
       and (not self.best or report.figure(r) > report.figure(self.best)) then self.best = r end
  end
  self.wall_s = (C.cuasync_now_ns() - t0) / 1e9
  return self
end

function Sweep:text() return report.text(self) end
function Sweep:print()
  print(self:text())
  if self.skipped_launches then print("launches skipped: " .. self.skipped_launches) end
  return self
end
function Sweep:csv(path) return report.csv(self, path) end
function Sweep:json(path) return report.json(self, path) end
function Sweep:plot(path, o) return report.plot(self, path, o) end

-- Join the JSON files of shards (or of earlier runs) into one sweep's rows, by point index.
function M.merge(paths)
  util.list("sweep.merge", "paths", paths)
  if #paths == 0 then util.fail("sweep.merge", "no files to merge") end
  local S = setmetatable({ rows = {} }, Sweep)
  local seen = {}
  for _, path in ipairs(paths) do
    local doc = report.read_json(path)
    S.name, S.order, S.unit, S.device_name = S.name or doc.name, S.order or doc.order, S.unit or doc.unit,
      S.device_name or doc.device
    S.baseline_row = S.baseline_row or doc.baseline
    for _, r in ipairs(doc.rows) do
      if not seen[r.index] then seen[r.index] = true; S.rows[#S.rows + 1] = r end
    end
  end
  table.sort(S.rows, function(a, b) return a.index < b.index end)
  S.baseline_name = S.baseline_row and S.baseline_row.name
  for _, r in ipairs(S.rows) do
    if r.kind == "measured" and r.verified ~= false and report.figure(r)
       and (not S.best or report.figure(r) > report.figure(S.best)) then S.best = r end
  end
  return S
end

-- cuasync.sweep.best(name[, { device = dev }]) -> params, row | nil, why (tools/sweep_store.lua)
M.best = store.best

M.Sweep = Sweep
return setmetatable(M, { __call = function(_, spec) return M.new(spec) end })
