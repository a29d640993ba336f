-- The PTX mbarrier on the CPU (PTX ISA "Parallel synchronization: mbarrier"). Pure Lua.
--   local mb = cuasync.model.mbarrier(4)
--   local t = mb:arrive()            -- a token: the phase it was taken in
--   mb:test_wait(t), mb:test_wait_parity(0), mb.phase, mb.pending, mb.tx, mb.count
-- State: the phase number (the full counter, not only its parity, so that a waiter overtaken by
-- two phases is visible), the pending arrivals of the current phase, the expected arrivals that
-- reset pending when a phase completes (arrive_drop lowers it), and the signed tx-count. A phase
-- completes when pending and tx are both zero after an operation; then pending := expected and
-- the phase advances. What the hardware reports (test_wait*, the token's pending count) is
-- predicted exactly; a GPU spec checks the predictions against a real mbarrier.
-- Every operation PTX leaves undefined is refused, naming the rule (util.fail at the user's line).
local util = require("cuasync.util")

local M = {}
M.MAX_COUNT = 2 ^ 20 - 1   -- arrival counts: 1 .. 2^20-1 (mbarrier.init)
M.MAX_TX = 2 ^ 20 - 1      -- tx-count stays within -(2^20-1) .. 2^20-1

local Barrier = {}
Barrier.__index = Barrier

local Token = {}
Token.__index = Token
function Token:__tostring()
  return ("mbarrier token (phase %d, %d pending when it arrived)"):format(self.phase, self.pending)
end

local WHERE = "model.mbarrier"

local function fail(self, op, msg)
  util.fail(WHERE, ("%s:%s: %s"):format(self.name, op, msg))
end

local function live(self, op)
  if self.invalid then
    fail(self, op, "the barrier was invalidated (mbarrier.inval): any use but mbarrier.init after inval is undefined")
  end
end

local function amount(self, op, name, v, lo)
  if not util.is_integer(v) or v < lo or v > M.MAX_COUNT then
    fail(self, op, ("%s must be an integer in %d..%d (got %s)"):format(name, lo, M.MAX_COUNT, util.describe(v)))
  end
  return v
end

-- mbarrier(count[, name]): a fresh barrier (mbarrier.init): phase 0, pending = expected = count, tx 0.
function M.new(count, name)
  if name ~= nil then util.cstring(WHERE, "name", name) end
  if not util.is_integer(count) or count < 1 or count > M.MAX_COUNT then
    util.fail(WHERE, ("count must be an integer in 1..%d (PTX mbarrier.init: the expected arrival count is 1..2^20-1; got %s)"):format(
              M.MAX_COUNT, util.describe(count)))
  end
  return setmetatable({ name = name or "mbarrier", count = count, expected = count, pending = count, tx = 0,
                        phase = 0, invalid = false }, Barrier)
end

-- The phase completes when nothing is pending: pending := expected, phase + 1.
local function settle(self)
  if self.pending == 0 and self.tx == 0 then
    self.phase = self.phase + 1
    self.pending = self.expected
    return true
  end
  return false
end

local function add_tx(self, op, delta)
  local tx = self.tx + delta
  if tx > M.MAX_TX or tx < -M.MAX_TX then
    fail(self, op, ("tx-count would become %d, outside -(2^20-1)..2^20-1 (PTX: the tx-count range of an mbarrier; phase %d, tx %d)"):format(
         tx, self.phase, self.tx))
  end
  self.tx = tx
end

local function arrive_n(self, op, n)
  if n > self.pending then
    fail(self, op, ("%d arrival%s but only %d pending in phase %d (tx %d): more arrivals than pending is undefined behaviour in PTX"):format(
         n, n == 1 and "" or "s", self.pending, self.phase, self.tx))
  end
  -- the token records the pending count the arrive found, before its own arrivals (what
  -- mbarrier.pending_count reads back from it on the H200)
  local token = setmetatable({ barrier = self, phase = self.phase, pending = self.pending }, Token)
  self.pending = self.pending - n
  return token
end

-- mb:arrive([n]) -> token. n arrivals (default 1) on the current phase.
function Barrier:arrive(n)
  live(self, "arrive")
  n = amount(self, "arrive", "n", n or 1, 1)
  local t = arrive_n(self, "arrive", n)
  self.completed = settle(self)
  return t
end

-- mb:arrive_drop([n]) -> token. n arrivals, and every later phase expects n fewer.
function Barrier:arrive_drop(n)
  live(self, "arrive_drop")
  n = amount(self, "arrive_drop", "n", n or 1, 1)
  if n > self.expected then
    fail(self, "arrive_drop", ("drops %d but the barrier expects only %d arrivals per phase (PTX: the expected count cannot go below 0)"):format(
         n, self.expected))
  end
  local t = arrive_n(self, "arrive_drop", n)
  self.expected = self.expected - n
  self.completed = settle(self)
  return t
end

-- mb:cp_async_arrive([noinc[, n]]) -> a pending arrival (cp.async.mbarrier.arrive[.noinc], by n
-- threads at once): the arrive-on that the issuing thread's cp.async copies trigger once they have
-- all landed; arrival:land() performs it. Without noinc the pending count is raised by n now, so
-- that the landing only gives those back (each thread still arrives itself, and the phase cannot
-- complete before its copies land); with noinc nothing happens now and each landing arrival is one
-- of the phase's expected arrivals (count it in the init count). PTX ISA "cp.async.mbarrier.arrive".
local Arrival = {}
Arrival.__index = Arrival

function Barrier:cp_async_arrive(noinc, n)
  live(self, "cp_async_arrive")
  n = amount(self, "cp_async_arrive", "n", n or 1, 1)
  if not noinc then
    if self.pending + n > M.MAX_COUNT then
      fail(self, "cp_async_arrive", ("raising the pending count by %d would take it to %d, past 2^20-1 (phase %d)"):format(
           n, self.pending + n, self.phase))
    end
    self.pending = self.pending + n
  end
  return setmetatable({ barrier = self, noinc = noinc == true, n = n, landed = false }, Arrival)
end

function Arrival:land()
  local b = self.barrier
  if self.landed then fail(b, "cp_async_arrive", "this arrival has already landed") end
  live(b, "cp_async_arrive")
  arrive_n(b, "cp_async_arrive", self.n)
  self.landed = true
  b.completed = settle(b)
end

function Arrival:__tostring()
  return ("cp.async arrival%s of %d on %s"):format(self.noinc and " (noinc)" or "", self.n, self.barrier.name)
end

-- mb:expect_tx(bytes): the current phase also waits for `bytes` more transaction bytes.
function Barrier:expect_tx(bytes)
  live(self, "expect_tx")
  bytes = amount(self, "expect_tx", "bytes", bytes, 0)
  add_tx(self, "expect_tx", bytes)
  self.completed = settle(self)
end

-- mb:complete_tx(bytes): `bytes` transaction bytes have landed (what a copy's complete_tx does).
function Barrier:complete_tx(bytes)
  live(self, "complete_tx")
  bytes = amount(self, "complete_tx", "bytes", bytes, 0)
  add_tx(self, "complete_tx", -bytes)
  self.completed = settle(self)
end

-- mb:arrive_expect_tx(bytes[, n]) -> token: expect_tx(bytes), then n arrivals, as one operation.
function Barrier:arrive_expect_tx(bytes, n)
  live(self, "arrive_expect_tx")
  bytes = amount(self, "arrive_expect_tx", "bytes", bytes, 0)
  n = amount(self, "arrive_expect_tx", "n", n or 1, 1)
  if n > self.pending then arrive_n(self, "arrive_expect_tx", n) end   -- raises, state untouched
  add_tx(self, "arrive_expect_tx", bytes)
  local t = arrive_n(self, "arrive_expect_tx", n)
  self.completed = settle(self)
  return t
end

-- mb:test_wait(token) -> bool, as the hardware answers: the token carries only its phase's
-- parity, so a token two phases old reads as not completed. The second result is true when the
-- answer is aliased (the barrier has moved two or more phases past the token's).
function Barrier:test_wait(token)
  live(self, "test_wait")
  if getmetatable(token) ~= Token then
    fail(self, "test_wait", ("token must be a token from this barrier's arrive (got %s)"):format(util.describe(token)))
  end
  if token.barrier ~= self then fail(self, "test_wait", ("the token belongs to %s"):format(token.barrier.name)) end
  return token.phase % 2 ~= self.phase % 2, self.phase - token.phase >= 2
end

-- mb:test_wait_parity(p) -> bool: the phase of parity p has completed, i.e. the current phase's
-- parity differs from p (a fresh barrier reports parity 1 complete: the phase before phase 0).
function Barrier:test_wait_parity(parity)
  live(self, "test_wait_parity")
  if parity ~= 0 and parity ~= 1 then
    fail(self, "test_wait_parity", ("parity must be 0 or 1 (got %s)"):format(util.describe(parity)))
  end
  return self.phase % 2 ~= parity
end

-- mb:pending_count([token]): arrivals pending in the current phase; with a token, the count
-- mbarrier.pending_count reads from it: the pending count that arrive found, before its own
-- arrivals (measured on the H200 by spec/model/mbarrier_model_spec.lua).
function Barrier:pending_count(token)
  if token == nil then
    live(self, "pending_count")
    return self.pending
  end
  if getmetatable(token) ~= Token then
    fail(self, "pending_count", ("token must be a token from arrive (got %s)"):format(util.describe(token)))
  end
  return token.pending
end

-- mb:inval(): the barrier's memory may be reused; any later use is refused.
function Barrier:inval()
  live(self, "inval")
  self.invalid = true
end

function Barrier:state()
  return ("phase %d, pending %d of %d, tx %d%s"):format(self.phase, self.pending, self.expected, self.tx,
    self.invalid and ", invalidated" or "")
end

function Barrier:__tostring()
  return ("%s (%s)"):format(self.name, self:state())
end

util.methods(Barrier, "model.mbarrier", "mb")
M.Barrier, M.Token, M.Arrival = Barrier, Token, Arrival
return setmetatable(M, { __call = function(_, count, name) return M.new(count, name) end })
