-- The command line, written once: each command is one declarative spec from which both its usage
-- text and its parser come (as in Penlight's lapp, the usage is the parser's specification).
-- bin/cuasync hands argv to tools/commands (the dispatcher and one file per command); a script (an
-- example) declares its own options in the same form with M.script. Exit codes: 0 done, 1 an
-- error, 2 a usage error (its message names the option).
--   { name = "sweep", summary = "its line in `cuasync --help`", usage = { "SCRIPT.lua [options]", ... },
--     about = "lines under the usage lines", args = { { "ROWS", "help", default = 16 }, ... },
--     options = { "a heading:", { "--flag", "help" }, { "-D NAME=VALUE", "help", many = true },
--                 { "--name METAVAR", "help", type =, default =, min =, choices =, check =, needs = "other", alone = true } },
--     run = function(o, args) end }   -- or main = function(argv) end: the command parses itself
-- Values are keyed by the name with '-' as '_' (o.budget_points). A type is "string", "int",
-- "number", "ints", "list" (comma lists) or function(text) -> value | nil, why (M.types); without
-- one it is a flag (no METAVAR) or read off the default (an integer, a table of numbers, a table).
-- many: the option repeats, its values a list. needs: given only with that option. alone: M.script.
-- check: function(value) -> nil | the rule it breaks ("must be ..."), run on the converted value
-- (each value of a many): an API's own rule (tools/sweep/rules.lua), so that the option's
-- usage error and the API's error say one rule.
local ffi = require("ffi")
local fs = require("cuasync.fs")

local M = {}

-- -- Files ------------------------------------------------------------------------------------
-- The commands' files go through cuasync.fs (every write checked): write_file(path, data) and
-- mkdirs(dir) -> true | nil, why; dir_usage(dir) -> files, bytes (0, 0 where there is none).
M.write_file, M.mkdirs = fs.write, fs.mkdirs
function M.dir_usage(dir)
  local files, bytes = fs.usage(dir)
  if not files then return 0, 0 end   -- bytes is then the reason (a cache not made yet)
  return files, bytes
end

-- -- Types ------------------------------------------------------------------------------------
local TYPES = {}
M.types = TYPES

-- "true" and "false" are booleans, a number a number, anything else the text (--param, -D values).
function M.value(s) if s == "true" or s == "false" then return s == "true" end return tonumber(s) or s end

