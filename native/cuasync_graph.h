/* cuasync_graph.h — CUDA graphs made by stream capture: begin and end a capture, instantiate,
 * launch, upload, update in place, and what a graph holds (node kinds, edges, a dot file). */
#ifndef CUASYNC_GRAPH_H
#define CUASYNC_GRAPH_H

#include "cuasync.h"

/* Node kinds counted by cuasync_graph_nodes: CUgraphNodeType 0..CUASYNC_GRAPH_NODE_KINDS-1. */
enum { CUASYNC_GRAPH_NODE_KINDS = 16 };

/* Begin a thread-local capture on stream (a created stream, never the legacy default one). */
int cuasync_graph_begin(CUstream stream, char *err, size_t errlen);
/* End it: *graph is the captured graph. An invalidated capture fails with the driver's
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; the stream has left capture mode either way. */
int cuasync_graph_end(CUstream stream, CUgraph *graph, char *err, size_t errlen);
/* *status: 0 not capturing, 1 capturing, 2 capturing but invalidated (cuStreamIsCapturing). */
int cuasync_graph_capture_status(CUstream stream, int *status, char *err, size_t errlen);
int cuasync_graph_instantiate(CUgraphExec *exec, CUgraph graph, char *err, size_t errlen);
int cuasync_graph_launch(CUgraphExec exec, CUstream stream, char *err, size_t errlen);
int cuasync_graph_upload(CUgraphExec exec, CUstream stream, char *err, size_t errlen);
/* Update exec's nodes from graph in place. *result = 0 when it did; else the driver's
 * CUgraphExecUpdateResult saying why it could not (the topology changed, ...), and exec is as it
 * was: the caller instantiates graph instead. */
int cuasync_graph_update(CUgraphExec exec, CUgraph graph, int *result, char *err, size_t errlen);
int cuasync_graph_destroy(CUgraph graph, char *err, size_t errlen);
int cuasync_graph_exec_destroy(CUgraphExec exec, char *err, size_t errlen);
/* counts[k] = nodes of kind k (k < kinds, kinds <= CUASYNC_GRAPH_NODE_KINDS), *total = all. */
int cuasync_graph_nodes(CUgraph graph, int *counts, int kinds, int *total, char *err, size_t errlen);
/* *total edges, *programmatic of them programmatic (PDL); *programmatic = -1 on a driver before
 * CUDA 12.3 (no edge types). */
int cuasync_graph_edges(CUgraph graph, int *total, int *programmatic, char *err, size_t errlen);
/* cuGraphDebugDotPrint, verbose. */
int cuasync_graph_dot(CUgraph graph, const char *path, char *err, size_t errlen);

/* -- Nodes of a capture, edited in place -- */
/* The capturing graph, and the node the last call on stream added (NULL when the capture's
 * dependency set is not one node). Needs a CUDA 12.3 driver. */
int cuasync_graph_capture_tail(CUstream stream, CUgraph *graph, CUgraphNode *node, char *err, size_t errlen);
int cuasync_graph_node_kind(CUgraphNode node, int *kind, char *err, size_t errlen);
/* New arguments (and the grid, block and shared memory of cfg) for a kernel node of exec. */
int cuasync_graph_exec_kernel(CUgraphExec exec, CUgraphNode node, CUfunction fn, const CUlaunchConfig *cfg,
                              void **params, const char *name, char *err, size_t errlen);
/* A byte fill of bytes at dst. */
int cuasync_graph_exec_memset(CUgraphExec exec, CUgraphNode node, CUdeviceptr dst, unsigned value, size_t bytes,
                              char *err, size_t errlen);
/* A 1-D copy of bytes; an address is a host pointer where its *_host flag is set. */
int cuasync_graph_exec_memcpy(CUgraphExec exec, CUgraphNode node, unsigned long long dst, int dst_host,
                              unsigned long long src, int src_host, size_t bytes, char *err, size_t errlen);
int cuasync_graph_exec_enable(CUgraphExec exec, CUgraphNode node, int enabled, char *err, size_t errlen);

/* -- Conditional nodes (CUDA 12.3) -- */
/* A condition handle of the graph stream is capturing into (*graph), set to default_value at
 * each launch of the graph when assign_default. */
int cuasync_graph_condition(CUstream stream, unsigned default_value, int assign_default, unsigned long long *handle,
                            CUgraph *graph, char *err, size_t errlen);
/* Add a conditional node on handle (type 0 if, 1 while; bodies 1, or 2 for if/else) after what
 * stream has captured so far, and continue the capture after it. body[0..bodies-1]: the driver's
 * body graphs (owned by the node). */
int cuasync_graph_conditional(CUstream stream, unsigned long long handle, int type, int bodies, CUgraph *body,
                              CUgraphNode *node, char *err, size_t errlen);
/* Capture stream's work into body (cuStreamBeginCaptureToGraph, thread-local); end it with cuasync_graph_end. */
int cuasync_graph_begin_body(CUstream stream, CUgraph body, char *err, size_t errlen);

#endif
