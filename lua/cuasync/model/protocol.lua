-- The protocol checker: roles run as Lua coroutines against model mbarriers; a scheduler picks
-- which role acts next, and when each asynchronous copy lands, exploring interleavings.
--   local r = cuasync.model.run{
--     barriers = { full = { count = 1, n = 4 }, empty = { count = 4, n = 4 }, done = 1 },
--     roles = { producer = function(t) ... end, consumer = { function(t, i) ... end, n = 4 } },
--     explore = "random", seed = 7, runs = 200,        -- or explore = "exhaustive", bound = 5000
--     async = { pieces = 2 },                          -- a bulk copy lands in up to 2 parts
--   }
--   r.ok, r.kind ("deadlock" | "tx_overflow" | "over_arrival" | "parity_aliasing" |
--   "early_completion" (a copy landed after its phase completed: armed with too few bytes) |
--   "race" (a read of a stage with a cp.async still landing in it) | "stale" (a read of a stage
--   last filled for another iteration) | "error" | "step_limit"), r.message, r.role, r.barrier, r.timeline[role], r.barriers[name], r:report()
--   exhaustive: r.complete (every interleaving ran; false when the bound stopped it: r.ok then
--   only says no fault was found, and the report says "incomplete")
-- Inside a role, t is the role's handle: t.bar.full[0] (arrays count from 0, as on the device),
-- t:arrive(b[, n[, phase]]) t:arrive_drop(b[, n]) t:expect_tx(b, bytes) t:complete_tx(b, bytes)
-- t:arrive_expect_tx(b, bytes[, n]) t:bulk(bytes, b) (lands later) t:wait_parity(b, parity[, phase])
-- t:wait(b, token) t:note(text), and per-thread copies (model/async_copies.lua): t:cp_async(bytes,
-- stage[, iteration]) t:commit_group() t:wait_group(n) t:cp_async_arrive(b[, n[, noinc]])
-- t:read(stage[, iteration]); a read of a stage with a copy still landing there is a "race", one
-- whose copies were for another iteration is "stale". Every call is a step the scheduler orders. A wait may name the
-- phase it means (the phase number whose completion it waits for; -1 is the one before init);
-- without it, the role's next phase of that barrier is assumed. A wait that passes on any other
-- phase, or is overtaken by two phases, is parity aliasing. An arrive that names its phase and
-- finds the barrier past it is an over-arrival (the phase completed without it). Pure Lua.
local util = require("cuasync.util")
local mbarrier = require("cuasync.model.mbarrier")
local copies = require("cuasync.model.async_copies")

local M = {}
local WHERE = "model.run"
local function fail(msg) util.fail(WHERE, msg) end

local FIELDS = { barriers = true, roles = true, explore = true, seed = true, runs = true, bound = true,
                 async = true, max_steps = true }

-- Park-Miller: exact in doubles, so a seed replays the same interleavings everywhere.
local function rng(seed)
  local x = seed % 2147483646 + 1
  return function(n)
    x = x * 16807 % 2147483647
    return x % n + 1
  end
end

