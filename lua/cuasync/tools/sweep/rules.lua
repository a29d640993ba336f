-- The rules of a sweep run's options, each written once and read by both of their surfaces: the
-- API (options.lua for S:run, slurm/ for its slurm table), which raises "cuasync.sweep.run:
-- <field> <rule> (got <value>)", and the command (tools/commands/sweep.lua), whose option for
-- the field is a usage error, exit 2: "cuasync: --<option> <value> <rule>". A rule is a
-- function(v) -> nil when v keeps it, else the rule's text ("must be ..."). Pure Lua: the
-- command reads it where the native library does not load.
local util = require("cuasync.util")
local rng = require("cuasync.tools.sweep.rng")
local strategies = require("cuasync.tools.sweep.strategies")

local M = { MAX_GPU = 63 }

local function int_in(lo, hi)
  local text = ("must be an integer in %s..%s"):format(util.describe(lo), util.describe(hi))
  return function(v) if not (util.is_integer(v) and v >= lo and v <= hi) then return text end end
end

-- A word that goes on a #SBATCH line as it is.
local function sbatch_word(v)
  if type(v) ~= "string" then return "must be a string" end
  if v == "" then return "must not be empty" end
  if v:find("[%s'\"\\%z]") then return "must hold no spaces, quotes or backslashes: it goes on #SBATCH lines" end
end

local TIME_FORMS = { "^%d+$", "^%d+:%d%d$", "^%d+:%d%d:%d%d$", "^%d+%-%d+$", "^%d+%-%d+:%d%d$", "^%d+%-%d+:%d%d:%d%d$" }

M.RULES = {
  jobs = int_in(1, 256),
  seed = int_in(0, rng.MAX_SEED),
  strategy = function(v)
    if type(v) ~= "string" or not strategies.DOC[v] then return "must be one of " .. table.concat(strategies.NAMES, ", ") end
  end,
  ["budget.points"] = function(v) if not (util.is_integer(v) and v > 0) then return "must be a positive integer" end end,
  ["budget.seconds"] = function(v)
    if type(v) ~= "number" or v ~= v or v <= 0 or v == math.huge then return "must be a positive number" end
  end,
  -- one ordinal of gpus (the command's --gpus takes the list: M.RULES.gpus)
  gpu = int_in(0, M.MAX_GPU),
  gpus = function(v)
    if v == "all" then return nil end
    local why = ("must be all or a list of GPU ordinals in 0..%d"):format(M.MAX_GPU)
    if type(v) ~= "table" or #v == 0 then return why end
    for _, d in ipairs(v) do if M.RULES.gpu(d) then return why end end
  end,
  ["slurm.shards"] = int_in(1, 100000),
  ["slurm.gpus_per_task"] = int_in(0, 64),
  ["slurm.poll_s"] = function(v)
    if type(v) ~= "number" or not (v > 0 and v <= 60) then return "must be a number of seconds in (0, 60]" end
  end,
  ["slurm.time"] = function(v)
    if type(v) == "string" then
      for _, f in ipairs(TIME_FORMS) do if v:match(f) then return nil end end
    end
    return 'must be a Slurm time limit: "minutes", "MM:SS", "HH:MM:SS" or "D-HH[:MM[:SS]]"'
  end,
  ["slurm.partition"] = sbatch_word,
  ["slurm.dir"] = sbatch_word,
  ["slurm.sbatch_args[]"] = function(v)
    if type(v) ~= "string" or not v:match("^%-") or v:find("[\n%z]") then return "must be one sbatch option starting with '-'" end
  end,
}

-- The API's check: v, or a raise at the user's line naming the field (name: the field as the
-- message says it, "slurm.sbatch_args[2]"; default the rule's own name).
function M.check(where, field, v, name)
  local why = assert(M.RULES[field], field)(v)
  if why then util.fail(where, ("%s %s (got %s)"):format(name or field, why, util.describe(v))) end
  return v
end

-- The command's check of an option (tools/cli.lua's `check`): the rule of an API field.
function M.option(field)
  return assert(M.RULES[field], field)
end

return M
