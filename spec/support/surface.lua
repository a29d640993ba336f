-- The public surface: every public Lua name (reachable from require("cuasync"), the lazily loaded
-- tools included, as spec/house/docs_spec.lua walks them), every method of the public objects, and
-- every device-header function docs/device.md lists (its C++ signature as printed there). Pinned
-- in spec/support/surface.txt, one line each; spec/house/surface_spec.lua compares the tree with it.
--
-- A line:   LAYER | KIND | NAME | SIGNATURE [| deprecated VERSION]
--   lua | function | cuasync.alloc | (bytes)          a function and the parameters it declares
--   lua | method | Program:compile | ()               a method (`function Class:name(...)`)
--   lua | table | cuasync.cache |                     anything else: its type
--   device | cuasync/ring.cuh | pipeline_ring<Stages>::producer_commit | void producer_commit(const state &st)
-- "deprecated VERSION": an alias since the release VERSION (cuasync.version when it was pinned).
--
-- The rules (compare):
--   - a pinned name missing from the tree fails ("removed"), unless it was pinned as deprecated and
--     cuasync.version is now later than the release it was deprecated in ("retired": it stayed a
--     release); a device signature missing while the name has others fails as "changed";
--   - a Lua name whose kind changed, or a function that takes fewer parameters (or lost its `...`),
--     fails ("changed"); more parameters or a new `...` is compatible ("widened"), and so is a
--     function become a table callable with at least its parameters (`__call`; cuasync.graph);
--   - a name the pin lacks is "added" (reported; CUASYNC_SURFACE=update pins it);
--   - a deprecated alias: Lua, util.deprecated(old, new, fn) (a method: `Class.old =
--     util.deprecated(...)` in its file); device, `[[deprecated("...")]]` on its own line above the
--     function (comments between are fine: docs/device.md then shows the comment).
-- update() never drops a removed or changed name: the pin keeps it and the spec keeps failing.
local fs = require("cuasync.fs")
local util = require("cuasync.util")
local device_doc = require("cuasync.tools.device_doc")

local M = {}

M.PIN = "spec/support/surface.txt"

