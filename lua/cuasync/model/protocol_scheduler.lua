-- model.run's scheduler: one run picks, step by step, which role acts next or which copy in
-- flight lands, until every role has finished or none can act (a deadlock, diagnosed); explore
-- repeats runs, random (a seed each) or exhaustive (depth-first over every choice). Pure Lua.
local mbarrier = require("cuasync.model.mbarrier")
local copies = require("cuasync.model.async_copies")
local actions = require("cuasync.model.protocol_actions")
local roles_of = require("cuasync.model.protocol_role")
local names = require("cuasync.model.barrier_names")

local M = {}
local fault, Fault = actions.fault, actions.Fault
local enabled, overtaken, perform, describe_wait = actions.enabled, actions.overtaken, actions.perform, actions.describe_wait
local check_tx, check_arrivals = actions.check_tx, actions.check_arrivals
local Role, resume = roles_of.Role, roles_of.resume

-- Park-Miller: exact in doubles, so a seed replays the same interleavings everywhere.
local function rng(seed)
  local x = seed % 2147483646 + 1
  return function(n)
    x = x * 16807 % 2147483647
    return x % n + 1
  end
end

local function fresh_barriers(spec)
  local bar, all = {}, {}
  for _, b in ipairs(spec.bars) do
    if b.n then
      local arr = {}
      for i = 0, b.n - 1 do
        arr[i] = mbarrier.new(b.count, names.name(b.name, i))
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
        local wait = first.action.op == "wait_parity" and first.action or nil
        fault("deadlock", first.name, b and b.name, ("deadlock at step %d: %s. %s"):format(run.steps,
              table.concat(lines, "; "), why), wait and { phase = wait.phase, parity = wait.parity })
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

-- Fills r (protocol_report.new) with the runs made and the first fault found, if any.
function M.explore(spec, r)
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