local function items(v)   -- a comma list's items, or nil where one is empty
  local t = {}
  for x in (v .. ","):gmatch("([^,]*),") do t[#t + 1] = x end
  for _, x in ipairs(t) do if x == "" then return nil end end
  return t
end

function TYPES.string(v) return v end
function TYPES.number(v) return tonumber(v), "is not a number" end
function TYPES.int(v, e)
  local n = tonumber(v)
  if n and n % 1 == 0 and n >= (e.min or -math.huge) then return n end
  return nil, e.min and ("is not an integer >= %d"):format(e.min) or "is not an integer"
end
function TYPES.list(v)
  local t = items(v)
  for i, x in ipairs(t or {}) do t[i] = tonumber(x) or x end
  return t, "is a comma list with an empty item"
end
function TYPES.ints(v)
  local t = TYPES.list(v)
  for _, x in ipairs(t or {}) do if type(x) ~= "number" or x % 1 ~= 0 then t = nil end end
  return t, "is not a comma list of integers"
end

-- -- Specs --------------------------------------------------------------------------------------
local function show(v) return type(v) == "table" and table.concat(v, ",") or tostring(v) end

-- An option or argument entry, completed in place once: name, key, metavar, short, type.
local function entry(e, positional)
  if e.key then return e end
  local dash, name, metavar = e[1]:match("^(%-*)([%w][%w_%-%.]*)%s*(.-)$")
  if positional then name, metavar, dash = e[1], e[1], "" end
  assert(name and (positional or dash ~= ""), "cuasync.cli: an option is written '--name [METAVAR]' (got " .. tostring(e[1]) .. ")")
  e.name, e.short, e.metavar, e.help = name, dash == "-", metavar ~= "" and metavar or nil, e[2] or ""
  e.key = name:lower():gsub("[^%w]", "_"):gsub("_lua$", "")
  if not e.type then
    local d, numbers = e.default, type(e.default) == "table"
    for _, x in ipairs(type(d) == "table" and d or {}) do numbers = numbers and type(x) == "number" end
    e.type = not e.metavar and "flag" or type(d) == "number" and (d % 1 == 0 and "int" or "number")
             or numbers and "ints" or type(d) == "table" and "list" or "string"
  end
  return e
end

local function options(spec)
  local t = {}
  for _, e in ipairs(spec.options or {}) do t[#t + 1] = type(e) == "table" and entry(e) or nil end
  return t
end

-- The lines of a help text, wrapped at 110 columns, each after `indent` spaces (the first after `first`).
local function wrap(text, first, indent)
  local lines, line = {}, first
  for word in text:gmatch("%S+") do
    if #line + #word > 110 and line:match("%S") then lines[#lines + 1] = line; line = (" "):rep(indent) end
    line = line .. (line:match("%S$") and " " or "") .. word
  end
  lines[#lines + 1] = line
  return table.concat(lines, "\n")
end

local function item(form, help)   -- M.item: the commands' list uses it too
  form = "  " .. form
  if #form < 27 then return wrap(help, form .. (" "):rep(28 - #form), 28) end
  return form .. "\n" .. wrap(help, (" "):rep(28), 28)
end

local function synopsis(spec)   -- "[options] [ROWS]", for a spec that writes no usage lines
  local t = { #options(spec) > 0 and "[options]" or nil }
  for _, a in ipairs(spec.args or {}) do t[#t + 1] = entry(a, true).default ~= nil and "[" .. a.name .. "]" or a.name end
  return table.concat(t, " ")
end

-- The usage text of a spec (head: its usage lines only): the usage lines, about, arguments and
-- options with their defaults.
function M.usage(spec, head)
  local prog, out = spec.program or ("cuasync " .. spec.name), {}
  for k, u in ipairs(spec.usage or { synopsis(spec) }) do
    out[#out + 1] = (k == 1 and "usage: " or "       ") .. prog .. (u ~= "" and " " .. u or "")
  end
  if head then return table.concat(out, "\n") end
  if spec.about then out[#out + 1] = spec.about:gsub("%s+$", "") end
  for _, a in ipairs(spec.args or {}) do
    entry(a, true)
    if a.help ~= "" then out[#out + 1] = item(a.name, a.help .. (a.default ~= nil and (" (default %s)"):format(show(a.default)) or "")) end
  end
  for k, e in ipairs(spec.options or {}) do
    if type(e) == "string" then out[#out + 1] = e
    else
      if k == 1 then out[#out + 1] = "options:" end
      entry(e)
      local help = e.help
      if e.choices then help = help .. (" (%s)"):format(table.concat(e.choices, ", ")) end
      if e.default ~= nil and e.default ~= "" and e.type ~= "flag" then help = help .. (" (default %s)"):format(show(e.default)) end
      if e.many then help = help .. "; repeatable" end
      if e.needs then help = help .. ("; with --%s"):format(e.needs) end
      out[#out + 1] = item(e[1], help)
    end
  end
  return table.concat(out, "\n")
end

-- A usage error: its message and the usage lines on stderr, exit 2.
function M.usage_error(spec, msg)
  io.stderr:write(spec.prefix or "cuasync", ": ", msg, "\n", M.usage(spec, true), "\n  (--help lists the options)\n")
  os.exit(2)
end

-- An error in the run: its message without the position of the launcher's frame (on each line:
-- a message may join several errors), exit 1.
function M.fail(msg)
  io.stderr:write((("\n" .. tostring(msg)):gsub("\n[^\n]-cuasync:%d+: ", "\n"):sub(2)), "\n")
  os.exit(1)
end

-- What a command printed, checked as every file it writes is (fs.lua): the standard output
-- flushed and its error flag read (print never says that a write failed: a full disk, a closed
-- pipe). true, or nil and why. M.print is print that keeps the reason of a failed write.
pcall(ffi.cdef, "typedef struct cuasync_cli_FILE cuasync_cli_FILE; int ferror(cuasync_cli_FILE *f);")
local stdout_ok, stdout_file = pcall(function() return ffi.cast("cuasync_cli_FILE *", ffi.C.stdout) end)
if not stdout_ok then   -- declared here only where no other module declared it first
  pcall(ffi.cdef, "extern cuasync_cli_FILE *stdout;")
  stdout_ok, stdout_file = pcall(function() return ffi.C.stdout end)
end
-- The reason of a failed write is kept where it happened: once the C library has dropped the
-- buffer of a write that failed, a later flush succeeds and only the error flag is left (seen on
-- a write longer than the buffer that ends the output).
local stdout_why
function M.print(...)
  local n, parts = select("#", ...), {}
  for i = 1, n do parts[i] = tostring((select(i, ...))) end
  local ok, why = io.stdout:write(table.concat(parts, "\t"), "\n")
  if not ok then stdout_why = stdout_why or why end
end
function M.stdout_written()
  local ok, why = io.stdout:flush()
  if ok and not (stdout_ok and ffi.C.ferror(stdout_file) ~= 0) then return true end
  return nil, why or stdout_why or "a write to it failed"
end

-- -- The parser ---------------------------------------------------------------------------------
-- A value as a usage error shows it: as typed, quoted where it is empty or holds a space or quote.
local function shown(v)
  if v ~= "" and not v:find("[%s'\"]") then return v end
  return "'" .. v:gsub("'", "'\\''") .. "'"
end

local function convert(e, v)   -- -> value | nil, why
  local x, why = (type(e.type) == "function" and e.type or TYPES[e.type])(v, e)
  if x == nil then return x, why end
  if e.check then
    why = e.check(x)
    if why then return nil, why end
  end
  if not e.choices then return x end
  for _, c in ipairs(e.choices) do if c == x then return x end end
  return nil, "is not one of " .. table.concat(e.choices, ", ")
end

-- parse(spec, argv) -> values (defaults filled in), positionals. --help prints the usage, exit 0;
-- a usage error exits 2. With spec.rest, everything after the first positional is positional.
function M.parse(spec, argv)
  local by, o, given, pos = {}, {}, {}, {}
  for _, e in ipairs(options(spec)) do
    by[(e.short and "-" or "--") .. e.name] = e
    o[e.key] = type(e.default) == "table" and { unpack(e.default) } or e.default or (e.many and {} or nil)
  end
  local i = 1
  while i <= #argv do
    local a = argv[i]
    if (spec.rest and #pos > 0) or not a:match("^%-%-?%a") then pos[#pos + 1] = a
    elseif a == "--help" or a == "-h" then io.stdout:write(M.usage(spec), "\n") os.exit(0)
    else
      local name, v = a:match("^(%-%-[^=]+)=(.*)$")
      local e = by[name or a]
      if not e and not name and not a:match("^%-%-") then e = by[a:sub(1, 2)]; v = e and a:sub(3) or nil end
      name = name or (e and e.short and a:sub(1, 2)) or a
      if not e then M.usage_error(spec, "unknown option " .. name) end
      if e.type == "flag" then
        if v then M.usage_error(spec, name .. " takes no value") end
        o[e.key] = true
      else
        if v == nil then i = i + 1; v = argv[i] end
        if v == nil then M.usage_error(spec, name .. " needs a value") end
        local x, why = convert(e, v)
        if x == nil then M.usage_error(spec, ("%s %s %s"):format(name, shown(v), why or "is not valid")) end
        if e.many then o[e.key] = given[e.key] and o[e.key] or {}; table.insert(o[e.key], x) else o[e.key] = x end
      end
      given[e.key] = true
    end
    i = i + 1
  end
  for _, e in ipairs(spec.rest and {} or options(spec)) do   -- (rest: what follows is not read yet)
    local needed = e.needs and e.needs:gsub("%-", "_")
    if needed and given[e.key] and not given[needed] then M.usage_error(spec, ("--%s needs --%s"):format(e.name, e.needs)) end
  end
  local typed = false
  for k, a in ipairs(spec.args or {}) do   -- a script's positionals: typed, with defaults
    if entry(a, true).default ~= nil or a.type ~= "string" then
      typed = true
      local x, why
      if pos[k] then x, why = convert(a, pos[k]) end
      if x == nil and pos[k] then M.usage_error(spec, ("%s %s %s"):format(a.name, shown(pos[k]), why or "is not valid")) end
      o[a.key] = x == nil and a.default or x
    end
  end
  if typed and #pos > #spec.args then M.usage_error(spec, "one argument too many: " .. pos[#spec.args + 1]) end
  return o, pos
end

-- -- Scripts --------------------------------------------------------------------------------------
-- M.script(spec) -> the options of the script that calls it (an example's --width): on its own
-- (luajit S.lua, cuasync run S.lua) from its arguments; while `cuasync sweep S.lua` loads it
-- (M.loading), in one parse with the command's options. One marked alone = true is read on its
-- own only: it feeds the script's own run and outputs (--out, --gpus), which the command does.
function M.script(spec)
  local path = debug.getinfo(2, "S").source:match("^@(.*)$") or "script"
  spec.name = spec.name or path:match("[^/]*$")
  local L = M.loading
  if not L then
    spec.program = spec.program or ("luajit " .. path)
    spec.prefix = spec.prefix or spec.name
    if spec.sweep then   -- the same file through the command: its options beside these
      spec.about = (spec.about and spec.about .. "\n" or "") .. ("  also: cuasync sweep %s [options], these beside the"
        .. " command's (cuasync sweep --help)"):format(path)
    end
    return (M.parse(spec, { unpack(arg or {}) }))
  end
  local both, taken = { name = L.spec.name, usage = L.spec.usage, about = L.spec.about, options = {} }, {}
  for _, e in ipairs(L.spec.options) do
    both.options[#both.options + 1] = e
    if type(e) == "table" then taken[entry(e).name] = true end
  end
  both.options[#both.options + 1] = ("options of %s:"):format(path)
  for _, e in ipairs(spec.options or {}) do
    if type(e) == "table" and not entry(e).alone then
      if taken[e.name] then
        error(("cuasync.cli: %s's option --%s is also cuasync %s's: mark it alone = true (read on its own only) or rename it"):format(
          path, e.name, L.spec.name), 2)
      end
      both.options[#both.options + 1] = e
    end
  end
  L.values, L.args = M.parse(both, L.argv)
  return L.values
end

M.item = item

return M
