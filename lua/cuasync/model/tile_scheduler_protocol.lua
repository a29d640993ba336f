-- A tile scheduler's handshakes as a protocol, run with random schedules (seeded, replayable):
-- each CTA is a Lua coroutine doing its units (model/tile_scheduler.lua) against a model of
-- global memory with weak ordering. A write stays in its CTA's store buffer until a release (or
-- until the schedule lets it land on its own); a read sees only what has landed. The same style
-- as model.run (protocol.lua), with a flag per tile in place of mbarriers. Pure Lua.
--   turnstile (stream-K, serial split-K): a unit with wait spins until flag[tile] == k_begin
--     (acquire) and reads the tile's partial; with publish it writes partial + its own and stores
--     flag = k_end (release: its writes land first); with epilogue it writes the output and
--     stores flag = 0 (the next launch finds the flags as it found them).
--   reduce (split-K through DSMEM): per tile, every rank writes its partial to its own shared
--     memory, the cluster syncs (arrive.release / wait.acquire), rank 0 reads its peers' partials
--     in rank order and writes the output, and the cluster syncs again before any rank reuses
--     its shared memory.
-- Faults (r.kind): "deadlock" (every live CTA spins: names the CTA, the tile, the value awaited,
-- the flag's value and the unit that should have published it), "flag_passed" (the flag went past
-- the value a CTA waits for: a wrong count), "stale" (a read of a partial missing a k-range, or
-- holding one twice: read before the publish, or through a flag stored without release),
-- "race" (a rank rewrote the partial its cluster's rank 0 had not read), "output" (a tile's
-- output is not every k-range once, in k order), "flag_left" (a flag not 0 at the end).
-- Flags hold tiles.tag(epoch, count): the run is launch epoch 2, after launch 1.
-- Mutations (planted faults): skip_signal = c (CTA c never publishes nor arrives), early_read = c
-- (CTA c reads the partial before it waits), wait_delta = d (every wait for k_begin + d),
-- relaxed = true (flags stored without release), skip_second_sync = true (reduce),
-- after_abort = true (launch 1 was aborted: each split tile's flag holds its tag for the first
-- k-range that waits, its partial garbage), no_epoch = true (flags hold the count alone, epoch 0).
local tiles = require("cuasync.model.tile_scheduler")

local M = {}
M.MUTATIONS = { skip_signal = true, early_read = true, wait_delta = true, relaxed = true, skip_second_sync = true,
                after_abort = true, no_epoch = true }
M.EPOCH = 2

local function rng(seed)   -- Park-Miller, as model.run's scheduler: a seed replays everywhere
  local x = seed % 2147483646 + 1
  return function(n) x = x * 16807 % 2147483647 return x % n + 1 end
end

local Fault = {}
local function fault(kind, fields)
  fields.kind = kind
  error(setmetatable(fields, Fault), 0)
end

local function range(u) return ("%d-%d"):format(u.k_begin, u.k_end) end

