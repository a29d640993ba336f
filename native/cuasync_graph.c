/* cuasync_graph.c — CUDA graphs by stream capture. Thread-local capture mode: only this thread's
 * calls that cannot be captured invalidate it, and Lua refuses those by name before they run. */
#define CUASYNC_INTERNAL
#include <stdlib.h>

#include "cuasync_api.h"
#include "cuasync_error.h"
#include "cuasync_graph.h"
#include "cuasync_loader.h"

#define CAPTURE_MODE_THREAD_LOCAL 1
#define CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE 910
#define DEPENDENCY_TYPE_PROGRAMMATIC 1
#define DOT_FLAGS_VERBOSE 1u

/* An entry point a driver may lack: a named failure, never a call through NULL. */
#define NEED(call, cuda) do { \
        CUASYNC_READY(err, errlen); \
        if (!cuasync_cu.call) \
            return cuasync_fail(err, errlen, CUASYNC_E_MISSING, \
                                #call ": not provided by this driver (needs CUDA " cuda ")"); \
    } while (0)

int cuasync_graph_begin(CUstream stream, char *err, size_t errlen)
{
    NEED(cuStreamBeginCapture, "10.1");
    CUASYNC_CU(cuStreamBeginCapture, (stream, CAPTURE_MODE_THREAD_LOCAL), err, errlen,
               "beginning a stream capture for cuasync.graph");
    return CUASYNC_OK;
}

int cuasync_graph_end(CUstream stream, CUgraph *graph, char *err, size_t errlen)
{
    *graph = NULL;
    NEED(cuStreamEndCapture, "10.0");
    CUASYNC_CU(cuStreamEndCapture, (stream, graph), err, errlen, "ending the stream capture of cuasync.graph");
    return CUASYNC_OK;
}

int cuasync_graph_capture_status(CUstream stream, int *status, char *err, size_t errlen)
{
    NEED(cuStreamIsCapturing, "10.0");
    CUASYNC_CU(cuStreamIsCapturing, (stream, status), err, errlen, "asking whether a stream captures");
    return CUASYNC_OK;
}

int cuasync_graph_instantiate(CUgraphExec *exec, CUgraph graph, char *err, size_t errlen)
{
    NEED(cuGraphInstantiateWithFlags, "11.4");
    CUASYNC_CU(cuGraphInstantiateWithFlags, (exec, graph, 0ull), err, errlen, "instantiating a captured graph");
    return CUASYNC_OK;
}

int cuasync_graph_launch(CUgraphExec exec, CUstream stream, char *err, size_t errlen)
{
    CUresult r;
    if (!cuasync_cu.cuGraphLaunch) NEED(cuGraphLaunch, "10.0");
    r = cuasync_cu.cuGraphLaunch(exec, stream);
    if (r != 0) return cuasync_fail_cu(err, errlen, "cuGraphLaunch", r, "%s", "launching a graph");
    return CUASYNC_OK;
}

int cuasync_graph_upload(CUgraphExec exec, CUstream stream, char *err, size_t errlen)
{
    NEED(cuGraphUpload, "11.1");
    CUASYNC_CU(cuGraphUpload, (exec, stream), err, errlen, "uploading a graph to the device");
    return CUASYNC_OK;
}

int cuasync_graph_update(CUgraphExec exec, CUgraph graph, int *result, char *err, size_t errlen)
{
    CUgraphExecUpdateResultInfo info;
    CUresult r;
    NEED(cuGraphExecUpdate, "12.0");
    info.result = 0;
    info.errorNode = NULL;
    info.errorFromNode = NULL;
    r = cuasync_cu.cuGraphExecUpdate(exec, graph, &info);
    *result = 0;
    if (r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) {
        *result = info.result != 0 ? info.result : 1;   /* 1: CU_GRAPH_EXEC_UPDATE_ERROR */
        return CUASYNC_OK;
    }
    if (r != 0) return cuasync_fail_cu(err, errlen, "cuGraphExecUpdate", r, "%s", "updating a graph in place");
    return CUASYNC_OK;
}

