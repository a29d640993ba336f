-- The capture's builder, the second argument of cuasync.graph's function (and of G:update's):
--   g:name("relax")                 names the node the next call makes (G.nodes.relax)
--   local c = g:condition{ default = 1 }   a condition handle of the graph being captured
--   g:while_(c, function(s2, g) ... end)   a while node: its body runs while c is non-zero
--   g:while_(c, fn, { unroll = n })  fn called n times (fn(s2, g, round), round 1..n) in one body:
--                                   the node's per-round cost paid once per n copies
--   g:if_(c, then_fn[, else_fn])    an if (or if/else) node
-- A body function gets a stream of its own, capturing into the body graph (cuStreamBeginCaptureToGraph);
-- a kernel with a `cond` parameter takes c there (cuasync::graph::set_condition on the device).
-- Refused by name before the driver sees them: a driver without conditional nodes (CUDA 12.3),
-- nesting (12.4) or if/else (12.8); a condition of another capture or another graph level; a
-- builder used after its capture ended.
-- The module-level forms cuasync.graph.condition{...} / .while_(c, fn[, opts]) / .if_(c, fn[, else_fn])
-- (DESIGN.md's contract) act on the capture open now, through its builder: inside a body, on
-- that body (the record's stream is the innermost body's); outside a capture, refused by name.
local ffi = require("ffi")
local native = require("cuasync.native")
local util = require("cuasync.util")
local device = require("cuasync.device")
local streams = require("cuasync.stream")
local capture = require("cuasync.capture")
local nodes = require("cuasync.graph.nodes")
require("cuasync.cdef.graph")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

local M = {}
local GraphBuilder = {}
GraphBuilder.__index = GraphBuilder

-- The driver releases that brought each feature (cuda.h, CUDA 12.3 / 12.4 / 12.8 release notes).
M.NEEDS = { conditional = 12030, nested = 12040, if_else = 12080 }

local function open(self, where)
  local rec = capture.state.active
  if rec ~= self.rec then
    util.fail(where, "this builder belongs to a capture that has ended (use the g given to the function now running)")
  end
  return rec
end

local function needs(where, what, version)
  local have = device.driver_version()
  if have < version then
    util.fail(where, ("%s need a CUDA %d.%d driver or newer (this one is %d.%d)"):format(what,
      math.floor(version / 1000), math.floor(version % 1000 / 10), math.floor(have / 1000), math.floor(have % 1000 / 10)))
  end
end

-- g:name(label): the next node the function's calls make is G.nodes[label].
function GraphBuilder:name(label)
  local rec = open(self, "graph.name")
  util.cstring("graph.name", "label", label)
  if label:match("^%d") or label == "" then
    util.fail("graph.name", ("label must not be empty or start with a digit (got %s)"):format(util.describe(label)))
  end
  if nodes.COUNTED[label] then
    util.fail("graph.name", ("label %s is a count G.nodes keeps (G.nodes.%s is how many such nodes the graph has): choose another name"):format(
      util.describe(label), label))
  end
  if rec.named[label] then util.fail("graph.name", ("a node is already named %s"):format(util.describe(label))) end
  rec.next_label = label
  return self
end

local graph_out, node_out = ffi.new("CUgraph[1]"), ffi.new("CUgraphNode[1]")

-- The graph the open capture adds to now (the top level or a body).
local function current_graph(rec)
  native.check(C.cuasync_graph_capture_tail(rec.handle, graph_out, node_out, errbuf, ERRLEN))
  return graph_out[0]
end

-- g:condition{ default = n, name = "..." } -> c: a condition of the graph being captured, set to
-- default (0 if left out) at every launch of the graph.
function GraphBuilder:condition(opts)
  local rec = open(self, "graph.condition")
  opts = opts or {}
  util.kind("graph.condition", "opts", opts, "table")
  util.known_fields("graph.condition", opts, { default = true, name = true })
  local default = opts.default or 0
  util.int_in("graph.condition", "default", default, 0, 2 ^ 32 - 1)
  if opts.name ~= nil then util.cstring("graph.condition", "name", opts.name) end
  needs("graph.condition", "conditional nodes", M.NEEDS.conditional)
  local h = ffi.new("unsigned long long[1]")
  native.check(C.cuasync_graph_condition(rec.handle, default, 1, h, graph_out, errbuf, ERRLEN))
  rec.conditions = (rec.conditions or 0) + 1
  return capture.condition(rec, h[0], graph_out[0], opts.name or ("c" .. rec.conditions), default)
end

-- The most copies of a while body one node takes: each copy is more nodes in the body graph (64
-- copies of a kernel and a copy are 128 nodes), and by then the node's per-round cost is 1/64 of
-- what it was, so more copies only add instantiation time and memory.
M.MAX_UNROLL = 64

-- opts of g:while_ -> the copies of the body (1 without opts).
local function unroll_of(where, opts)
  if type(opts) == "nil" then return 1 end   -- type(): a NULL cdata compares equal to nil
  util.kind(where, "opts", opts, "table")
  util.known_fields(where, opts, { unroll = true }, "opts")
  local n = opts.unroll
  if type(n) == "nil" then return 1 end
  if not util.is_integer(n) then
    util.fail(where, ("opts.unroll must be an integer, the copies of the body in one round (got %s)"):format(util.describe(n)))
  end
  if n < 1 then
    util.fail(where, ("opts.unroll must be at least 1: the body is captured once or more (got %s)"):format(util.describe(n)))
  end
  if n > M.MAX_UNROLL then
    util.fail(where, ("opts.unroll must be at most %d (got %s): each copy is more nodes in the body graph, and %d copies already pay the node's per-round cost once per %d rounds"):format(
      M.MAX_UNROLL, util.describe(n), M.MAX_UNROLL, M.MAX_UNROLL))
  end
  return n
end

-- fn(s2, g, round) for round 1..rounds, in order: the copies of one body.
local function copies(fn, s2, g, rounds)
  for round = 1, rounds do fn(s2, g, round) end
end

-- Capture fn(s2, g[, round]) into body graph `body` on a stream of its own (one per nesting
-- depth); given rounds (a while body), fn is called that many times in the same capture.
local function capture_body(self, rec, body, fn, rounds)
  local depth = rec.depth + 1
  rec.body_streams = rec.body_streams or {}
  local s2 = rec.body_streams[depth]
  if not s2 then
    s2 = streams.stream{ non_blocking = true }
    rec.body_streams[depth] = s2
    rec.keep[#rec.keep + 1] = s2
  end
  local h2 = streams.handle(s2)
  native.check(C.cuasync_graph_begin_body(h2, body, errbuf, ERRLEN))
  local saved_handle, saved_list = rec.handle, rec.list
  rec.outer = rec.outer or {}
  rec.outer[saved_handle] = true
  local list = {}
  rec.handle, rec.list, rec.depth = h2, list, depth
  local ok, err
  if rounds then ok, err = pcall(copies, fn, s2, self, rounds) else ok, err = pcall(fn, s2, self) end
  local out = ffi.new("CUgraph[1]")
  local rc = C.cuasync_graph_end(h2, out, errbuf, ERRLEN)   -- out is body itself: the node owns it
  rec.handle, rec.list, rec.depth = saved_handle, saved_list, depth - 1
  rec.outer[saved_handle] = nil
  if not ok then error(err, 0) end
  native.check(rc)
  return list
end

local TYPES = { ["if"] = 0, ["while"] = 1 }

local function conditional(self, where, kind, c, fns, opts)
  local rec = open(self, where)
  if not capture.is_condition(c) then
    util.fail(where, ("c must be a condition made by g:condition{...} (got %s)"):format(util.describe(c)))
  end
  for i, fn in ipairs(fns) do util.kind(where, i == 1 and "fn" or "else_fn", fn, "function") end
  local rounds = kind == "while" and unroll_of(where, opts) or nil
  needs(where, "conditional nodes", M.NEEDS.conditional)
  if rec.depth > 0 then needs(where, "conditional nodes nested in a body", M.NEEDS.nested) end
  if #fns == 2 then needs(where, "if/else nodes (two bodies)", M.NEEDS.if_else) end
  if c.rec ~= rec then
    util.fail(where, ("c is %s, which belongs to another capture (make it with g:condition{...} in this function)"):format(tostring(c)))
  end
  if c.graph ~= current_graph(rec) then
    util.fail(where, ("c is %s, made in another graph level: a conditional node takes a condition made where the node is (make it with g:condition{...} in this body)"):format(tostring(c)))
  end
  local bodies = ffi.new("CUgraph[2]")
  native.check(C.cuasync_graph_conditional(rec.handle, c.handle, TYPES[kind], #fns, bodies, node_out, errbuf, ERRLEN))
  local info = { kind = "conditional", type = kind, cond = c, bodies = {}, unroll = rounds }
  capture.enqueue(where, "the conditional node", rec.handle, nil, false, info)
  info.node = node_out[0]
  for i, fn in ipairs(fns) do info.bodies[i] = capture_body(self, rec, bodies[i - 1], fn, rounds) end
  return self
end

-- g:while_(c, fn[, { unroll = n }]): fn's work runs again and again while c is non-zero (checked
-- before each round). With unroll, a round is n copies of fn's work (fn(s2, g, round)); a copy that
-- runs after c went to 0 must do nothing (the kernel checks a flag of its own).
function GraphBuilder:while_(c, fn, opts) return conditional(self, "graph.while_", "while", c, { fn }, opts) end

-- g:if_(c, fn[, else_fn]): fn's work runs when c is non-zero, else_fn's when it is zero. It takes
-- no opts: a table where else_fn goes is refused (unroll repeats a loop's body; an if body runs once).
function GraphBuilder:if_(c, fn, else_fn)
  if type(else_fn) == "table" then
    util.fail("graph.if_", "else_fn is a table: g:if_ takes no opts (unroll is g:while_'s, a loop's body repeated; an if body runs at most once): give else_fn as a function or leave it out")
  end
  return conditional(self, "graph.if_", "if", c, else_fn == nil and { fn } or { fn, else_fn })
end

-- The builder of capture record rec (one per capture: the module-level forms use the same).
function M.new(rec)
  rec.builder = rec.builder or setmetatable({ rec = rec }, GraphBuilder)
  return rec.builder
end

-- -- The module-level forms -------------------------------------------------------------------

-- The builder of the capture open now; outside one, where's refusal names the call.
local function active(where, call)
  local rec = capture.state.active
  if not rec then
    util.fail(where, ("no capture is open: call it inside the function given to cuasync.graph(fn) or G:update(fn), where it is %s"):format(call))
  end
  return M.new(rec)
end

-- cuasync.graph.condition{...}, .while_(c, fn[, opts]), .if_(c, fn[, else_fn]): g:condition /
-- g:while_ / g:if_ of the capture open now.
function M.condition(opts) return active("graph.condition", "g:condition{...}"):condition(opts) end
function M.while_(c, fn, opts) return active("graph.while_", "g:while_(c, fn[, opts])"):while_(c, fn, opts) end
function M.if_(c, fn, else_fn) return active("graph.if_", "g:if_(c, fn[, else_fn])"):if_(c, fn, else_fn) end

M.GraphBuilder = GraphBuilder
util.methods(GraphBuilder, "graph", "g")
return M
