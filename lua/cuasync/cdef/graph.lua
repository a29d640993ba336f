-- Declarations of native/cuasync_graph.h for the FFI (spec/house/cdef_spec.lua keeps the two identical).
local ffi = require("ffi")
require("cuasync.cdef.core")
require("cuasync.cdef.types")

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
int cuasync_graph_capture_tail(CUstream stream, CUgraph *graph, CUgraphNode *node, char *err, size_t errlen);
int cuasync_graph_node_kind(CUgraphNode node, int *kind, char *err, size_t errlen);
int cuasync_graph_exec_kernel(CUgraphExec exec, CUgraphNode node, CUfunction fn, const CUlaunchConfig *cfg,
                              void **params, const char *name, char *err, size_t errlen);
int cuasync_graph_exec_memset(CUgraphExec exec, CUgraphNode node, CUdeviceptr dst, unsigned value, size_t bytes,
                              char *err, size_t errlen);
int cuasync_graph_exec_memcpy(CUgraphExec exec, CUgraphNode node, unsigned long long dst, int dst_host,
                              unsigned long long src, int src_host, size_t bytes, char *err, size_t errlen);
int cuasync_graph_exec_enable(CUgraphExec exec, CUgraphNode node, int enabled, char *err, size_t errlen);
int cuasync_graph_condition(CUstream stream, unsigned default_value, int assign_default, unsigned long long *handle,
                            CUgraph *graph, char *err, size_t errlen);
int cuasync_graph_conditional(CUstream stream, unsigned long long handle, int type, int bodies, CUgraph *body,
                              CUgraphNode *node, char *err, size_t errlen);
int cuasync_graph_begin_body(CUstream stream, CUgraph body, char *err, size_t errlen);
]]

ffi.cdef(declarations)
return declarations