-- Files whose classes no user reaches (the sweep's internals): their methods are not public.
M.INTERNAL = { ["lua/cuasync/tools/sweep/space.lua"] = true, ["lua/cuasync/tools/sweep/rng.lua"] = true,
               ["lua/cuasync/tools/sweep/runners/init.lua"] = true, ["lua/cuasync/tools/sweep/memo.lua"] = true,
               ["lua/cuasync/tools/sweep/compile.lua"] = true }

local function read(path)
  local text, why = fs.read(path)
  if not text then error(why, 0) end
  return text
end

-- The names init.lua loads on first use (its LAZY table).
function M.lazy_names(init_file)
  local t = {}
  for k in read(init_file or "lua/cuasync/init.lua"):match("local LAZY = (%b{})"):gmatch("([%w_]+) = {") do t[#t + 1] = k end
  return t
end

-- Every .lua file under dir, sorted.
local function lua_files(dir, out)
  out = out or {}
  for _, n in ipairs(assert(fs.list(dir))) do
    local p = dir .. "/" .. n
    if fs.kind(p) == "dir" then lua_files(p, out)
    elseif n:match("%.lua$") then out[#out + 1] = p end
  end
  table.sort(out)
  return out
end

-- The public methods: { file, class, name, params, deprecated } for each `function Class:name(`
-- (and each `Class.name = util.deprecated(`) outside types/ and the internal files.
function M.methods(dir)
  local out, seen = {}, {}
  for _, file in ipairs(lua_files(dir or "lua/cuasync")) do
    if not M.INTERNAL[file] and not file:match("/types/") then
      for line in (read(file) .. "\n"):gmatch("([^\n]*)\n") do
        local cls, name, params = line:match("^function ([%a_]+):([a-z_][%w_]*)%s*%(([^)]*)%)")
        local deprecated = false
        if not cls then
          cls, name = line:match("^([%a_]+)%.([a-z_][%w_]*)%s*=%s*util%.deprecated%(")
          params, deprecated = "...", true
        end
        if cls and name:sub(1, 2) ~= "__" then
          local key = cls .. ":" .. name
          if seen[key] then error(("%s is defined in %s and %s: the surface cannot tell them apart"):format(key, seen[key], file), 0) end
          seen[key] = file
          out[#out + 1] = { file = file, class = cls, name = name, params = params, deprecated = deprecated }
        end
      end
    end
  end
  return out
end

local function entry(layer, kind, name, sig, deprecated)
  local e = { layer = layer, kind = kind, name = name, sig = sig or "", deprecated = deprecated or nil }
  e.key = layer == "device" and (name .. " | " .. e.sig) or name
  return e
end

-- A function's declared parameters, "(a, b, ...)".
local function params_of(f)
  local info = debug.getinfo(f, "u")
  local names = {}
  for i = 1, info.nparams or 0 do names[i] = debug.getlocal(f, i) or ("_" .. i) end
  if info.isvararg then names[#names + 1] = "..." end
  return "(" .. table.concat(names, ", ") .. ")"
end

local function lua_value(name, v)
  if type(v) == "function" then return entry("lua", "function", name, params_of(v), util.deprecations[v] ~= nil) end
  local e = entry("lua", type(v), name)
  local mt = type(v) == "table" and getmetatable(v)
  if type(mt) == "table" and type(mt.__call) == "function" then
    e.call = params_of(mt.__call):gsub("^%([^,)]*,? ?", "(")   -- its call's parameters, less the table itself
  end
  return e
end

-- The Lua names of module m: its keys (and the lazy ones), their tables' string keys, and for
-- model and limits their tables' keys too (model.swizzle is cuasync.swizzle, walked once;
-- limits.sm_90's fields are the limits a check without a GPU reads) — the walk docs_spec reads
-- (M.names) — and the methods found under dir.
function M.lua(m, lazy, dir, methods)
  local out, keys, seen = {}, {}, {}
  for _, k in ipairs(lazy or {}) do local _ = m[k] end   -- loads them
  for k in pairs(m) do if type(k) == "string" then keys[#keys + 1] = k end end
  for _, k in ipairs(keys) do
    local v = m[k]
    local tables = { [k] = v }
    out[#out + 1] = lua_value("cuasync." .. k, v)
    if k == "model" or k == "limits" then
      for mk, mv in pairs(v) do if type(mv) == "table" then tables[k .. "." .. mk] = mv end end
    end
    for path, t in pairs(tables) do
      if type(t) == "table" and path ~= "model.swizzle" then
        for kk, vv in pairs(t) do
          local full = "cuasync." .. path .. "." .. tostring(kk)
          if type(kk) == "string" and not seen[full] then seen[full] = true; out[#out + 1] = lua_value(full, vv) end
        end
      end
    end
  end
  for _, f in ipairs(methods or M.methods(dir)) do
    local ps = {}
    for p in f.params:gmatch("[^,%s]+") do ps[#ps + 1] = p end
    out[#out + 1] = entry("lua", "method", f.class .. ":" .. f.name, "(" .. table.concat(ps, ", ") .. ")", f.deprecated)
  end
  return out
end

local function squeeze(s) return (s:gsub("%s+", " "):gsub("%( ", "("):gsub(" %)", ")")) end

-- The functions a header marks [[deprecated]]: "name(params)" of the __device__ line that follows
-- the attribute (past comment lines).
local function deprecated_in(text)
  local set, armed = {}, false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line:find("[[deprecated", 1, true) then armed = true end
    if armed and line:find("__device__", 1, true) then
      local code = line:gsub("%[%[.-%]%]", "")
      local name, params = code:match("([%a_][%w_]*)%s*(%b())")
      if name then set[name .. squeeze(params)] = true end
      armed = false
    elseif armed and not (line:match("^%s*//") or line:match("^%s*$") or line:find("[[deprecated", 1, true)) then
      armed = false
    end
  end
  return set
end

-- The device functions of the headers under dir (kernels-src), as docs/device.md lists them.
function M.device(dir)
  local parsed, out = device_doc.parse(dir), {}
  for _, h in ipairs(parsed.headers) do
    local dep = deprecated_in(read(("%s/%s"):format(dir, h.file)))
    for _, f in ipairs(h.functions) do
      local bare = f.name:match("([%w_]+)$")
      local params = f.signature:match(bare .. "%s*(%b())")
      out[#out + 1] = entry("device", h.file, f.name, f.signature, params ~= nil and dep[bare .. squeeze(params)] == true)
    end
    for _, a in ipairs(h.aliases) do out[#out + 1] = entry("device", h.file, a.name, "using " .. a.target) end
  end
  return out
end

-- The tree's surface: the module, its lazy names, the methods under lua/cuasync, the headers.
function M.current(o)
  o = o or {}
  local out = M.lua(o.module or require("cuasync"), o.lazy or M.lazy_names(), o.lua_dir)
  for _, e in ipairs(M.device(o.kernels or require("cuasync").kernels_dir())) do out[#out + 1] = e end
  return out
end

-- -- The pin file ---------------------------------------------------------------------------

function M.parse(text)
  local out, n = {}, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if line:match("%S") and not line:match("^#") then
      local f = {}
      for part in (line .. " | "):gmatch("(.-) | ") do f[#f + 1] = part end
      local dep = f[5] and f[5]:match("^deprecated (%S+)$")
      if not (f[1] == "lua" or f[1] == "device") or #f < 3 or #f > 5 or (f[5] and not dep) then
        error(("%s:%d: not a surface line: %s"):format(M.PIN, n, line), 0)
      end
      out[#out + 1] = entry(f[1], f[2], f[3], f[4], dep)
    end
  end
  return out
end

local function sorted(entries)
  local t = {}
  for _, e in ipairs(entries) do t[#t + 1] = e end
  table.sort(t, function(a, b)
    if a.layer ~= b.layer then return a.layer > b.layer end   -- lua, then device
    if a.kind ~= b.kind and a.layer == "device" then return a.kind < b.kind end
    return a.key < b.key
  end)
  return t
end

M.HEADER = [[
# cuasync's public surface, pinned (spec/support/surface.lua says how it is read; spec/house/surface_spec.lua
# fails when a name here disappears or its signature changes, unless it stays as a deprecated alias).
# New names: `CUASYNC_SURFACE=update make test` (or busted spec/house/surface_spec.lua) pins them.
# LAYER | KIND | NAME | SIGNATURE [| deprecated VERSION]
]]

function M.format(entries)
  local o = { M.HEADER }
  for _, e in ipairs(sorted(entries)) do
    local f = { e.layer, e.kind, e.name }
    if e.sig ~= "" or type(e.deprecated) == "string" then f[4] = e.sig end
    if type(e.deprecated) == "string" then f[5] = "deprecated " .. e.deprecated end
    o[#o + 1] = table.concat(f, " | ") .. "\n"
  end
  return table.concat(o)
end

-- -- Comparing ------------------------------------------------------------------------------

-- "0.2.0" later than "0.1.0".
function M.later(a, b)
  local x, y = {}, {}
  for n in tostring(a):gmatch("%d+") do x[#x + 1] = tonumber(n) end
  for n in tostring(b):gmatch("%d+") do y[#y + 1] = tonumber(n) end
  for i = 1, math.max(#x, #y) do
    if (x[i] or 0) ~= (y[i] or 0) then return (x[i] or 0) > (y[i] or 0) end
  end
  return false
end

local function arity(sig)
  local n, vararg = 0, false
  for p in sig:gmatch("[^,()%s]+") do if p == "..." then vararg = true else n = n + 1 end end
  return n, vararg
end

-- Why the Lua entry c breaks callers of the pinned p (a string), false where it differs compatibly,
-- nil where it is the same.
local function lua_change(p, c)
  if p.kind == "function" and c.kind == "table" and c.call then   -- a function become a callable table
    c = { kind = "function", sig = c.call }
  end
  if p.kind ~= c.kind then return ("was a %s, is now a %s"):format(p.kind, c.kind) end
  if p.sig == c.sig then return nil end
  if p.kind ~= "function" and p.kind ~= "method" then return nil end
  local pn, pv = arity(p.sig)
  local cn, cv = arity(c.sig)
  if cv then return false end
  if pv then return ("took %s, now %s: no longer takes `...`"):format(p.sig, c.sig) end
  if cn < pn then return ("took %s, now %s: fewer parameters"):format(p.sig, c.sig) end
  return false
end

function M.compare(pinned, current, version)
  local cur, pin, names = {}, {}, {}
  for _, e in ipairs(current) do cur[e.key] = e; names[e.name] = names[e.name] or {}; table.insert(names[e.name], e.sig) end
  for _, e in ipairs(pinned) do pin[e.key] = e end
  local r = { removed = {}, changed = {}, widened = {}, added = {}, deprecated = {}, retired = {} }
  for _, p in ipairs(sorted(pinned)) do
    local c = cur[p.key]
    if c then
      local why = nil
      if p.layer == "lua" then why = lua_change(p, c) end
      if why then r.changed[#r.changed + 1] = { entry = p, now = c, why = why }
      elseif why == false then r.widened[#r.widened + 1] = { entry = p, now = c } end
      if c.deprecated and not p.deprecated then r.deprecated[#r.deprecated + 1] = c end
    elseif p.deprecated and M.later(version, p.deprecated) then
      r.retired[#r.retired + 1] = p
    elseif p.layer == "device" and names[p.name] then
      r.changed[#r.changed + 1] = { entry = p, why = "signature now " .. table.concat(names[p.name], "; ") }
    else
      r.removed[#r.removed + 1] = p
    end
  end
  for _, c in ipairs(sorted(current)) do if not pin[c.key] then r.added[#r.added + 1] = c end end
  r.ok = #r.removed == 0 and #r.changed == 0
  return r
end

local function show(e) return ("%s %s %s%s"):format(e.layer, e.kind, e.name, e.sig ~= "" and (" " .. e.sig) or "") end

-- What a failed comparison says: every removed and changed name, and the way out.
function M.explain(r)
  local o = {}
  for _, e in ipairs(r.removed) do
    o[#o + 1] = ("removed: %s%s"):format(show(e), e.deprecated and (" (deprecated in " .. e.deprecated .. ": it stays until a later release)") or "")
  end
  for _, c in ipairs(r.changed) do o[#o + 1] = ("changed: %s: %s"):format(show(c.entry), c.why) end
  if #o > 0 then
    o[#o + 1] = "A public name stays, as a deprecated alias, for at least one release (DESIGN.md; util.deprecated, [[deprecated(\"...\")]]),"
      .. " and CHANGELOG.md says what changed."
  end
  return table.concat(o, "\n")
end

-- What passed but is worth saying: new, newly deprecated, retired and widened names.
function M.notes(r)
  local o = {}
  for _, e in ipairs(r.added) do o[#o + 1] = "new: " .. show(e) end
  for _, e in ipairs(r.deprecated) do o[#o + 1] = "newly deprecated: " .. show(e) end
  for _, e in ipairs(r.retired) do o[#o + 1] = ("retired (deprecated in %s): %s"):format(e.deprecated, show(e)) end
  for _, w in ipairs(r.widened) do o[#o + 1] = ("widened: %s -> %s"):format(show(w.entry), w.now.sig) end
  return table.concat(o, "\n")
end

-- The pin after CUASYNC_SURFACE=update: the tree's names (a deprecated one marked with the release
-- it was first pinned deprecated in, else `version`), and every removed or changed pinned line kept
-- as it was, so the comparison still fails; retired names leave.
function M.updated(pinned, current, version)
  local r = M.compare(pinned, current, version)
  local pin, keep, out = {}, {}, {}
  for _, e in ipairs(pinned) do pin[e.key] = e end
  for _, e in ipairs(r.removed) do keep[e.key] = e end
  for _, c in ipairs(r.changed) do keep[c.entry.key] = c.entry end
  for _, c in ipairs(current) do
    if keep[c.key] then out[#out + 1] = keep[c.key]; keep[c.key] = nil
    else
      local e = entry(c.layer, c.kind, c.name, c.sig, nil)
      if c.deprecated then e.deprecated = pin[c.key] and pin[c.key].deprecated or version end
      out[#out + 1] = e
    end
  end
  for _, e in pairs(keep) do out[#out + 1] = e end
  return out, r
end

return M
