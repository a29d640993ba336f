-- What a kernel's PTX says about programmatic dependent launch, read from the text alone (pure
-- Lua, no GPU): whether an entry, or a .func it calls (transitively), holds griddepcontrol.wait
-- (a dependent must, before it reads the primary's output) and griddepcontrol.launch_dependents
-- (a primary's trigger, without which its dependent starts only as its blocks exit), and the
-- refusal and note texts the core raises and says from these facts (lua/cuasync/pdl.lua).
-- Inlined device code sits in the entry's body; a .func is reached through `call`. What is
-- checked is presence, not that every path reaches the instruction.
local M = {}

M.WAIT, M.TRIGGER = "griddepcontrol.wait", "griddepcontrol.launch_dependents"
local NAME = "[%a_$%%][%w_$]*"   -- a PTX identifier (followsym: letters, digits, _ and $)

-- -- The text ------------------------------------------------------------------------------------

-- ptx without its // and /* */ comments (an instruction named only in a comment is not there);
-- a quoted string (.file's path may hold "//") is kept whole.
function M.strip(ptx)
  local out, pos, n = {}, 1, #ptx
  while pos <= n do
    local at = ptx:find('[/"]', pos)
    if not at then out[#out + 1] = ptx:sub(pos); break end
    local c, nxt = ptx:sub(at, at), ptx:sub(at + 1, at + 1)
    local stop, keep
    if c == '"' then   -- to the closing quote, over \" escapes
      stop = at + 1
      while stop <= n do
        stop = ptx:find('[\\"]', stop) or n
        if ptx:sub(stop, stop) ~= "\\" then break end
        stop = stop + 2
      end
      stop, keep = math.min(stop, n), true
    elseif nxt == "/" then
      stop = (ptx:find("\n", at + 2, true) or n + 1) - 1   -- the newline stays
    elseif nxt == "*" then
      local _, e = ptx:find("*/", at + 2, true)
      stop = e or n
    else
      stop, keep = at, true
    end
    out[#out + 1] = ptx:sub(pos, at - 1)
    out[#out + 1] = keep and ptx:sub(at, stop) or " "
    pos = stop + 1
  end
  return table.concat(out)
end

-- The index of the brace that closes the one at `open` in s (the end of s when unbalanced).
local function closing(s, open)
  local depth, pos = 0, open
  while true do
    local at = s:find("[{}]", pos)
    if not at then return #s end
    depth = depth + (s:sub(at, at) == "{" and 1 or -1)
    if depth == 0 then return at end
    pos = at + 1
  end
end

-- The name after a function's keyword at `at` in h, over what may stand before it: a return
-- parameter list and attributes (.func .attribute(.unified(...)) (.param .b32 r) name).
local function name_after(h, at)
  while true do
    at = h:find("%S", at)
    if not at then return nil end
    local c = h:sub(at, at)
    if c == "(" then
      at = select(2, h:find("^%b()", at)); if not at then return nil end
      at = at + 1
    elseif c == "." then
      local _, e = h:find("^%.[%w_]+", at)
      if not e then return nil end
      at = e + 1
    else
      return h:match("^" .. NAME, at)
    end
  end
end

-- The function a top-level statement's header declares: kind ("entry" | "func") and name, or nil.
local function declared(header)
  local h = " " .. header
  local _, e = h:find("%s%.entry%s")
  if e then return "entry", name_after(h, e) end
  _, e = h:find("%s%.func[%s(]")
  if e then return "func", name_after(h, e) end
end

-- M.parse(ptx) -> { entries = { [name] = body }, funcs = { [name] = body }, order = { entry names } }:
-- the bodies of the functions the module defines (a prototype ending in ';' has none).
function M.parse(ptx)
  local s = M.strip(ptx)
  local P = { entries = {}, funcs = {}, order = {} }
  local pos, n = 1, #s
  while pos <= n do
    local at = s:find("[{;]", pos)
    if not at then break end
    local kind, name = declared(s:sub(pos, at - 1))
    if s:sub(at, at) == ";" then
      pos = at + 1
    else
      local close = closing(s, at)
      if kind and name then
        local into = kind == "entry" and P.entries or P.funcs
        if kind == "entry" and not into[name] then P.order[#P.order + 1] = name end
        into[name] = s:sub(at + 1, close - 1)
        pos = close + 1
      else   -- an initializer (.global .b8 x[2] = {1, 2};): its statement goes on to the ';'
        local semi = s:find(";", close + 1, true)
        pos = (semi or n) + 1
      end
    end
  end
  return P
end

-- -- One body --------------------------------------------------------------------------------------

local function count(body, instr)
  local pat = "%f[%w_$.]" .. instr:gsub("%.", "%%.") .. "%f[^%w_$.]"
  local k = 0
  for _ in body:gmatch(pat) do k = k + 1 end
  return k
end

-- { wait = n, launch_dependents = n, calls = { names }, indirect = bool } of one body.
local function facts(body)
  local f = { wait = count(body, M.WAIT), launch_dependents = count(body, M.TRIGGER), calls = {}, indirect = false }
  local pos = 1
  while true do
    local _, e = body:find("%f[%w_$.]call[%.%a]*%s+", pos)
    if not e then break end
    local rest = body:sub(e + 1, e + 400)
    local target = rest:match("^%b()%s*,%s*(" .. NAME .. ")") or rest:match("^(" .. NAME .. ")")
    if target and target:sub(1, 1) == "%" then f.indirect = true   -- through a register
    elseif target then f.calls[#f.calls + 1] = target end
    pos = e + 1
  end
  return f
end

local function facts_of(P, kind, name)
  P.facts = P.facts or { entry = {}, func = {} }
  local cache = P.facts[kind]
  if not cache[name] then cache[name] = facts((kind == "entry" and P.entries or P.funcs)[name]) end
  return cache[name]
end

-- -- An entry and what it calls ----------------------------------------------------------------------

local function sorted(set)
  local t = {}
  for k in pairs(set) do t[#t + 1] = k end
  table.sort(t)
  return t
end

-- M.scan(P, entry) -> nil when P defines no such entry, else
--   { entry, wait = bool, launch_dependents = bool, counts = { wait = n, launch_dependents = n },
--     found_in = { wait = { names }, launch_dependents = { names } }, calls = { .func names reached },
--     external = { called but not defined here }, indirect = bool }
-- An indirect call (through a register) may reach any .func of the module: all are counted as
-- reached, so a wait anywhere in the module counts (a refusal must never be a guess).
function M.scan(P, entry)
  if not P.entries[entry] then return nil end
  local reached, external, indirect = {}, {}, false
  local queue = { { "entry", entry } }
  local r = { entry = entry, counts = { wait = 0, launch_dependents = 0 }, found_in = { wait = {}, launch_dependents = {} } }
  local i = 1
  while queue[i] do
    local kind, name = queue[i][1], queue[i][2]
    i = i + 1
    local f = facts_of(P, kind, name)
    for _, what in ipairs({ "wait", "launch_dependents" }) do
      if f[what] > 0 then
        r.counts[what] = r.counts[what] + f[what]
        r.found_in[what][#r.found_in[what] + 1] = name
      end
    end
    local targets = f.calls
    if f.indirect and not indirect then
      indirect, targets = true, sorted(P.funcs)
      for _, t in ipairs(f.calls) do targets[#targets + 1] = t end
    end
    for _, t in ipairs(targets) do
      if P.funcs[t] then
        if not reached[t] then reached[t] = true; queue[#queue + 1] = { "func", t } end
      else
        external[t] = true
      end
    end
  end
  r.wait, r.launch_dependents = r.counts.wait > 0, r.counts.launch_dependents > 0
  r.calls, r.external, r.indirect = sorted(reached), sorted(external), indirect
  return r
end

-- M.check(ptx, entry): parse and scan in one call (nil when the PTX defines no such entry).
function M.check(ptx, entry) return M.scan(M.parse(ptx), entry) end

-- -- What the core says --------------------------------------------------------------------------------

local function where(r)
  local n = #r.calls
  if n == 0 then return "in its entry, which calls no function" end
  return ("in its entry nor in the %d function%s it calls"):format(n, n == 1 and "" or "s")
end

-- The refusal of programmatic = true on a kernel whose PTX has no wait (name: the kernel's name).
function M.refusal(name, r)
  return ("programmatic = true: kernel '%s' never waits for the grid before it (its PTX has no %s %s): its reads of the primary's output would race (call cuasync::pdl::wait() before it reads what the grid before it wrote, or leave programmatic out)"):format(
    name, M.WAIT, where(r))
end

-- The note on a primary that never triggers, followed by a programmatic dependent (nil: any).
function M.idle_primary(primary, dependent)
  local d = dependent and ("kernel '%s'"):format(dependent) or "a kernel"
  return ("programmatic = true on %s launched after kernel '%s' gains no overlap: '%s' never calls %s, so its dependent starts only as its blocks exit (call cuasync::pdl::launch_dependents() in '%s' once its dependent may start)"):format(
    d, primary, primary, M.TRIGGER, primary)
end

-- The note on a kernel whose code cannot be read (role: "wait" for a dependent, "launch_dependents"
-- for a primary; why: why there is nothing to read).
function M.unchecked(name, role, why)
  return ("programmatic dependent launch: cannot tell whether kernel '%s' calls %s: %s (not checked; launched as asked)"):format(
    name, role == "wait" and M.WAIT or M.TRIGGER, why)
end

return M
