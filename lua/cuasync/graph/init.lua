-- CUDA graphs by stream capture:
--   local G = cuasync.graph(function(s, g) ... end[, { stream = s, name = "step" }])
-- runs the function once with a capturing stream s (thread-local capture mode) and the capture's
-- builder g (conditional.lua: named nodes, conditions, while/if nodes); what it enqueues
-- on s — k:launch{ ..., stream = s }, prepared runners bound to s, buf:upload/download_to/fill
-- (..., s) — becomes the graph, instantiated at once. G:launch([stream]) replays it,
-- G:upload([stream]) moves it to the device ahead of the first launch, G:update(fn) captures
-- again and updates in place (or re-instantiates, saying why), G.nodes / G.edges say what it
-- holds, G:dot(path) writes it for Graphviz, G:close() (or the GC) frees it. G.nodes[i] and
-- G.nodes.name edit one node in place (nodes.lua). The graph keeps what its nodes read, and a
-- launch refuses a closed buffer, an unloaded module or a moved tensor map (held.lua).
-- What cannot be captured is refused by name before the driver sees it (capture.lua); an error
-- inside the function ends and discards the capture, and the stream is usable after.
local ffi = require("ffi")
local native = require("cuasync.native")
local device = require("cuasync.device")
local streams = require("cuasync.stream")
local capture = require("cuasync.capture")
local handle = require("cuasync.handle")
local util = require("cuasync.util")
local watchdog = require("cuasync.watchdog")
local pdl = require("cuasync.pdl")
local held = require("cuasync.graph.held")
local nodes = require("cuasync.graph.nodes")
local conditional = require("cuasync.graph.conditional")
require("cuasync.cdef.graph")
require("cuasync.cdef.event")

local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN

ffi.cdef [[
typedef struct cuasync_graph { CUgraph graph; CUgraphExec exec; int open; } cuasync_graph;
]]

local M = {}
local Graph = {}
local count_nodes
local cstate = capture.state
Graph.__index = function(G, k)
  if k == "nodes" or k == "edges" then
    local h = rawget(G, "h")
    if h.open == 0 then   -- a closed graph: any node or count asked of it is refused by name
      return setmetatable({}, { __index = function() util.fail("graph.nodes", handle.dead("graph", h)) end })
    end
    local counts, edges = count_nodes(rawget(G, "h").graph)
    rawset(G, "nodes", nodes.indexed(G, counts)); rawset(G, "edges", edges)
    return rawget(G, k)
  end
  return Graph[k]
end

-- CUgraphNodeType and CUgraphExecUpdateResult, by the driver's numbers.
local KINDS = { [0] = "kernel", "memcpy", "memset", "host", "graph", "empty", "wait_event", "event_record",
                "ext_semas_signal", "ext_semas_wait", "mem_alloc", "mem_free", "batch_mem_op", "conditional" }
local UPDATE = { [1] = "the driver refused it (CU_GRAPH_EXEC_UPDATE_ERROR)",
                 [2] = "the topology changed (CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED)",
                 [3] = "a node's kind changed (CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED)",
                 [4] = "a kernel node's function changed (CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED)",
                 [5] = "a node's parameters changed in a way an update cannot take (CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED)",
                 [6] = "a node cannot be updated (CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED)",
                 [7] = "a kernel node's function changed in a way an update cannot take (CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE)",
                 [8] = "a node's launch attributes changed (CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED)" }
-- The driver's codes for a call that broke a capture (cuda.h, 900..908).
local CAPTURE_CODES = { CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = true, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = true,
  CUDA_ERROR_STREAM_CAPTURE_MERGE = true, CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = true,
  CUDA_ERROR_STREAM_CAPTURE_UNJOINED = true, CUDA_ERROR_STREAM_CAPTURE_ISOLATION = true,
  CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = true, CUDA_ERROR_CAPTURED_EVENT = true,
  CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = true }

