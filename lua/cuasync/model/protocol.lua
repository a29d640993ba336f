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
--   last filled for another iteration) | "order" (groups out of turn: model/order_turns.lua) |
--   "error" | "step_limit"), r.message, r.role, r.barrier, r.timeline[role], r.barriers[name], r:report()
--   exhaustive: r.complete (every interleaving ran; false when the bound stopped it: r.ok then
--   only says no fault was found, and the report says "incomplete")
-- Inside a role, t is the role's handle: t.bar.full[0] (arrays count from 0, as on the device),
-- t:arrive(b[, n[, phase]]) t:arrive_drop(b[, n]) t:expect_tx(b, bytes) t:complete_tx(b, bytes)
-- t:arrive_expect_tx(b, bytes[, n]) t:bulk(bytes, b) (lands later) t:wait_parity(b, parity[, phase])
-- t:wait(b, token) t:note(text), and per-thread copies (model/async_copies.lua): t:cp_async(bytes,
-- stage[, iteration]) t:commit_group() t:wait_group(n) t:cp_async_arrive(b[, n[, noinc]])
-- t:read(stage[, iteration]), t:turn(seq, group, round, members, groups) t:turn_end(seq) (an
-- ordered barrier's turns, checked in order: model/order_turns.lua); a read of a stage with a copy still landing there is a "race", one
-- whose copies were for another iteration is "stale". Every call is a step the scheduler orders. A wait may name the
-- phase it means (the phase number whose completion it waits for; -1 is the one before init);
-- without it, the role's next phase of that barrier is assumed. A wait that passes on any other
-- phase, or is overtaken by two phases, is parity aliasing. An arrive that names its phase and
-- finds the barrier past it is an over-arrival (the phase completed without it). Pure Lua.
local options = require("cuasync.model.protocol_options")
local scheduler = require("cuasync.model.protocol_scheduler")
local report = require("cuasync.model.protocol_report")

-- The parts: protocol_options (the argument), protocol_role (t's methods), protocol_actions (what
-- each step does, the faults), protocol_scheduler (the runs), protocol_report (the result).
local M = {}

function M.run(o)
  local spec = options.check(o)
  return scheduler.explore(spec, report.new(spec))
end

return M