-- The partial a unit must find: the k-ranges of the tile before it, in k order.
local function expected(per)
  local by = {}
  for _, us in pairs(per) do for _, u in ipairs(us) do by[u.tile] = by[u.tile] or {}; table.insert(by[u.tile], u) end end
  local want, full, owner = {}, {}, {}
  for t, us in pairs(by) do
    table.sort(us, function(a, b) return a.k_begin < b.k_begin end)
    local acc = {}
    want[t] = {}
    for _, u in ipairs(us) do
      want[t][u.k_begin] = table.concat(acc, ",")
      acc[#acc + 1] = range(u)
      owner[t .. ":" .. u.k_end] = u
    end
    full[t] = table.concat(acc, ",")
  end
  return want, full, owner
end

local function join(a, b) return a == "" and b or a .. "," .. b end

-- One CTA's program (yields actions to the scheduler below).
local function program(s, m, c, units)
  local epoch = m.no_epoch and 0 or M.EPOCH
  return function(y)
    for i, u in ipairs(units) do
      local mine = range(u)
      if s.mode == "reduce" then
        local rank = c % s.cluster
        y{ op = "write", where = "smem" .. c, value = u.tile .. ":" .. mine }
        if m.skip_signal ~= c then y{ op = "arrive", cluster = c - rank, phase = 2 * i - 2 } end
        local early = rank == 0 and m.early_read == c and {} or nil
        if early then
          for p = 1, s.cluster - 1 do early[p] = y{ op = "read", where = "smem" .. (c + p) } end
        end
        y{ op = "sync_wait", cluster = c - rank, phase = 2 * i - 2, unit = u }
        if rank == 0 then
          local acc = mine
          for p = 1, s.cluster - 1 do
            local got = early and early[p] or y{ op = "read", where = "smem" .. (c + p) }
            local want = units.peers[p][i]
            if got ~= u.tile .. ":" .. range(want) then
              fault(early and "stale" or "race", { cta = c, tile = u.tile, message = ("CTA %d (rank 0) read rank %d's partial as %s, but tile %d's split %d is %s: %s"):format(
                c, p, tostring(got), u.tile, p, u.tile .. ":" .. range(want),
                early and "it read before the cluster sync (the peer's write had not landed)" or "the peer wrote over it before rank 0 read it") })
            end
            acc = join(acc, range(want))
          end
          y{ op = "output", tile = u.tile, value = acc }
        end
        if not m.skip_second_sync then
          if m.skip_signal ~= c then y{ op = "arrive", cluster = c - rank, phase = 2 * i - 1 } end
          y{ op = "sync_wait", cluster = c - rank, phase = 2 * i - 1, unit = u }
        end
      else
        local acc = ""
        if u.wait then
          local early = m.early_read == c and y{ op = "read", where = "partial" .. u.tile } or nil
          y{ op = "wait_flag", tile = u.tile, value = tiles.tag(epoch, u.k_begin + (m.wait_delta or 0)), unit = u }
          acc = early or y{ op = "read", where = "partial" .. u.tile }
          if acc ~= units.want[u.tile][u.k_begin] then
            fault("stale", { cta = c, tile = u.tile, message = ("CTA %d's k-range %s of tile %d read the partial as {%s}; the k-ranges before it are {%s}: %s"):format(
              c, mine, u.tile, acc, units.want[u.tile][u.k_begin], early and "it read before its turnstile wait"
                or "the partial it read was not yet published (a flag stored before its data landed, a wait for the wrong count, or an aborted launch's flag taken for this one's)") })
          end
        end
        acc = join(acc, mine)
        if u.publish then
          y{ op = "write", where = "partial" .. u.tile, value = acc }
          if m.skip_signal ~= c then y{ op = "store_flag", tile = u.tile, value = tiles.tag(epoch, u.k_end), release = not m.relaxed } end
        else
          y{ op = "output", tile = u.tile, value = acc }
          if u.wait then y{ op = "store_flag", tile = u.tile, value = 0, release = not m.relaxed } end
        end
      end
    end
  end
end

-- A flag's value in words: its count, and its epoch where it is not the run's.
local function show(m, v)
  local e, c = tiles.untag(v)
  return (v == 0 or e == (m.no_epoch and 0 or M.EPOCH)) and tostring(c) or ("%d of epoch %d"):format(c, e)
end

-- One run; returns nil or the fault.
local function one(s, m, per, extra, choose)
  local mem, flags, out, arrivals, arrived = {}, {}, {}, {}, {}
  if m.after_abort then   -- what an aborted launch 1 left: the first waiter's tag, a garbage partial
    for t, kb in pairs(extra.first_wait) do
      flags[t], mem["partial" .. t] = tiles.tag(m.no_epoch and 0 or M.EPOCH - 1, kb), "garbage"
    end
  end
  local ctas = {}
  for c = 0, s.ctas - 1 do
    local units = per[c]
    units.want, units.peers = extra.want, {}
    if s.mode == "reduce" then
      for p = 1, s.cluster - 1 do units.peers[p] = per[c - c % s.cluster + p] end
    end
    local co = coroutine.create(program(s, m, c, units))
    ctas[#ctas + 1] = { c = c, co = co, pending = {}, log = {} }
  end
  local landing = {}   -- writes in store buffers: { cta, where, value }
  local steps = 0
  local function land(w) mem[w.where] = w.value end
  local function flush(r)
    for i = #landing, 1, -1 do if landing[i].cta == r then table.remove(landing, i) end end
    for _, w in ipairs(r.pending) do land(w) end
    r.pending = {}
  end
  -- each coroutine gets its yield function on its first resume
  for _, r in ipairs(ctas) do
    local ok, a = coroutine.resume(r.co, coroutine.yield)
    if not ok then if getmetatable(a) == Fault then return a end error(a, 0) end
    r.action = coroutine.status(r.co) ~= "dead" and a or nil
  end
  local function enabled(r)
    local a = r.action
    if a.op == "wait_flag" then
      local v = flags[a.tile] or 0
      local ve, vc = tiles.untag(v)
      local ae, ac = tiles.untag(a.value)
      if ve == ae and vc > ac then
        fault("flag_passed", { cta = r.c, tile = a.tile, message = ("CTA %d waits for tile %d's flag to read %d, but it reads %d already: the flag went past the count it waits for (a wait or a publish counted wrong)"):format(
          r.c, a.tile, ac, vc) })
      end
      return v == a.value
    elseif a.op == "sync_wait" then
      return (arrivals[a.cluster .. ":" .. a.phase] or 0) == s.cluster
    end
    return true
  end
  while true do
    local options, live = {}, false
    for _, r in ipairs(ctas) do
      if r.action then live = true if enabled(r) then options[#options + 1] = r end end
    end
    for _, w in ipairs(landing) do options[#options + 1] = w end
    if not live then break end
    if #options == 0 then
      local r = nil
      for _, x in ipairs(ctas) do if x.action then r = x break end end
      local a = r.action
      local blocked = {}
      for _, x in ipairs(ctas) do if x.action then blocked[#blocked + 1] = x.c end end
      if a.op == "wait_flag" then
        local _, ac = tiles.untag(a.value)
        local who = extra.owner[a.tile .. ":" .. ac]
        fault("deadlock", { cta = r.c, tile = a.tile, message = ("deadlock: CTA %d waits for tile %d's flag to read %d (k-range %s); it reads %s, and %s; CTAs still spinning: %s"):format(
          r.c, a.tile, ac, range(a.unit), show(m, flags[a.tile] or 0),
          who and ("the k-range that ends at %d (CTA %d's) never published it"):format(ac, who.cta)
              or ("no k-range of tile %d ends at %d: the wait counts wrong"):format(a.tile, ac),
          table.concat(blocked, " ")) })
      end
      local key, missing = a.cluster .. ":" .. a.phase, {}
      for p = a.cluster, a.cluster + s.cluster - 1 do
        if not (arrived[key] and arrived[key][p]) then missing[#missing + 1] = p end
      end
      fault("deadlock", { cta = r.c, tile = a.unit and a.unit.tile, message = ("deadlock: CTA %d waits at cluster sync %d of the cluster at CTA %d, which has %d of its %d arrivals (CTA %s never arrived); CTAs still waiting: %s"):format(
        r.c, a.phase, a.cluster, arrivals[key] or 0, s.cluster, table.concat(missing, ", "), table.concat(blocked, " ")) })
    end
    steps = steps + 1
    local pick = options[choose(#options)]
    if pick.co == nil then   -- a write lands on its own
      for i, w in ipairs(landing) do if w == pick then table.remove(landing, i) break end end
      local r = pick.cta
      for i, w in ipairs(r.pending) do if w == pick.w then table.remove(r.pending, i) break end end
      land(pick.w)
    else
      local r, a, value = pick, pick.action, nil
      if a.op == "write" then
        local w = { where = a.where, value = a.value }
        r.pending[#r.pending + 1] = w
        landing[#landing + 1] = { cta = r, w = w }
      elseif a.op == "read" then
        -- a CTA sees its own writes
        value = mem[a.where] or ""
        for _, w in ipairs(r.pending) do if w.where == a.where then value = w.value end end
      elseif a.op == "store_flag" then
        if a.release then flush(r) end
        flags[a.tile] = a.value
      elseif a.op == "arrive" then
        flush(r)
        local key = a.cluster .. ":" .. a.phase
        arrivals[key] = (arrivals[key] or 0) + 1
        arrived[key] = arrived[key] or {}
        arrived[key][r.c] = true
      elseif a.op == "output" then
        if out[a.tile] then fault("output", { cta = r.c, tile = a.tile, message = ("tile %d's output written twice (CTA %d the second time)"):format(a.tile, r.c) }) end
        out[a.tile] = a.value
      end
      local ok, na = coroutine.resume(r.co, value)
      if not ok then if getmetatable(na) == Fault then return na end error(na, 0) end
      r.action = coroutine.status(r.co) ~= "dead" and na or nil
    end
  end
  for t = 0, s.tiles - 1 do
    if out[t] ~= extra.full[t] then
      fault("output", { tile = t, message = ("tile %d's output holds k-ranges {%s}; it must hold {%s}, each once, in k order"):format(
        t, tostring(out[t]), extra.full[t]) })
    end
    if (flags[t] or 0) ~= 0 then
      fault("flag_left", { tile = t, message = ("tile %d's flag is %s at the end: the next launch would find it set"):format(t, show(m, flags[t])) })
    end
  end
end

local Simulation = {}
Simulation.__index = Simulation
function Simulation:report()
  if self.ok then return ("ok: %d runs (random, seed %d), no fault"):format(self.runs, self.seed) end
  return ("%s in run %d (seed %d): %s"):format(self.kind, self.run, self.seed, self.message)
end
Simulation.__tostring = Simulation.report
M.Simulation = Simulation

-- Run the scheduler s (model/tile_scheduler.derive) with mutation m (or {}) over `runs` random
-- schedules from `seed`. Returns a Simulation: ok, or kind, message, cta, tile, run.
function M.run(s, m, runs, seed)
  m = m or {}
  local per = tiles.all(s)
  for c = 0, s.ctas - 1 do for _, u in ipairs(per[c]) do u.cta = c end end
  local want, full, owner = expected(per)
  local extra = { want = want, full = full, owner = owner, first_wait = {} }
  for c = 0, s.ctas - 1 do
    for _, u in ipairs(per[c]) do
      if u.wait and s.turnstile then extra.first_wait[u.tile] = math.min(extra.first_wait[u.tile] or math.huge, u.k_begin) end
    end
  end
  local r = setmetatable({ ok = true, runs = 0, seed = seed }, Simulation)
  for i = 1, runs do
    local ok, f = pcall(one, s, m, per, extra, rng(seed + i - 1))
    r.runs = i
    if not ok then
      if getmetatable(f) ~= Fault then error(f, 0) end
      for k, v in pairs(f) do r[k] = v end
      r.ok, r.run = false, i
      return r
    end
    if f then for k, v in pairs(f) do r[k] = v end r.ok, r.run = false, i return r end
  end
  return r
end

return M