int cuasync_graph_destroy(CUgraph graph, char *err, size_t errlen)
{
    NEED(cuGraphDestroy, "10.0");
    CUASYNC_CU(cuGraphDestroy, (graph), err, errlen, "destroying a graph");
    return CUASYNC_OK;
}

int cuasync_graph_exec_destroy(CUgraphExec exec, char *err, size_t errlen)
{
    NEED(cuGraphExecDestroy, "10.0");
    CUASYNC_CU(cuGraphExecDestroy, (exec), err, errlen, "destroying an instantiated graph");
    return CUASYNC_OK;
}

int cuasync_graph_nodes(CUgraph graph, int *counts, int kinds, int *total, char *err, size_t errlen)
{
    size_t n = 0, i;
    CUgraphNode *nodes;
    CUresult r = 0;
    int k;
    NEED(cuGraphGetNodes, "10.0");
    if (kinds < 0 || kinds > CUASYNC_GRAPH_NODE_KINDS)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "node kinds must be 0..%d (got %d)",
                            CUASYNC_GRAPH_NODE_KINDS, kinds);
    for (k = 0; k < kinds; k++) counts[k] = 0;
    CUASYNC_CU(cuGraphGetNodes, (graph, NULL, &n), err, errlen, "counting a graph's nodes");
    *total = (int)n;
    if (n == 0) return CUASYNC_OK;
    nodes = malloc(n * sizeof *nodes);
    if (!nodes) return cuasync_fail(err, errlen, CUASYNC_E_NOMEM, "no memory for %zu graph nodes", n);
    r = cuasync_cu.cuGraphGetNodes(graph, nodes, &n);
    for (i = 0; r == 0 && i < n; i++) {
        int type = -1;
        r = cuasync_cu.cuGraphNodeGetType(nodes[i], &type);
        if (r == 0 && type >= 0 && type < kinds) counts[type]++;
    }
    free(nodes);
    if (r != 0) return cuasync_fail_cu(err, errlen, "cuGraphGetNodes", r, "%s", "listing a graph's nodes");
    return CUASYNC_OK;
}

int cuasync_graph_edges(CUgraph graph, int *total, int *programmatic, char *err, size_t errlen)
{
    size_t n = 0, i;
    CUgraphNode *ends;
    CUgraphEdgeData *data;
    CUresult r;
    *total = 0;
    *programmatic = -1;
    CUASYNC_READY(err, errlen);
    if (!cuasync_cu.cuGraphGetEdges) return CUASYNC_OK;   /* before CUDA 12.3: no edge types */
    CUASYNC_CU(cuGraphGetEdges, (graph, NULL, NULL, NULL, &n), err, errlen, "counting a graph's edges");
    *total = (int)n;
    *programmatic = 0;
    if (n == 0) return CUASYNC_OK;
    ends = malloc(2 * n * sizeof *ends);
    data = malloc(n * sizeof *data);
    if (!ends || !data) {
        free(ends);
        free(data);
        return cuasync_fail(err, errlen, CUASYNC_E_NOMEM, "no memory for %zu graph edges", n);
    }
    r = cuasync_cu.cuGraphGetEdges(graph, ends, ends + n, data, &n);
    for (i = 0; r == 0 && i < n; i++)
        if (data[i].type == DEPENDENCY_TYPE_PROGRAMMATIC) (*programmatic)++;
    free(ends);
    free(data);
    if (r != 0) return cuasync_fail_cu(err, errlen, "cuGraphGetEdges", r, "%s", "listing a graph's edges");
    return CUASYNC_OK;
}

int cuasync_graph_dot(CUgraph graph, const char *path, char *err, size_t errlen)
{
    NEED(cuGraphDebugDotPrint, "11.3");
    CUASYNC_CU(cuGraphDebugDotPrint, (graph, path, DOT_FLAGS_VERBOSE), err, errlen,
               "writing the graph as dot to %s", path);
    return CUASYNC_OK;
}
