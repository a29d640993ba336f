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

#endif