local function destroy(g, x)
  local rc = 0
  if x ~= nil then rc = C.cuasync_graph_exec_destroy(x, errbuf, ERRLEN) end
  if g ~= nil then
    local rc2 = C.cuasync_graph_destroy(g, errbuf, ERRLEN)
    if rc == 0 then rc = rc2 end
  end
  return rc
end

local graph_t = handle.define("cuasync_graph", {
  methods = {},
  live = function(h) return h.open ~= 0 end,
  kill = function(h) h.open = 0; return { h.graph, h.exec } end,
  release = function(t) return destroy(t[1], t[2]) end,
  tostring = function(h) return ("cuasync.graph handle(%s)"):format(h.open ~= 0 and "open" or "closed") end,
})

local function no_nesting(where)
  if capture.state.active then
    util.fail(where, "cannot run inside cuasync.graph's function: graphs do not nest (capture the work in one function, or build the graphs one after the other)")
  end
end

-- An executable graph of g; on failure g is destroyed and the driver's error raised.
local function instantiate(g)
  local x = ffi.new("CUgraphExec[1]")
  local rc = C.cuasync_graph_instantiate(x, g, errbuf, ERRLEN)
  if rc ~= 0 then C.cuasync_graph_destroy(g, errbuf, ERRLEN); native.check(rc) end
  return x[0]
end

-- Run fn(s, g) under a thread-local capture of stream s; returns the CUgraph and the capture
-- record ({ count, keep, kernels, list = the nodes in order, named }). Any error ends and
-- discards the capture and is raised again, named, with the stream out of capture mode.
local function record(where, s, fn, name)
  no_nesting(where)
  local h = streams.handle(s)
  native.check(C.cuasync_graph_begin(h, errbuf, ERRLEN))
  local rec = { handle = h, count = 0, keep = { s }, kernels = {}, list = {}, named = {}, depth = 0, name = name }
  capture.open(rec)
  local ok, err = pcall(fn, s, conditional.new(rec))
  rec.handle = h   -- the top level's stream again, even after an error inside a conditional body
  local g = ffi.new("CUgraph[1]")
  local rc = C.cuasync_graph_end(h, g, errbuf, ERRLEN)
  capture.close()
  capture.flush()   -- the frees the GC (or the function) asked for while the stream captured
  if not ok then
    if rc == 0 and g[0] ~= nil then C.cuasync_graph_destroy(g[0], errbuf, ERRLEN) end
    local msg = tostring(err)
    if native.is_driver_error(err) and CAPTURE_CODES[err.code] then
      msg = msg .. " (a call that cannot run while a stream captures)"
    end
    util.fail(where, ("the function raised an error; the capture was ended and discarded, and the stream is usable: %s"):format(msg))
  end
  if rc ~= 0 then
    local _, e = pcall(native.check, rc)
    util.fail(where, ("the capture was invalidated by a call inside the function that cannot be captured: %s"):format(tostring(e)))
  end
  return g[0], rec
end

function count_nodes(g)
  local counts, total = ffi.new("int[?]", C.CUASYNC_GRAPH_NODE_KINDS), ffi.new("int[1]")
  native.check(C.cuasync_graph_nodes(g, counts, C.CUASYNC_GRAPH_NODE_KINDS, total, errbuf, ERRLEN))
  local nodes = { count = total[0] }
  for k = 0, C.CUASYNC_GRAPH_NODE_KINDS - 1 do
    if counts[k] > 0 then nodes[KINDS[k] or ("kind " .. k)] = counts[k] end
  end
  local edges, programmatic = ffi.new("int[1]"), ffi.new("int[1]")
  native.check(C.cuasync_graph_edges(g, edges, programmatic, errbuf, ERRLEN))
  return nodes, { count = edges[0], programmatic = programmatic[0] >= 0 and programmatic[0] or nil }
end

