-- Declarations of native/cuasync_graph.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")

local declarations = [[
enum { CUASYNC_GRAPH_NODE_KINDS = 16 };
int cuasync_graph_begin(CUstream stream, char *err, size_t errlen);
int cuasync_graph_end(CUstream stream, CUgraph *graph, char *err, size_t errlen);
int cuasync_graph_capture_status(CUstream stream, int *status, char *err, size_t errlen);
int cuasync_graph_instantiate(CUgraphExec *exec, CUgraph graph, char *err, size_t errlen);
int cuasync_graph_launch(CUgraphExec exec, CUstream stream, char *err, size_t errlen);
int cuasync_graph_upload(CUgraphExec exec, CUstream stream, char *err, size_t errlen);
int cuasync_graph_update(CUgraphExec exec, CUgraph graph, int *result, char *err, size_t errlen);
int cuasync_graph_destroy(CUgraph graph, char *err, size_t errlen);
int cuasync_graph_exec_destroy(CUgraphExec exec, char *err, size_t errlen);
int cuasync_graph_nodes(CUgraph graph, int *counts, int kinds, int *total, char *err, size_t errlen);
int cuasync_graph_edges(CUgraph graph, int *total, int *programmatic, char *err, size_t errlen);
int cuasync_graph_dot(CUgraph graph, const char *path, char *err, size_t errlen);
]]

ffi.cdef(declarations)
return declarations
