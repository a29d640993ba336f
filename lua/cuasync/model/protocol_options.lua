-- model.run's argument, checked (protocol.lua): the barriers (counts, arrays), the roles (one
-- entry per instance, sorted by name, so that a seed replays the same schedule), the exploration
-- and its bounds. Returns the spec the scheduler runs. Pure Lua.
local util = require("cuasync.util")
local mbarrier = require("cuasync.model.mbarrier")

local M = {}
local WHERE = "model.run"
local function fail(msg) util.fail(WHERE, msg) end

-- The fields model.run{...} takes (the one list; docs_spec holds the reference to it).
M.FIELDS = { barriers = true, roles = true, explore = true, seed = true, runs = true, bound = true,
             async = true, max_steps = true }
local FIELDS = M.FIELDS

-- A key of barriers or roles: a Lua identifier (the names end up in reports and timelines).
local function identifier(what, name)
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    fail(("%s key %s must be a name (a Lua identifier)"):format(what, util.describe(name)))
  end
end

function M.check(o)
  util.kind(WHERE, "argument", o, "table")
  util.known_fields(WHERE, o, FIELDS)
  util.kind(WHERE, "barriers", o.barriers, "table")
  local bars = {}
  for name, b in pairs(o.barriers) do
    identifier("barriers", name)
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
    identifier("roles", name)
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

return M