-- The graph's kernels from watched modules, and their nodes: a replay names them as launched
-- (watchdog.launched), so a hang inside the graph names kernel and node.
local function watched_of(G, rec, numbered)
  local out = {}
  for _, k in ipairs(rec.kernels) do
    local where = numbered and ("node %d of graph '%s'"):format(k.node, G.name) or ("graph '%s'"):format(G.name)
    out[#out + 1] = { watch = k.watch, name = k.name, where = where, label = ("'%s' (%s)"):format(k.name, where) }
  end
  return out
end

-- Fill G from a captured graph g and its record. G.nodes and G.edges are read from the driver
-- on first use (listing 3000 nodes costs milliseconds a replay loop does not need).
local function adopt(G, g, rec)
  rawset(G, "nodes", nil); rawset(G, "edges", nil)
  G.enqueued, G.keep, G.rec = rec.count, rec.keep, rec
  held.adopt(rec.list)
  G.epoch = -1   -- the first launch checks what the graph holds (a close during the capture is deferred)
  -- the node numbers name what the function enqueued, in order, when each call made one node
  -- (counted only for a graph with watched kernels: listing the nodes costs milliseconds)
  G.watched = watched_of(G, rec, #rec.kernels > 0 and G.nodes.count == rec.count)
end

local function live(where, G)
  if G.h.open == 0 then util.fail(where, handle.dead("graph", G.h)) end
end

-- cuasync.graph(fn[, { stream = s, name = "..." }]) -> G
function M.new(fn, opts)
  util.kind("graph", "fn", fn, "function")
  util.not_null("graph", "opts", opts, "a table")
  if opts ~= nil then
    util.kind("graph", "opts", opts, "table")
    util.known_fields("graph", opts, { stream = true, name = true })
  end
  opts = opts or {}
  if opts.name ~= nil then util.cstring("graph", "name", opts.name) end
  local s = opts.stream
  if s ~= nil and not ffi.istype(streams.stream_t, s) then
    util.fail("graph", ("opts.stream must be a cuasync.stream() (got %s; the legacy default stream cannot be captured: leave stream out and cuasync.graph makes one)"):format(
      util.describe(s)))
  end
  local ok, why = pcall(device.current)
  if not ok then   -- the reason without its position and name (this message names the call)
    util.fail("graph", ("a graph needs a GPU: %s"):format((tostring(why):gsub("^[^\n]-: cuasync[%.%w_]*: ", "", 1))))
  end
  no_nesting("graph")   -- before a stream is made for it
  s = s or streams.stream()
  streams.handle(s)
  local t0 = C.cuasync_now_ns()
  local g, rec = record("graph", s, fn, opts.name or "graph")
  local t1 = C.cuasync_now_ns()
  local x = instantiate(g)
  local G = setmetatable({ h = graph_t(g, x, 1), stream = s, name = opts.name or "graph", generation = native.state.generation,
                           updates = 0, reinstantiations = 0 }, Graph)
  adopt(G, g, rec)
  -- where the time of cuasync.graph went, ms: the function's capture, and the instantiation
  G.timing = { capture_ms = (t1 - t0) / 1e6, instantiate_ms = (C.cuasync_now_ns() - t1) / 1e6 }
  return G
end

-- G:launch([stream]): replay on stream (default: the default stream, so that a download after
-- it waits for it). A watched kernel's hang raises at the next synchronize, naming its node.
function Graph:launch(stream)
  live("graph.launch", self)
  capture.refuse("graph.launch", "graphs do not nest (launch G after the function returned)")
  if self.epoch ~= cstate.epoch then held.check(self) end   -- something held was closed or moved
  local h = streams.handle(stream)
  for _, w in ipairs(self.watched) do watchdog.launched(w.watch, w.name, w.where, w.label) end
  native.check(C.cuasync_graph_launch(self.h.exec, h, errbuf, ERRLEN))
  return self
end

-- G:upload([stream]): move the graph's work to the device now, so the first launch pays nothing.
function Graph:upload(stream)
  live("graph.upload", self)
  capture.refuse("graph.upload", "graphs do not nest")
  native.check(C.cuasync_graph_upload(self.h.exec, streams.handle(stream), errbuf, ERRLEN))
  return self
end

-- G:update(fn) -> G, how: capture fn on the graph's stream and update the instantiated graph in
-- place ("updated": same nodes, new arguments), or, when the driver cannot take it (the
-- topology changed, ...), instantiate the new graph ("re-instantiated: <why>"). An error in fn
-- leaves G as it was.
function Graph:update(fn)
  live("graph.update", self)
  util.kind("graph.update", "fn", fn, "function")
  local g, rec = record("graph.update", self.stream, fn, self.name)
  local result = ffi.new("int[1]")
  -- with conditional nodes, instantiated again: in place, its kernels would set conditions of a freed graph
  local conditional = (rec.conditions or 0) > 0 or (self.rec.conditions or 0) > 0
  if not conditional then
    local rc = C.cuasync_graph_update(self.h.exec, g, result, errbuf, ERRLEN)
    if rc ~= 0 then C.cuasync_graph_destroy(g, errbuf, ERRLEN); native.check(rc) end
  end
  local how = "updated"
  if conditional or result[0] ~= 0 then
    local x = instantiate(g)
    native.check(C.cuasync_graph_exec_destroy(self.h.exec, errbuf, ERRLEN))
    self.h.exec = x
    how = "re-instantiated: " .. (conditional and "the graph has conditional nodes (their conditions belong to the graph captured)"
      or UPDATE[result[0]] or ("CUgraphExecUpdateResult " .. result[0]))
    self.reinstantiations = self.reinstantiations + 1
    native.check(C.cuasync_graph_destroy(self.h.graph, errbuf, ERRLEN))
    self.h.graph = g
  else
    -- updated in place: the instantiated graph goes on with the nodes of the graph it was made
    -- from, and an edit must name those (the driver refuses the new capture's: measured, an
    -- edit after G:update failed with CUDA_ERROR_INVALID_VALUE). That graph stays; the new
    -- capture's nodes take its node handles, paired in capture order as the update paired them.
    self.updates = self.updates + 1
    local before = self.rec.list
    for i, info in ipairs(rec.list) do
      local old = before[i]
      info.node, info.why_no_node = old and old.node, old and old.why_no_node
    end
    native.check(C.cuasync_graph_destroy(g, errbuf, ERRLEN))
    g = self.h.graph
  end
  adopt(self, g, rec)
  return self, how
end

-- G:dot(path): the graph in Graphviz dot (cuGraphDebugDotPrint, verbose).
function Graph:dot(path)
  live("graph.dot", self)
  util.cstring("graph.dot", "path", path)
  local dir = path:match("^(.*)/[^/]*$")
  if dir and dir ~= "" then
    local f = io.open(dir .. "/.", "r")
    if not f then util.fail("graph.dot", ("the directory %s of %s does not exist"):format(util.describe(dir), util.describe(path))) end
    f:close()
  end
  native.check(C.cuasync_graph_dot(self.h.graph, path, errbuf, ERRLEN))
  pdl.annotate_dot(path, self.keep)   -- the PDL check of its programmatic kernel nodes (pdl.lua)
  return path
end

function Graph:close()
  self.h:close()
  self.keep, self.watched, self.rec = nil, {}, { list = {}, named = {} }
  rawset(self, "nodes", nil); rawset(self, "edges", nil)   -- asked again, they say it is closed
end

-- G:node(i | "name"): the node, as G.nodes[i] (without listing the graph's nodes first).
function Graph:node(key)
  live("graph.node", self)
  return nodes.get(self, key)
end

function Graph:__tostring()
  return ("cuasync.graph '%s' (%d enqueued%s)"):format(self.name, self.enqueued, self.h.open == 0 and ", closed" or "")
end

M.Graph = Graph
return M
