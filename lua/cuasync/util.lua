-- Argument checks shared by the public functions. Each raises "cuasync.<where>: <what> (<rule>)"
-- at the user's line: the first stack frame outside lua/cuasync/, found by walking the stack, so
-- no caller counts levels by hand. Pure Lua: model/ may use it.
local errors = require("cuasync.errors")

local M = {}

-- The directory holding this library's modules ("lua/" in a checkout, the LuaRocks tree when
-- installed): frames whose source starts with it are the library's own.
local here = debug.getinfo(1, "S").source
local LIB = here:match("^@(.*[/\\])cuasync[/\\]util%.lua$")
LIB = LIB and ("@" .. LIB .. "cuasync") or "@lua/cuasync"

local function library_frame(src)
  return src:sub(1, #LIB) == LIB or src:sub(1, 9) == "=cuasync." or src == "=[C]" or src == "=(tail call)"
end

-- Walk the stack outward from the caller of the util function that calls walk: each(info,
-- level) for every frame (level as error() counts it from that util function) until each returns
-- a value other than nil, which walk returns (false: found, but nothing to give); nil at the end.
local function walk(what, each)
  local level = 4   -- 1 walk, 2 the util function, 3 its caller in the library
  while true do
    local info = debug.getinfo(level, what)
    if not info then return nil end
    local v = each(info, level - 1)
    if v ~= nil then return v end
    level = level + 1
  end
end

-- The stack level (as error() counts it, seen from the caller of user_level) of the first frame
-- outside the library; 1 when the whole stack is the library's.
function M.user_level()
  return walk("S", function(info, level) if not library_frame(info.source) then return level - 1 end end) or 1
end

-- Public functions by their public name ("alloc", "program.compile"): the façade and
-- util.methods register them, so a failure deep inside can name the call the user made.
M.public = setmetatable({}, { __mode = "k" })

-- The public name of the outermost library frame below the user's (the call the user made), or nil.
function M.entry_name()
  local name
  return walk("Sf", function(info)
    if not library_frame(info.source) then return name or false end
    name = M.public[info.func] or name
  end) or nil
end

-- "file:line" of the user's frame, or nil.
function M.user_where()
  return walk("Sl", function(info)
    if library_frame(info.source) then return nil end
    return info.currentline and info.currentline > 0 and (info.short_src .. ":" .. info.currentline) or false
  end) or nil
end

-- The file of the user's frame (the script a sweep worker re-runs), or nil.
function M.user_file()
  local file = walk("S", function(info)   -- not a tail call: walk counts this frame
    if not library_frame(info.source) and info.source:sub(1, 1) == "@" then return info.source:sub(2) end
  end)
  return file
end

-- A set's keys, sorted, joined by ", " (the names a message offers).
function M.sorted_keys(set)
  local t = {}
  for k in pairs(set) do t[#t + 1] = tostring(k) end
  table.sort(t)
  return table.concat(t, ", ")
end

-- Quote a value for a message, never more than `max` characters of it (default 80).
local function describe(v, max)
  max = max or 80
  local s
  if type(v) == "string" then
    local cut = #v > max and v:sub(1, max) or v
    s = ("%q"):format(cut):gsub("\\\n", "\\n"):gsub("%z", "\\0")
    if #v > max then s = s .. ("... (%d bytes)"):format(#v) end
    return s
  end
  if type(v) == "number" and v == math.floor(v) and math.abs(v) >= 2 ^ 53 and v == v
     and math.abs(v) ~= math.huge then
    return ("%.17g"):format(v)
  end
  if type(v) == "table" and getmetatable(v) == nil then   -- its keys say more than its address
    local keys = {}
    for k in pairs(v) do
      if #keys == 6 then keys[#keys + 1] = "..." break end
      keys[#keys + 1] = type(k) == "string" and k or ("[" .. tostring(k) .. "]")
    end
    if #keys == 0 then return "an empty table" end
    table.sort(keys, function(a, b) return a ~= "..." and (b == "..." or a < b) end)
    s = "a table with " .. table.concat(keys, ", ")
  elseif type(v) == "function" then
    return "a function"
  else
    s = tostring(v)
  end
  if #s > max then s = s:sub(1, max) .. "..." end
  return s
end
M.describe = describe

-- The position error(msg, level) puts in front of a string ("file.lua:12: ", or "" where the
-- frame has no line), for a level counted from the caller of position.
local function position(level)
  local info = debug.getinfo(level + 1, "Sl")
  if info and info.what ~= "C" and info.currentline >= 0 then return info.short_src .. ":" .. info.currentline .. ": " end
  return ""
end

-- Raise "cuasync.<where>: <msg>" at the user's line: the stack decides (util.user_level), no
-- caller counts levels. A refusal of a kind (errors.lua: fields.kind, or the kind of the call,
-- "plan" for cuasync.pipeline and its methods) raises an error object carrying fields, whose
-- tostring is the same text, position included.
function M.fail(where, msg, fields)
  if #msg > 60000 then msg = msg:sub(1, 60000) .. "... (message cut)" end
  local text = "cuasync." .. where .. ": " .. msg
  local level = M.user_level()
  local kind = fields and fields.kind or errors.of_call(where)
  if not kind then error(text, level) end
  local e = fields or {}
  e.message, e.position = text, position(level)
  error(errors.new(kind, e), 0)
end

-- An integer a double holds exactly (|v| <= 2^53).
function M.is_integer(v)
  return type(v) == "number" and v == math.floor(v) and v >= -2 ^ 53 and v <= 2 ^ 53
end

-- A positive integer (or, with allow_zero, a non-negative one), at most 2^53.
function M.count(where, name, v, allow_zero)
  if not M.is_integer(v) or v < 0 or (v == 0 and not allow_zero) then
    M.fail(where, ("%s must be a %s integer (got %s)"):format(name, allow_zero and "non-negative"
           or "positive", describe(v)))
  end
  return v
end

-- An integer in lo..hi.
function M.int_in(where, name, v, lo, hi)
  if not M.is_integer(v) or v < lo or v > hi then
    M.fail(where, ("%s must be an integer in %s..%s (got %s)"):format(name, describe(lo), describe(hi),
           describe(v)))
  end
  return v
end

function M.kind(where, name, v, want)
  if type(v) ~= want then
    M.fail(where, ("%s must be a %s (got %s)"):format(name, want, type(v)))
  end
  return v
end

-- A string with no NUL byte (the C side would cut it there).
function M.cstring(where, name, v)
  M.kind(where, name, v, "string")
  local at = v:find("\0", 1, true)
  if at then M.fail(where, ("%s must not contain a NUL byte (found at byte %d)"):format(name, at)) end
  return v
end

-- A proper list: keys exactly 1..#t, so a nil hole or a map-style key is refused, never dropped.
function M.list(where, name, t)
  M.kind(where, name, t, "table")
  local n = 0
  for k in pairs(t) do
    n = n + 1
    if type(k) ~= "number" or not M.is_integer(k) or k < 1 then
      M.fail(where, ("%s must be a list (found key %s)"):format(name, describe(k)))
    end
  end
  if n ~= #t then
    M.fail(where, ("%s must be a list without holes (%d entries, but #%s = %d)"):format(name, n, name, #t))
  end
  return t
end

-- Guard every method of a class against a call with a dot (obj.compile() instead of
-- obj:compile()), which would otherwise index a nil self deep inside: the message names the
-- colon form. `var` is how the docs name an instance ("prog", "P"). Call once, after the
-- methods are defined; the wrapper's call is a tail call (no extra frame).
function M.methods(class, where, var)
  local wrapped = {}
  for name, f in pairs(class) do
    if type(f) == "function" and name:sub(1, 2) ~= "__" then
      wrapped[name] = function(self, ...)
        if getmetatable(self) ~= class then
          M.fail(where .. "." .. name, ("call it as %s:%s(...), with a colon (self was %s)"):format(var, name, describe(self)))
        end
        return f(self, ...)
      end
      M.public[f], M.public[wrapped[name]] = where .. "." .. name, where .. "." .. name
    end
  end
  for name, w in pairs(wrapped) do class[name] = w end
  return class
end

-- A NULL cdata compares equal to nil, so a check `v == nil` takes it for "not given". Refuse it
-- by name where an argument may be left out (give: what to pass instead, "a table").
function M.not_null(where, name, v, give)
  if type(v) == "cdata" and v == nil then
    M.fail(where, ("%s is a NULL pointer (a NULL cdata reads as nil: give %s, or leave it out)"):format(name, give or "a value"))
  end
  return v
end

local function null_field(where, k, v, what)
  if type(v) == "cdata" and v == nil then
    M.fail(where, ("%s%s is a NULL pointer (a NULL cdata reads as nil: give a value, or leave the field out)"):format(tostring(k),
           type(what) == "string" and (" in " .. what) or ""))
  end
end

-- Refuse any field of t given as a NULL cdata (it would read as not given), by its name.
function M.null_fields(where, t, what)
  for k, v in pairs(t) do null_field(where, k, v, what) end
end

-- Reject fields a table does not know, so a typo never silently does nothing. `what` (a string)
-- names a nested table in the message ("unknown field 'x' in producer").
function M.known_fields(where, t, allowed, what)
  for k, v in pairs(t) do
    -- a NULL cdata compares equal to nil: a field given as NULL would read as not given
    if allowed[k] then null_field(where, k, v, what) end
    if not allowed[k] then
      local key = type(k) == "string" and ("'%s'"):format((#k > 40 and k:sub(1, 40) .. "..." or k):gsub("%c", "?"))
                  or describe(k)
      M.fail(where, ("unknown field %s%s (fields: %s)"):format(key, type(what) == "string" and (" in " .. what) or "",
             M.sorted_keys(allowed)))
    end
  end
end

-- -- Notes --------------------------------------------------------------------------------------
-- What a user should know that is no error (a programmatic launch that gains no overlap, a check
-- that could not run): said once per process on stderr, as a deprecation is, and kept in order
-- in M.notes for a script or a spec to read. Returns true the first time a text is said.
M.notes = {}
local said = {}

function M.note(text)
  if said[text] then return false end
  said[text] = true
  M.notes[#M.notes + 1] = text
  io.stderr:write("cuasync: note: ", text, "\n")
  return true
end

-- -- Deprecated names ---------------------------------------------------------------------------
-- A public name is never removed or renamed in one step (DESIGN.md): the old name stays, for at
-- least one release, as an alias that says once per process, on stderr, what replaces it, and
-- CHANGELOG.md says what changed. spec/house/surface_spec.lua reads M.deprecations to tell an
-- alias from a removal; a deprecated method is written `Class.old = util.deprecated(...)`.

local warned = {}

-- Say once per process that `old` is deprecated and `new` replaces it.
function M.deprecation(old, new)
  if warned[old] then return end
  warned[old] = true
  io.stderr:write(("cuasync: %s is deprecated: use %s (the old name goes in a later release; see CHANGELOG.md)\n"):format(old, new))
end

-- The aliases util.deprecated made: alias -> { old = name, new = name }.
M.deprecations = setmetatable({}, { __mode = "k" })

-- fn under its old public name: the same call, which warns once (util.deprecation) first.
--   M.old_name = util.deprecated("cuasync.old_name", "cuasync.new_name", M.new_name)
function M.deprecated(old, new, fn)
  M.cstring("deprecated", "old", old)
  M.cstring("deprecated", "new", new)
  M.kind("deprecated", "fn", fn, "function")
  local alias = function(...)
    M.deprecation(old, new)
    return fn(...)
  end
  M.deprecations[alias] = { old = old, new = new }
  return alias
end

return M
