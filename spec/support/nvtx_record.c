/* An NVTX injection library for spec/tools/sweep/sweep_spec.lua: it records every range pushed and popped
 * into the file NVTX_RECORD names. NVTX 3 loads it from NVTX_INJECTION64_PATH at the first call. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

static FILE *out;

static int push(const char *name) { fprintf(out, "push %s\n", name); fflush(out); return 0; }
static int pop(void) { fprintf(out, "pop\n"); fflush(out); return 0; }

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table = 0;
    unsigned size = 0;
    const char *path = getenv("NVTX_RECORD");
    if (!cb || !path || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size)) return 0;
    if (size <= NVTX_CBID_CORE_RangePop || !(out = fopen(path, "w"))) return 0;
    *table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)push;
    *table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)pop;
    return 1;
}
