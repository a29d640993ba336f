-- Programmatic dependent launch checked from the compiled code (the PTX reading is
-- model/pdl.lua's): a kernel launched or prepared with programmatic = true whose PTX never
-- reaches griddepcontrol.wait is refused by name before the driver sees it; a programmatic
-- launch after a kernel that never calls griddepcontrol.launch_dependents gets a note (no overlap
-- gained); a kernel whose code cannot be read gets a note and launches as asked. The same facts
-- come back from cuasync.pdl.check(prog, kernel) with no GPU, and annotate G:dot().
-- Cost: the PTX is parsed once per compiled image, a kernel's facts are read once per kernel
-- object (k.pdl), and a check runs once per prepared config; a launch only stores itself as its
-- stream's last kernel, and a programmatic one looks that up.
local model = require("cuasync.model.pdl")
local util = require("cuasync.util")
local streams = require("cuasync.stream")
local fs = require("cuasync.fs")

local M = {}

local parsed = setmetatable({}, { __mode = "k" })   -- compile entry -> model.parse of its PTX

-- The facts of PTX entry `lowered` in compile entry `entry` of program `pname`:
-- model.scan's table with known = true, or { known = false, why } where there is nothing to read.
local function facts(entry, lowered, pname)
  if not entry.ptx then
    return { known = false, why = ("program %s has no PTX to read: its module holds a cubin alone"):format(pname) }
  end
  local P = parsed[entry]
  if not P then P = model.parse(entry.ptx); parsed[entry] = P end
  local r = model.scan(P, lowered)
  if not r then
    return { known = false, why = ("the PTX of program %s defines no entry '%s'"):format(pname, lowered) }
  end
  r.known = true
  return r
end

-- A kernel object's facts, read once per kernel (k.pdl).
function M.of_kernel(k)
  local r = k.pdl
  if r == nil then
    r = facts(k.module.entry, k.lowered, k.module.name)
    k.pdl = r
  end
  return r
end

-- -- The launch path ---------------------------------------------------------------------------

-- stream key -> the kernel launched last on that stream through cuasync (weak: a kernel
-- dropped by its script is not kept for this). A copy, a fill or a graph replay between two
-- launches is not seen.
M.last = setmetatable({}, { __mode = "v" })

-- Kernel:prepare's check of a checked config c: refuses programmatic = true on a kernel whose
-- PTX has no wait (a note where there is no PTX to read). Returns the key of c's stream in M.last.
function M.prepared(k, c)
  if c.programmatic then
    local r = M.of_kernel(k)
    if not r.known then util.note(model.unchecked(k.name, "wait", r.why))
    elseif not r.wait then util.fail("launch", model.refusal(k.name, r)) end
  end
  return c.stream == nil and "" or streams.key(c.stream)
end

-- A programmatic launch of k after prev on its stream: the note, once per pair, when prev never
-- triggers (a note where prev's code cannot be read).
function M.follows(prev, k)
  if prev == nil or prev == k.pdl_after or prev.generation ~= k.generation then return end
  k.pdl_after = prev
  local r = M.of_kernel(prev)
  if not r.known then util.note(model.unchecked(prev.name, "launch_dependents", r.why))
  elseif not r.launch_dependents then util.note(model.idle_primary(prev.name, k.name)) end
end

-- Every launch through a prepared runner: k is now its stream's last kernel; a programmatic
-- launch first looks at the one before it.
function M.launched(skey, k, programmatic)
  local last = M.last
  if programmatic then M.follows(last[skey], k) end
  last[skey] = k
end

-- -- Graphs ----------------------------------------------------------------------------------------

-- A capture's keep list (its record's, which the graph keeps as G.keep) -> { prev, nodes }:
-- each programmatic kernel node with what was found, and its primary where the node before it
-- is a kernel (a programmatic edge joins kernel nodes only).
local captured = setmetatable({}, { __mode = "k" })

local function side(k, field)
  local r = M.of_kernel(k)
  return { kernel = k.name, [field] = r[field], why = r.why }   -- nil where the code cannot be read
end

-- Kernel k launched into the open capture rec as the last node of its list (the graph's, or a
-- conditional body's: numbered within that list, as G.nodes[i] is, and its primary looked for
-- in the same list).
function M.node(rec, k, programmatic)
  local t = captured[rec.keep]
  if not t then t = { nodes = {}, prev = setmetatable({}, { __mode = "k" }) }; captured[rec.keep] = t end
  local list = rec.list
  local node = #list
  if programmatic then
    local e = side(k, "wait")
    e.node, e.body = node, (rec.depth or 0) > 0
    local p = t.prev[list]
    if p and p.node == node - 1 then
      e.primary = side(p.k, "launch_dependents")
      e.primary.node = p.node
    end
    t.nodes[#t.nodes + 1] = e
  end
  t.prev[list] = { k = k, node = node }
end

local function quoted(s) return '"' .. s:gsub('[\\"]', "\\%0"):gsub("\n", "\\n") .. '"' end

-- The dot lines for the programmatic nodes of a graph (its keep list): a note box each, inside
-- one cluster; none for a graph without them.
function M.dot_lines(keep)
  local t = keep and captured[keep]
  if not t or #t.nodes == 0 then return {} end
  local out = { "  subgraph cluster_cuasync_pdl {",
                '    label = "cuasync: programmatic dependent launch, checked from the PTX"; style = "dashed";' }
  for i, e in ipairs(t.nodes) do
    local lines = { ("%snode %d '%s' (programmatic = true)"):format(e.body and "a conditional body's " or "", e.node, e.kernel) }
    lines[2] = e.wait and ("waits: calls " .. model.WAIT) or ("not checked: " .. tostring(e.why))
    local p, warn = e.primary, e.wait == nil
    if not p then
      lines[3] = ("node %d is not a kernel: nothing to overlap with"):format(e.node - 1)
    elseif p.launch_dependents then
      lines[3] = ("after node %d '%s': it calls %s"):format(p.node, p.kernel, model.TRIGGER)
    else
      warn = true
      lines[3] = p.why and ("after node %d '%s': not checked: %s"):format(p.node, p.kernel, p.why)
                 or ("after node %d '%s': it never calls %s: no overlap gained"):format(p.node, p.kernel, model.TRIGGER)
    end
    out[#out + 1] = ("    cuasync_pdl_node_%s [shape = \"note\", color = %s, label = %s];"):format(
      e.body and ("body_" .. i) or tostring(e.node), warn and '"orange"' or '"darkgreen"', quoted(table.concat(lines, "\n")))
  end
  out[#out + 1] = "  }"
  return out
end

-- G:dot's annotation: the lines above written into the driver's file at path, before its last '}'.
function M.annotate_dot(path, keep)
  local lines = M.dot_lines(keep)
  if #lines == 0 then return end
  local text, why = fs.read(path)
  local at = text and text:match(".*()}")
  if not at then util.fail("graph.dot", ("cannot add the PDL check to %s: %s"):format(path, why or "no closing '}' in the driver's file")) end
  local ok, werr = fs.write_atomic(path, text:sub(1, at - 1) .. table.concat(lines, "\n") .. "\n" .. text:sub(at))
  if not ok then util.fail("graph.dot", ("cannot add the PDL check to %s: %s"):format(path, werr)) end
end

-- -- cuasync.pdl.check -----------------------------------------------------------------------------

local function with_texts(r, name)
  r.kernel = name
  if r.known then
    if not r.wait then r.refusal = "cuasync.launch: " .. model.refusal(name, r) end
    if not r.launch_dependents then r.note = model.idle_primary(name) end
  else
    r.note = model.unchecked(name, "wait", r.why)
  end
  return r
end

-- cuasync.pdl.check(prog[, kernel]) -> the facts of one kernel (a name or name expression of a
-- cuasync.program or a module), or of every kernel of prog by name. A program not compiled yet
-- is built (NVRTC, cached: no GPU needed); a kernel object may be given alone.
function M.check(prog, kernel)
  if type(prog) ~= "table" then
    util.fail("pdl.check", ("prog must be a cuasync.program{...}, a module or a kernel (got %s)"):format(util.describe(prog)))
  end
  if prog.module and prog.lowered and kernel == nil then   -- a kernel object
    local r = {}   -- a copy, two levels deep: the kernel's own facts stay as read
    for k, v in pairs(M.of_kernel(prog)) do
      if type(v) == "table" then
        local c = {}
        for kk, vv in pairs(v) do c[kk] = type(vv) == "table" and { unpack(vv) } or vv end
        v = c
      end
      r[k] = v
    end
    return with_texts(r, prog.name)
  end
  local entry = prog.entry
  if not entry then
    if type(prog.build) ~= "function" or type(prog.source) ~= "string" then
      util.fail("pdl.check", ("prog must be a cuasync.program{...}, a module or a kernel (got %s)"):format(util.describe(prog)))
    end
    entry = prog:build()
  end
  local pname = prog.name
  if kernel ~= nil then
    local name = util.cstring("pdl.check", "kernel", kernel)
    local r = facts(entry, entry.lowered[name] or name, pname)
    if entry.ptx and not r.known then
      parsed[entry] = parsed[entry] or model.parse(entry.ptx)
      local names = parsed[entry].order
      util.fail("pdl.check", ("program %s has no kernel '%s' (its kernels: %s; a C++ name needs the program's expressions)"):format(
        pname, name, #names > 0 and table.concat(names, ", ") or "none"))
    end
    return with_texts(r, name)
  end
  local out, by_lowered = {}, {}
  for expr, l in pairs(entry.lowered) do by_lowered[l] = expr end
  if not entry.ptx then return out, facts(entry, "", pname).why end
  parsed[entry] = parsed[entry] or model.parse(entry.ptx)
  for _, l in ipairs(parsed[entry].order) do
    local n = by_lowered[l] or l
    out[n] = with_texts(facts(entry, l, pname), n)
  end
  return out
end

return M