local function check_spec(o)
  util.kind(WHERE, "argument", o, "table")
  util.known_fields(WHERE, o, FIELDS)
  util.kind(WHERE, "barriers", o.barriers, "table")
  local bars = {}
  for name, b in pairs(o.barriers) do
    if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
      fail(("barriers key %s must be a name (a Lua identifier)"):format(util.describe(name)))
    end
    if type(b) == "number" then
      util.int_in(WHERE, ("barriers.%s (an arrival count)"):format(name), b, 1, mbarrier.MAX_COUNT)
      bars[#bars + 1] = { name = name, count = b }
    elseif type(b) == "table" then
      util.known_fields(WHERE, b, { count = true, n = true }, "barriers." .. name)
      util.int_in(WHERE, ("barriers.%s.count"):format(name), b.count, 1, mbarrier.MAX_COUNT)
      util.int_in(WHERE, ("barriers.%s.n"):format(name), b.n, 1, 4096)
      bars[#bars + 1] = { name = name, count = b.count, n = b.n }
    else
      fail(("barriers.%s must be an arrival count or { count = c, n = barriers } (got %s)"):format(name, type(b)))
    end
  end
  if #bars == 0 then fail("barriers must name at least one barrier") end
  table.sort(bars, function(a, b) return a.name < b.name end)
  util.kind(WHERE, "roles", o.roles, "table")
  local roles = {}
  for name, r in pairs(o.roles) do
    if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
      fail(("roles key %s must be a name (a Lua identifier)"):format(util.describe(name)))
    end
    if type(r) == "function" then
      roles[#roles + 1] = { name = name, fn = r }
    elseif type(r) == "table" then
      if type(r[1]) ~= "function" then fail(("roles.%s must be a function or { fn, n = count }"):format(name)) end
      util.known_fields(WHERE, r, { [1] = true, n = true }, "roles." .. name)
      util.int_in(WHERE, ("roles.%s.n"):format(name), r.n, 1, 1024)
      for i = 0, r.n - 1 do roles[#roles + 1] = { name = ("%s[%d]"):format(name, i), fn = r[1], index = i } end
    else
      fail(("roles.%s must be a function or { fn, n = count } (got %s)"):format(name, type(r)))
    end
  end
  if #roles == 0 then fail("roles must name at least one role") end
  table.sort(roles, function(a, b) return a.name < b.name end)
  local explore = o.explore or "random"
  if explore ~= "random" and explore ~= "exhaustive" then
    fail(('explore must be "random" or "exhaustive" (got %s)'):format(util.describe(explore)))
  end
  local pieces = 1
  if o.async ~= nil then
    util.kind(WHERE, "async", o.async, "table")
    util.known_fields(WHERE, o.async, { pieces = true }, "async")
    pieces = util.int_in(WHERE, "async.pieces", o.async.pieces or 1, 1, 64)
  end
  return {
    bars = bars, roles = roles, explore = explore, pieces = pieces,
    seed = util.int_in(WHERE, "seed", o.seed or 1, 0, 2 ^ 31),
    runs = util.int_in(WHERE, "runs", o.runs or 100, 1, 100000),
    bound = util.int_in(WHERE, "bound", o.bound or 2000, 1, 100000),
    max_steps = util.int_in(WHERE, "max_steps", o.max_steps or 1e6, 1, 1e7),
  }
end

local function fresh_barriers(spec)
  local bar, all = {}, {}
  for _, b in ipairs(spec.bars) do
    if b.n then
      local arr = {}
      for i = 0, b.n - 1 do
        arr[i] = mbarrier.new(b.count, ("%s[%d]"):format(b.name, i))
        all[#all + 1] = arr[i]
      end
      bar[b.name] = arr
    else
      bar[b.name] = mbarrier.new(b.count, b.name)
      all[#all + 1] = bar[b.name]
    end
  end
  return bar, all
end

-- A fault found during a run: raised through the scheduler as a table, turned into the result.
local Fault = {}
local function fault(kind, role, barrier, msg)
  error(setmetatable({ kind = kind, role = role, barrier = barrier, message = msg }, Fault), 0)
end

local Role = {}
Role.__index = Role
local function step(self, action) return coroutine.yield(action) end
function Role:arrive(b, n, phase) return step(self, { op = "arrive", b = b, n = n or 1, phase = phase }) end
function Role:arrive_drop(b, n) return step(self, { op = "arrive_drop", b = b, n = n or 1 }) end
function Role:expect_tx(b, bytes) return step(self, { op = "expect_tx", b = b, bytes = bytes }) end
function Role:complete_tx(b, bytes) return step(self, { op = "complete_tx", b = b, bytes = bytes }) end
function Role:arrive_expect_tx(b, bytes, n) return step(self, { op = "arrive_expect_tx", b = b, bytes = bytes, n = n or 1 }) end
function Role:bulk(bytes, b) return step(self, { op = "bulk", b = b, bytes = bytes }) end
function Role:wait_parity(b, parity, phase) return step(self, { op = "wait_parity", b = b, parity = parity, phase = phase }) end
function Role:wait(b, token) return step(self, { op = "wait", b = b, token = token }) end
function Role:cp_async(bytes, stage, iteration) return step(self, { op = "cp_async", bytes = bytes, stage = stage, iteration = iteration }) end
function Role:commit_group() return step(self, { op = "commit_group" }) end
function Role:wait_group(n) return step(self, { op = "wait_group", n = n }) end
function Role:cp_async_arrive(b, n, noinc) return step(self, { op = "cp_async_arrive", b = b, n = n or 1, noinc = noinc == true }) end
function Role:read(stage, iteration) return step(self, { op = "read", stage = stage, iteration = iteration }) end
function Role:note(text) self.log[#self.log + 1] = ("step %d: %s"):format(self.run.steps, tostring(text)) end

local function bar_check(role, a, what)
  if getmetatable(a.b) ~= mbarrier.Barrier then
    fault("error", role.name, nil, ("%s: %s's barrier argument is not a barrier of this run (got %s)"):format(
          role.name, what, util.describe(a.b)))
  end
  -- one made elsewhere (cuasync.model.mbarrier(n), or another run's) is in no state this run reports
  if not role.run.owned[a.b] then
    fault("error", role.name, nil, ("%s: %s's barrier %s was not made by this run: use t.bar.NAME (the barriers of the spec)"):format(
          role.name, what, a.b.name or "(unnamed)"))
  end
  if a.phase ~= nil and not util.is_integer(a.phase) then
    fault("error", role.name, a.b.name, ("%s: %s's phase must be an integer (got %s)"):format(role.name, what, util.describe(a.phase)))
  end
end

-- Is the role's pending action enabled now? (Only waits can be disabled.)
local BARRIERLESS = { cp_async = true, commit_group = true, wait_group = true, read = true }

local function enabled(role, a)
  if a.op == "wait_parity" then return a.b.phase % 2 ~= a.parity end
  if a.op == "wait_group" then return copies.wait_enabled(role, a) end
  if a.op == "wait" then return (a.b:test_wait(a.token)) end
  return true
end

-- The phase a wait means: given, or the role's next one on that barrier.
local function intended(role, a)
  if a.phase then return a.phase end
  local last = role.seen[a.b]
  if last == nil then return a.parity == 1 and -1 or 0 end
  return last + 1
end

local function check_tx(role, b, what, delta)
  local tx = b.tx + delta
  if tx > mbarrier.MAX_TX or tx < -mbarrier.MAX_TX then
    fault("tx_overflow", role, b.name, ("%s: %s on %s takes tx-count to %d, outside -(2^20-1)..2^20-1 (%s)"):format(
          role, what, b.name, tx, b:state()))
  end
end

local function check_arrivals(role, b, what, n)
  if n > b.pending then
    fault("over_arrival", role, b.name, ("%s: %s on %s brings %d arrival%s with %d pending (%s): more arrivals than pending is undefined in PTX"):format(
          role, what, b.name, n, n == 1 and "" or "s", b.pending, b:state()))
  end
end

-- Perform a role's action (it is enabled). Returns the value handed back to the role.
local function perform(run, role, a)
  if a.op == "cp_async" then return nil, copies.issue(run, role, a) end
  if a.op == "commit_group" then return nil, copies.commit(role) end
  if a.op == "wait_group" then return nil, copies.wait_done(role, a) end
  if a.op == "read" then return nil, copies.read(run, role, a, fault) end
  local b = a.b
  local before = b:state()
  local name = role.name
  local ret, text
  if a.op == "cp_async_arrive" then
    if not a.noinc and b.pending + a.n > mbarrier.MAX_COUNT then
      fault("over_arrival", name, b.name, ("%s: cp.async.mbarrier.arrive raises %s's pending count past 2^20-1 (%s)"):format(name, b.name, b:state()))
    end
    return nil, copies.arrive_later(run, role, a)
  elseif a.op == "arrive" or a.op == "arrive_drop" then
    check_arrivals(name, b, a.op, a.n)
    if a.phase and a.phase ~= b.phase then
      fault("over_arrival", name, b.name, ("%s: arrives on %s for phase %d but the barrier is at phase %d (%s): %s"):format(
            name, b.name, a.phase, b.phase, b:state(), a.phase < b.phase
              and ("phase %d completed without this arrival: the barrier gets more arrivals per phase than its count %d"):format(a.phase, b.expected)
              or "an arrival for a phase that has not begun"))
    end
    ret = b[a.op](b, a.n)
    text = ("%s%s %s"):format(a.op, a.n ~= 1 and ("(" .. a.n .. ")") or "", b.name)
  elseif a.op == "arrive_expect_tx" then
    check_arrivals(name, b, a.op, a.n)
    check_tx(name, b, ("arrive_expect_tx(%d)"):format(a.bytes), a.bytes)
    ret = b:arrive_expect_tx(a.bytes, a.n)
    text = ("arrive_expect_tx(%d) %s"):format(a.bytes, b.name)
  elseif a.op == "expect_tx" or a.op == "complete_tx" then
    check_tx(name, b, ("%s(%d)"):format(a.op, a.bytes), a.op == "expect_tx" and a.bytes or -a.bytes)
    b[a.op](b, a.bytes)
    text = ("%s(%d) %s"):format(a.op, a.bytes, b.name)
  elseif a.op == "bulk" then
    local parts = run.spec.pieces
    local left = a.bytes
    for p = parts, 1, -1 do
      local piece = p == 1 and left or math.floor(left / p / 16) * 16
      if piece > 0 then
        run.inflight[#run.inflight + 1] = { bytes = piece, b = b, from = name, id = run.steps, phase = b.phase }
        left = left - piece
      end
    end
    return nil, ("bulk copy of %d bytes issued on %s"):format(a.bytes, b.name)
  elseif a.op == "wait_parity" then
    local want = intended(role, a)
    local q = b.phase - 1
    if q ~= want then
      fault("parity_aliasing", name, b.name, ("%s: wait on %s for parity %d passed at phase %d, %s, but it meant phase %d (%s)"):format(
            name, b.name, a.parity, b.phase, q < 0 and "on the fresh barrier's phase before 0" or ("completing phase " .. q), want, q < want
              and "the phase it means has not completed: the parity names an older one"
              or "the barrier moved two or more phases past it: the parity names a later one"))
    end
    role.seen[b] = q
    return nil, q < 0 and ("wait %s parity %d passed (a fresh barrier: the phase before phase 0)"):format(b.name, a.parity)
      or ("wait %s parity %d passed (phase %d completed)"):format(b.name, a.parity, q)
  elseif a.op == "wait" then
    local done, aliased = b:test_wait(a.token)
    if aliased then
      fault("parity_aliasing", name, b.name, ("%s: its token of %s is from phase %d but the barrier is at phase %d: overtaken by two phases, test_wait reads the parity only"):format(
            name, b.name, a.token.phase, b.phase))
    end
    role.seen[b] = a.token.phase
    return nil, ("wait %s token of phase %d passed"):format(b.name, a.token.phase)
  else
    fault("error", name, nil, ("%s: unknown action %s"):format(name, tostring(a.op)))
  end
  return ret, ("%s: %s -> %s%s"):format(text, before, b:state(), b.completed and " (phase completed)" or "")
end

local function resume(run, role, value)
  -- the first resume hands the role its handle; later ones hand back the step's result only
  local ok, action
  if role.started then
    ok, action = coroutine.resume(role.co, value)
  else
    role.started = true
    ok, action = coroutine.resume(role.co, role)
  end
  if not ok then
    if getmetatable(action) == Fault then error(action, 0) end
    fault("error", role.name, nil, ("%s raised: %s"):format(role.name, tostring(action)))
  end
  if coroutine.status(role.co) == "dead" then
    role.done = true
    role.action = nil
    role.log[#role.log + 1] = ("step %d: finished"):format(run.steps)
    return
  end
  if type(action) ~= "table" or not action.op then
    fault("error", role.name, nil, ("%s yielded %s: roles act only through t's methods"):format(role.name, util.describe(action)))
  end
  if BARRIERLESS[action.op] then
    if action.op == "wait_group" and (not util.is_integer(action.n) or action.n < 0) then
      fault("error", role.name, nil, ("%s: wait_group's n must be a non-negative integer (got %s)"):format(role.name, util.describe(action.n)))
    end
    if (action.op == "cp_async" or action.op == "read") and type(action.stage) ~= "string" then
      fault("error", role.name, nil, ("%s: %s needs a stage name (got %s)"):format(role.name, action.op, util.describe(action.stage)))
    end
    role.action = action
    return
  end
  bar_check(role, action, action.op)
  if action.op == "wait" and (getmetatable(action.token) ~= mbarrier.Token or action.token.barrier ~= action.b) then
    fault("error", role.name, action.b.name, ("%s: wait on %s needs a token from that barrier's arrive (got %s)"):format(
          role.name, action.b.name, util.describe(action.token)))
  end
  if (action.op == "arrive" or action.op == "arrive_drop" or action.op == "arrive_expect_tx" or action.op == "cp_async_arrive")
     and (not util.is_integer(action.n) or action.n < 1) then
    fault("error", role.name, nil, ("%s: %s count must be a positive integer (got %s)"):format(role.name, action.op, util.describe(action.n)))
  end
  if action.bytes ~= nil and (not util.is_integer(action.bytes) or action.bytes < 0) then
    fault("error", role.name, nil, ("%s: %s bytes must be a non-negative integer (got %s)"):format(role.name, action.op, util.describe(action.bytes)))
  end
  if action.op == "wait_parity" and action.parity ~= 0 and action.parity ~= 1 then
    fault("error", role.name, nil, ("%s: wait_parity's parity must be 0 or 1 (got %s)"):format(role.name, util.describe(action.parity)))
  end
  role.action = action
end

-- A waiter whose phase completed and was then overtaken (the barrier moved on by two phases).
local function overtaken(role)
  local a = role.action
  if a.op ~= "wait_parity" then return end
  local want = intended(role, a)
  if a.b.phase >= want + 2 then
    fault("parity_aliasing", role.name, a.b.name, ("%s: waits on %s for parity %d meaning phase %d, but the barrier is already at phase %d: overtaken by two phases, the parity no longer names phase %d"):format(
          role.name, a.b.name, a.parity, want, a.b.phase, want))
  end
end

local function describe_wait(a)
  if a.op == "wait_group" then return ("waits for its cp.async groups (wait_group %d)"):format(a.n) end
  if a.op == "wait_parity" then
    return ("waits on %s for parity %d (%s)"):format(a.b.name, a.parity, a.b:state())
  end
  return ("waits on %s for its token of phase %d (%s)"):format(a.b.name, a.token.phase, a.b:state())
end

-- One run. choose(n) picks 1..n. Returns nil on success, or the fault (with the run's state).
local function one_run(spec, choose)
  local bar, all = fresh_barriers(spec)
  local run = { spec = spec, steps = 0, inflight = {}, owned = {} }
  for _, b in ipairs(all) do run.owned[b] = true end
  local roles = {}
  for i, r in ipairs(spec.roles) do
    local role = setmetatable({ name = r.name, index = r.index, bar = bar, run = run, log = {}, seen = {} }, Role)
    local fn, index = r.fn, r.index
    role.co = coroutine.create(function(t) return fn(t, index) end)
    roles[i] = role
  end
  local ok, err = pcall(function()
    for _, role in ipairs(roles) do resume(run, role) end
    while true do
      local options = {}
      local live = false
      for _, role in ipairs(roles) do
        if not role.done then
          live = true
          overtaken(role)
          if enabled(role, role.action) then options[#options + 1] = role end
        end
      end
      -- per-thread copies land late: in random exploration they are offered only when no role
      -- can act, or one time in four (so that reads racing them are found); exhaustive offers all
      local offer_late = spec.explore ~= "random" or #options == 0 or choose(4) == 1
      for _, f in ipairs(run.inflight) do
        if (not f.kind or offer_late) and copies.can_land(run, f) then options[#options + 1] = f end
      end
      if #options == 0 then
        if not live then return end
        -- name the barrier most likely at fault: one left with tx bytes, else one that got only
        -- part of its arrivals, else the first wait
        local lines, first, rank = {}, nil, 0
        local groups, order = {}, {}
        for _, role in ipairs(roles) do
          if not role.done then
            local b = role.action.b
            local r = not b and 0 or b.tx ~= 0 and 3 or (b.pending < b.expected and 2 or 1)
            if r > rank or not first then first, rank = role, r end
            local w = describe_wait(role.action)
            if not groups[w] then groups[w] = {}; order[#order + 1] = w end
            table.insert(groups[w], role.name)
            role.log[#role.log + 1] = ("step %d: blocked: %s"):format(run.steps, w)
          end
        end
        for _, w in ipairs(order) do
          local names = groups[w]
          lines[#lines + 1] = ("%s %s %s"):format(table.concat(names, ", "), #names == 1 and w or w:gsub("^waits", "wait"), "")
          lines[#lines] = lines[#lines]:gsub(" $", "")
        end
        local b = first.action.b
        local why
        if not b then
          why = ("%s waits for cp.async groups that no copy in flight will complete"):format(first.name)
        elseif b.pending == 0 and b.tx < 0 then
          why = ("%s has all its arrivals but its copies brought %d bytes more than the phase was armed with (expect_tx too small)"):format(b.name, -b.tx)
        elseif b.pending == 0 and b.tx > 0 then
          why = ("%s has all its arrivals but still expects %d bytes that no copy will bring (expect_tx too large, or a copy missing)"):format(b.name, b.tx)
        elseif b.pending < b.expected then
          why = ("%s got %d of its %d arrivals and no role that could bring the rest is running"):format(b.name,
                b.expected - b.pending, b.expected)
        else
          why = ("%s got no arrival in phase %d: whoever signals it is blocked or gone"):format(b.name, b.phase)
        end
        fault("deadlock", first.name, b and b.name, ("deadlock at step %d: %s. %s"):format(run.steps,
              table.concat(lines, "; "), why))
      end
      run.steps = run.steps + 1
      if run.steps > spec.max_steps then
        fault("step_limit", nil, nil, ("no end after %d steps (max_steps)"):format(spec.max_steps))
      end
      local pick = options[choose(#options)]
      if pick.co then
        local value, text = perform(run, pick, pick.action)
        pick.log[#pick.log + 1] = ("step %d: %s"):format(run.steps, text)
        resume(run, pick, value)
      elseif pick.kind then   -- a per-thread copy, or the arrival its copies trigger
        for i, f in ipairs(run.inflight) do
          if f == pick then table.remove(run.inflight, i) break end
        end
        local owner_log = pick.owner.log
        owner_log[#owner_log + 1] = ("step %d: %s"):format(run.steps, copies.land(run, pick, check_arrivals))
      else
        for i, f in ipairs(run.inflight) do
          if f == pick then table.remove(run.inflight, i) break end
        end
        local b = pick.b
        local before = b:state()
        if b.phase ~= pick.phase then
          fault("early_completion", pick.from, b.name, ("a copy of %d bytes that %s issued in phase %d of %s landed in phase %d: the phase completed before all its bytes arrived (it was armed with fewer bytes than its copies bring; its consumers read a stage still being written)"):format(
                pick.bytes, pick.from, pick.phase, b.name, b.phase))
        end
        check_tx("the copy of " .. pick.from, b, ("complete_tx(%d)"):format(pick.bytes), -pick.bytes)
        b:complete_tx(pick.bytes)
        local owner = nil
        for _, role in ipairs(roles) do if role.name == pick.from then owner = role end end
        if owner then
          owner.log[#owner.log + 1] = ("step %d: its copy landed: complete_tx(%d) %s: %s -> %s%s"):format(run.steps,
            pick.bytes, b.name, before, b:state(), b.completed and " (phase completed)" or "")
        end
      end
    end
  end)
  if ok then return nil end
  if getmetatable(err) ~= Fault then error(err, 0) end
  err.steps = run.steps
  err.timeline, err.barriers, err.order = {}, {}, {}
  for _, role in ipairs(roles) do
    err.timeline[role.name] = role.log
    err.order[#err.order + 1] = role.name
  end
  for _, b in ipairs(all) do err.barriers[b.name] = b:state() end
  err.barrier_order = {}
  for _, b in ipairs(all) do err.barrier_order[#err.barrier_order + 1] = b.name end
  return err
end

local Result = {}
Result.__index = Result

-- The counterexample in words: the fault, each role's last steps (ending at its blocking wait),
-- and every barrier's state. `tail` limits the steps shown per role (default 8).
function Result:report(tail)
  if self.ok and self.complete == false then   -- stopped at its bound: no fault found, nothing proven
    return ("incomplete: %d runs (exhaustive, bound reached before every interleaving), no fault found in them: not a proof (raise bound)"):format(self.runs)
  end
  if self.ok then
    return ("ok: %d run%s (%s%s), no fault"):format(self.runs, self.runs == 1 and "" or "s", self.explore,
      self.explore == "exhaustive" and (self.exhausted and ", every interleaving" or ", bound reached") or
      (", seed %d"):format(self.seed))
  end
  tail = tail or 8
  local out = { ("%s in run %d of %s exploration (seed %d), step %d:"):format(self.kind, self.run, self.explore,
    self.seed, self.steps), "  " .. self.message, "timeline:" }
  for _, name in ipairs(self.order) do
    local log = self.timeline[name]
    out[#out + 1] = "  " .. name .. ":"
    if #log > tail then out[#out + 1] = ("    ... %d earlier steps"):format(#log - tail) end
    for i = math.max(1, #log - tail + 1), #log do out[#out + 1] = "    " .. log[i] end
  end
  out[#out + 1] = "barriers:"
  for _, name in ipairs(self.barrier_order) do
    out[#out + 1] = ("  %-12s %s"):format(name, self.barriers[name])
  end
  return table.concat(out, "\n")
end
Result.__tostring = Result.report

function M.run(o)
  local spec = check_spec(o)
  local r = setmetatable({ ok = true, runs = 0, explore = spec.explore, seed = spec.seed }, Result)
  if spec.explore == "random" then
    for i = 1, spec.runs do
      local f = one_run(spec, rng(spec.seed + i - 1))
      r.runs = i
      if f then
        for k, v in pairs(f) do r[k] = v end
        r.ok, r.run = false, i
        return r
      end
    end
    return r
  end
  -- exhaustive: depth-first over the scheduler's choices, replaying a prefix each run
  local prefix = {}
  while true do
    local taken, widths = {}, {}
    local depth = 0
    local f = one_run(spec, function(n)
      depth = depth + 1
      local c = prefix[depth] or 1
      if c > n then c = n end
      taken[depth], widths[depth] = c, n
      return c
    end)
    r.runs = r.runs + 1
    if f then
      for k, v in pairs(f) do r[k] = v end
      r.ok, r.run = false, r.runs
      return r
    end
    local k = #taken
    while k > 0 and taken[k] >= widths[k] do k = k - 1 end
    if k == 0 then r.exhausted, r.complete = true, true return r end
    -- r.ok stays true (no fault was found) but r.complete = false: the report says "incomplete"
    if r.runs >= spec.bound then r.exhausted, r.complete = false, false return r end
    prefix = {}
    for i = 1, k - 1 do prefix[i] = taken[i] end
    prefix[k] = taken[k] + 1
  end
end

return M
