/* cuasync_graph.c — CUDA graphs by stream capture. Thread-local capture mode: only this thread's
 * calls that cannot be captured invalidate it, and Lua refuses those by name before they run. */
#define CUASYNC_INTERNAL
#include <stdlib.h>
#include <string.h>

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

/* -- Nodes of a capture, edited in place ------------------------------------------------------- */

#define CAPTURE_STATUS_ACTIVE 1
#define SET_CAPTURE_DEPENDENCIES 1u
#define NODE_TYPE_CONDITIONAL 13
#define COND_ASSIGN_DEFAULT 1u
#define MEMORYTYPE_HOST 1
#define MEMORYTYPE_DEVICE 2

int cuasync_graph_capture_tail(CUstream stream, CUgraph *graph, CUgraphNode *node, char *err, size_t errlen)
{
    int status = 0;
    const CUgraphNode *deps = NULL;
    size_t n = 0;
    *graph = NULL;
    *node = NULL;
    NEED(cuStreamGetCaptureInfo, "12.3");
    CUASYNC_CU(cuStreamGetCaptureInfo, (stream, &status, NULL, graph, &deps, NULL, &n), err, errlen,
               "reading the node a captured call added");
    if (status != CAPTURE_STATUS_ACTIVE)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "the stream is not capturing (status %d)", status);
    /* one stream captures in order: after a call, the set is exactly the node it added */
    if (n == 1) *node = deps[0];
    return CUASYNC_OK;
}

int cuasync_graph_node_kind(CUgraphNode node, int *kind, char *err, size_t errlen)
{
    NEED(cuGraphNodeGetType, "10.0");
    CUASYNC_CU(cuGraphNodeGetType, (node, kind), err, errlen, "reading a graph node's kind");
    return CUASYNC_OK;
}

int cuasync_graph_exec_kernel(CUgraphExec exec, CUgraphNode node, CUfunction fn, const CUlaunchConfig *cfg,
                              void **params, const char *name, char *err, size_t errlen)
{
    CUDA_KERNEL_NODE_PARAMS p;
    NEED(cuGraphExecKernelNodeSetParams, "12.0");
    memset(&p, 0, sizeof p);
    p.func = fn;
    p.gridDimX = cfg->gridDimX;
    p.gridDimY = cfg->gridDimY;
    p.gridDimZ = cfg->gridDimZ;
    p.blockDimX = cfg->blockDimX;
    p.blockDimY = cfg->blockDimY;
    p.blockDimZ = cfg->blockDimZ;
    p.sharedMemBytes = cfg->sharedMemBytes;
    p.kernelParams = params;
    CUASYNC_CU(cuGraphExecKernelNodeSetParams, (exec, node, &p), err, errlen,
               "setting the arguments of kernel '%s' in an instantiated graph", name);
    return CUASYNC_OK;
}

static int current_context(CUcontext *ctx, char *err, size_t errlen)
{
    NEED(cuCtxGetCurrent, "4.0");
    CUASYNC_CU(cuCtxGetCurrent, (ctx), err, errlen, "reading the current context");
    return CUASYNC_OK;
}

int cuasync_graph_exec_memset(CUgraphExec exec, CUgraphNode node, CUdeviceptr dst, unsigned value, size_t bytes,
                              char *err, size_t errlen)
{
    CUDA_MEMSET_NODE_PARAMS p;
    CUcontext ctx = NULL;
    int rc;
    NEED(cuGraphExecMemsetNodeSetParams, "10.2");
    if ((rc = current_context(&ctx, err, errlen)) != CUASYNC_OK) return rc;
    memset(&p, 0, sizeof p);
    p.dst = dst;
    p.pitch = bytes;
    p.value = value;
    p.elementSize = 1;
    p.width = bytes;
    p.height = 1;
    CUASYNC_CU(cuGraphExecMemsetNodeSetParams, (exec, node, &p, ctx), err, errlen,
               "setting a fill node of an instantiated graph");
    return CUASYNC_OK;
}

int cuasync_graph_exec_memcpy(CUgraphExec exec, CUgraphNode node, unsigned long long dst, int dst_host,
                              unsigned long long src, int src_host, size_t bytes, char *err, size_t errlen)
{
    CUDA_MEMCPY3D p;
    CUcontext ctx = NULL;
    int rc;
    NEED(cuGraphExecMemcpyNodeSetParams, "10.2");
    if ((rc = current_context(&ctx, err, errlen)) != CUASYNC_OK) return rc;
    memset(&p, 0, sizeof p);
    p.srcMemoryType = src_host ? MEMORYTYPE_HOST : MEMORYTYPE_DEVICE;
    if (src_host) p.srcHost = (const void *)(size_t)src; else p.srcDevice = src;
    p.dstMemoryType = dst_host ? MEMORYTYPE_HOST : MEMORYTYPE_DEVICE;
    if (dst_host) p.dstHost = (void *)(size_t)dst; else p.dstDevice = dst;
    p.WidthInBytes = bytes;
    p.Height = 1;
    p.Depth = 1;
    CUASYNC_CU(cuGraphExecMemcpyNodeSetParams, (exec, node, &p, ctx), err, errlen,
               "setting a copy node of an instantiated graph");
    return CUASYNC_OK;
}

