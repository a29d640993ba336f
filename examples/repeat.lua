-- repeat.lua: a sweep run N times, each in a separate process (`cuasync sweep SCRIPT --force`,
-- so nothing comes from the result store), then compared: each run's best line, whether the
-- winner changed (acceptable only where every run said its best was tied within noise), and per
-- variant its figure in each run, their range and whether it was stable in every run.
--   luajit examples/repeat.lua [--runs 3] [--top 15] [--out DIR] SCRIPT.lua [the script's options]
-- e.g. luajit examples/repeat.lua --runs 3 examples/gemm_sweep.lua --stages 3,4,5
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
local root = require("example.checkout")
local isolate = require("cuasync.tools.isolate")
local json = require("cuasync.tools.json")
local fs = require("cuasync.fs")
local compare = require("cuasync.tools.sweep.repeat")

local function usage(why)
  io.stderr:write(("repeat.lua: %s\nusage: luajit examples/repeat.lua [--runs N] [--top N] [--out DIR] SCRIPT.lua [options]\n"):format(why))
  os.exit(2)
end

local o, i = { runs = 3, top = 15, out = nil }, 1
while arg[i] and arg[i]:match("^%-%-") do
  local name, v = arg[i]:sub(3), arg[i + 1]
  if name == "runs" or name == "top" then
    local n = tonumber(v)
    if not n or n ~= math.floor(n) or n < 1 or n > 100 then usage(("--%s %s must be an integer in 1..100"):format(name, tostring(v))) end
    o[name] = n
  elseif name == "out" then
    if not v then usage("--out needs a directory") end
    o.out = v
  else
    usage(("unknown option --%s (the script's options go after the script)"):format(name))
  end
  i = i + 2
end
local script = arg[i]
if not script then usage("give the sweep script") end
if o.runs < 2 then usage("--runs must be at least 2: one run has nothing to compare") end
local rest = { unpack(arg, i + 1) }
local dir = o.out or os.tmpname() .. ".d"
local ok, why = fs.mkdirs(dir)
if not ok then usage(why) end

local lua = os.getenv("LUAJIT") or "luajit"
local docs = {}
for run = 1, o.runs do
  local path = ("%s/run%d.json"):format(dir, run)
  local argv = { lua, root .. "/bin/cuasync", "sweep", script, "--force", "--quiet", "--json", path }
  for _, a in ipairs(rest) do argv[#argv + 1] = a end
  local t0 = os.time()
  local done, out, code = isolate.command(argv)
  local best = out:match("\n(best: [^\n]*)") or "(no best line)"
  fs.write(("%s/run%d.txt"):format(dir, run), out)   -- the run's whole table, kept beside its JSON
  print(("run %d of %d (%d s, exit %s): %s"):format(run, o.runs, os.time() - t0, tostring(code), best))
  if not done then
    io.stderr:write(out:sub(-2000), "\n")
    io.stderr:write(("repeat.lua: run %d failed (exit %s); its output is above\n"):format(run, tostring(code)))
    os.exit(1)
  end
  local doc, err = json.decode_file(path)
  if type(doc) ~= "table" then io.stderr:write(("repeat.lua: run %d wrote no JSON (%s)\n"):format(run, tostring(err))) os.exit(1) end
  docs[run] = doc
end
print("")
print(compare.text(compare.compare(docs), o.top))
print(("the runs' JSON and tables: %s/run1.json, run1.txt .. run%d.json, run%d.txt"):format(dir, o.runs, o.runs))