int cuasync_graph_exec_enable(CUgraphExec exec, CUgraphNode node, int enabled, char *err, size_t errlen)
{
    NEED(cuGraphNodeSetEnabled, "11.6");
    CUASYNC_CU(cuGraphNodeSetEnabled, (exec, node, enabled ? 1u : 0u), err, errlen,
               "%s a node of an instantiated graph", enabled ? "enabling" : "disabling");
    return CUASYNC_OK;
}

/* -- Conditional nodes ------------------------------------------------------------------------- */

int cuasync_graph_condition(CUstream stream, unsigned default_value, int assign_default, unsigned long long *handle,
                            CUgraph *graph, char *err, size_t errlen)
{
    int status = 0, rc;
    CUcontext ctx = NULL;
    *handle = 0;
    *graph = NULL;
    NEED(cuGraphConditionalHandleCreate, "12.3");
    NEED(cuStreamGetCaptureInfo, "12.3");
    if ((rc = current_context(&ctx, err, errlen)) != CUASYNC_OK) return rc;
    CUASYNC_CU(cuStreamGetCaptureInfo, (stream, &status, NULL, graph, NULL, NULL, NULL), err, errlen,
               "reading the capture a condition belongs to");
    if (status != CAPTURE_STATUS_ACTIVE)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "the stream is not capturing (status %d)", status);
    CUASYNC_CU(cuGraphConditionalHandleCreate, (handle, *graph, ctx, default_value,
               assign_default ? COND_ASSIGN_DEFAULT : 0u), err, errlen, "creating a condition handle");
    return CUASYNC_OK;
}

int cuasync_graph_conditional(CUstream stream, unsigned long long handle, int type, int bodies, CUgraph *body,
                              CUgraphNode *node, char *err, size_t errlen)
{
    int status = 0, rc, i;
    const CUgraphNode *deps = NULL;
    size_t n = 0;
    CUgraph graph = NULL;
    CUcontext ctx = NULL;
    CUgraphNodeParams p;
    *node = NULL;
    NEED(cuGraphAddNode, "12.3");
    NEED(cuStreamGetCaptureInfo, "12.3");
    NEED(cuStreamUpdateCaptureDependencies, "12.3");
    if (bodies < 1 || bodies > 2)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "a conditional node has 1 or 2 bodies (got %d)", bodies);
    if ((rc = current_context(&ctx, err, errlen)) != CUASYNC_OK) return rc;
    CUASYNC_CU(cuStreamGetCaptureInfo, (stream, &status, NULL, &graph, &deps, NULL, &n), err, errlen,
               "reading the capture a conditional node joins");
    if (status != CAPTURE_STATUS_ACTIVE)
        return cuasync_fail(err, errlen, CUASYNC_E_INVALID, "the stream is not capturing (status %d)", status);
    memset(&p, 0, sizeof p);
    p.type = NODE_TYPE_CONDITIONAL;
    p.u.conditional.handle = handle;
    p.u.conditional.type = type;
    p.u.conditional.size = (unsigned)bodies;
    p.u.conditional.ctx = ctx;
    CUASYNC_CU(cuGraphAddNode, (node, graph, deps, NULL, n, &p), err, errlen,
               "adding a conditional node to the captured graph");
    for (i = 0; i < bodies; i++) body[i] = p.u.conditional.phGraph_out[i];
    /* the capture goes on after the conditional node */
    CUASYNC_CU(cuStreamUpdateCaptureDependencies, (stream, node, NULL, 1, SET_CAPTURE_DEPENDENCIES), err, errlen,
               "continuing the capture after a conditional node");
    return CUASYNC_OK;
}

int cuasync_graph_begin_body(CUstream stream, CUgraph body, char *err, size_t errlen)
{
    NEED(cuStreamBeginCaptureToGraph, "12.3");
    CUASYNC_CU(cuStreamBeginCaptureToGraph, (stream, body, NULL, NULL, 0, CAPTURE_MODE_THREAD_LOCAL), err, errlen,
               "beginning the capture of a conditional node's body");
    return CUASYNC_OK;
}
