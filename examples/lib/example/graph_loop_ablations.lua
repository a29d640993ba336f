-- Ablations of examples/bench_graph_loop.lua's loop (--ablate a,b,...): variants of the while
-- graph and of the host-driven loop, each timed in the same rounds as the default ways and each
-- verified (the sweep count; x bit-identical to the default while graph's where the variant
-- sweeps). The default ways, kernels and graphs are not touched: these kernels come from a
-- second program, graph_loop.cu's own text (the same sweep()) with the variants appended.
--   local A = require("example.graph_loop_ablations")
--   A.NAMES, A.check(list) -> nil | the rule it breaks (the --ablate option's check)
--   A.program(cuasync, kernels_dir) -> the variants' program (compiles without a GPU)
--   local a = A.new{ cuasync, kernels = dir, names = list | nil, N, ITERS, x, y, iters, flag, hx, stream, want }
--   a.ways: { { key, run }, ... } for the rounds; a.print(medians, while_ms, host_ms)
local ffi = require("ffi")
local fs = require("cuasync.fs")

local M = {}

-- name -> what it changes against the default way of its side, and what it tells.
local ABLATIONS = {
  { "fused", "graph", "while graph, body = one kernel that sweeps and copies y -> x itself: no memcpy node (the copy node's cost)" },
  { "copy-kernel", "graph", "while graph, body = jacobi + a copy kernel node instead of the memcpy node (copy engine vs SM copy)" },
  { "lean", "graph", "while graph, the kernel reads the count before its sweep and reduces with warp shuffles (2 barriers, not 9): the kernel's own latency" },
  { "host-lean", "host", "host loop with that kernel" },
  { "floor", "graph", "while graph, body = one 32-thread kernel that only counts and sets the condition (the while node's floor)" },
  { "floor-host", "host", "host loop of a 32-thread kernel that only counts and writes the flag, flag read each time (the host floor)" },
  { "unrolled", "graph", "one graph of --iters x (jacobi_flag, copy) nodes, no conditional node (the while node's own cost)" },
  { "host-fused", "host", "host loop, the kernel copies y -> x itself: no copy call per sweep" },
  { "host-nosync", "host", "host loop without the flag read: --iters x (launch, copy), one synchronize (the round trip's cost)" },
  { "host-pinned", "host", "host loop on a stream, the flag read into pinned memory (async copy + stream synchronize)" },
}
M.NAMES = {}
local BY = {}
for _, a in ipairs(ABLATIONS) do M.NAMES[#M.NAMES + 1] = a[1]; BY[a[1]] = a end

function M.check(list)
  for _, n in ipairs(list) do
    if n ~= "all" and not BY[n] then return ("must be a comma list of %s or all (got %s)"):format(table.concat(M.NAMES, ", "), tostring(n)) end
  end
end

-- Appended to graph_loop.cu's text (its sweep() and its includes above).
local EXTRA = [[

// -- ablations (examples/lib/example/graph_loop_ablations.lua) --
// sweep() reads x before its first barrier, so after it returns x may be overwritten
extern "C" __global__ void jacobi_fused(float *x, float *y, unsigned n, float tol, unsigned *iters,
                                        unsigned max_iters, cuasync::graph::condition c)
{
    const float residual = sweep(x, y, n);
    if (threadIdx.x < n) x[threadIdx.x] = y[threadIdx.x];
    if (threadIdx.x == 0) {
        const unsigned k = *iters + 1;
        *iters = k;
        cuasync::graph::set_condition(c, residual > tol && k < max_iters);
    }
}
extern "C" __global__ void jacobi_flag_fused(float *x, float *y, unsigned n, float tol, unsigned *iters,
                                             unsigned max_iters, unsigned *flag)
{
    const float residual = sweep(x, y, n);
    if (threadIdx.x < n) x[threadIdx.x] = y[threadIdx.x];
    if (threadIdx.x == 0) {
        const unsigned k = *iters + 1;
        *iters = k;
        *flag = residual > tol && k < max_iters;
    }
}
// The sweep with a warp-shuffle max (blockDim.x a multiple of 32): max is exact in any order, so
// the residual is the tree's, bit for bit. Returns it in thread 0.
__device__ __forceinline__ float sweep_lean(const float *x, float *y, unsigned n)
{
    __shared__ float w[32];
    const unsigned i = threadIdx.x;
    float d = 0.0f;
    if (i < n) {
        const float v = (i == 0 || i == n - 1) ? x[i] : 0.5f * (x[i - 1] + x[i + 1]);
        y[i] = v;
        d = fabsf(v - x[i]);
    }
    for (int o = 16; o > 0; o >>= 1) d = fmaxf(d, __shfl_xor_sync(0xffffffffu, d, o));
    if ((i & 31u) == 0u) w[i >> 5] = d;
    __syncthreads();
    float r = 0.0f;
    if (i < 32u) {
        r = i < blockDim.x / 32u ? w[i] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) r = fmaxf(r, __shfl_xor_sync(0xffffffffu, r, o));
    }
    return r;
}
// the count read before the sweep: its load is off the path from the reduction to the condition
extern "C" __global__ void jacobi_lean(const float *x, float *y, unsigned n, float tol, unsigned *iters,
                                       unsigned max_iters, cuasync::graph::condition c)
{
    const unsigned k0 = threadIdx.x == 0 ? *iters : 0u;
    const float residual = sweep_lean(x, y, n);
    if (threadIdx.x == 0) {
        *iters = k0 + 1;
        cuasync::graph::set_condition(c, residual > tol && k0 + 1 < max_iters);
    }
}
extern "C" __global__ void jacobi_flag_lean(const float *x, float *y, unsigned n, float tol, unsigned *iters,
                                            unsigned max_iters, unsigned *flag)
{
    const unsigned k0 = threadIdx.x == 0 ? *iters : 0u;
    const float residual = sweep_lean(x, y, n);
    if (threadIdx.x == 0) {
        *iters = k0 + 1;
        *flag = residual > tol && k0 + 1 < max_iters;
    }
}
extern "C" __global__ void copy_n(float *x, const float *y, unsigned n)
{
    if (threadIdx.x < n) x[threadIdx.x] = y[threadIdx.x];
}
extern "C" __global__ void count_cond(unsigned *iters, unsigned max_iters, cuasync::graph::condition c)
{
    if (threadIdx.x == 0) { const unsigned k = *iters + 1; *iters = k; cuasync::graph::set_condition(c, k < max_iters); }
}
extern "C" __global__ void count_flag(unsigned *iters, unsigned max_iters, unsigned *flag)
{
    if (threadIdx.x == 0) { const unsigned k = *iters + 1; *iters = k; *flag = k < max_iters; }
}
]]

-- The ablations' program: graph_loop.cu's text from kernels_dir with the variants appended.
function M.program(cuasync, kernels_dir)
  local src = assert(fs.read(kernels_dir .. "/graph_loop.cu"))
  return cuasync.program{ name = "graph_loop_ablations", source = src .. EXTRA }
end

local function empty()
  return { ways = {}, print = function() end }
end

function M.new(c)
  if not c.names or #c.names == 0 then return empty() end
  local cuasync, N, ITERS = c.cuasync, c.N, c.ITERS
  local x, y, iters, flag, hx, s = c.x, c.y, c.iters, c.flag, c.hx, c.stream
  local wanted = {}
  for _, n in ipairs(c.names) do
    if n == "all" then for _, a in ipairs(ABLATIONS) do wanted[a[1]] = true end else wanted[n] = true end
  end
  local m = M.program(cuasync, c.kernels):compile()
  local SIG, FLAG = "ptr, ptr, u32, f32, ptr, u32, cond", "ptr, ptr, u32, f32, ptr, u32, ptr"
  local k = {
    jacobi = m:kernel("jacobi", SIG), jacobi_flag = m:kernel("jacobi_flag", FLAG),
    fused = m:kernel("jacobi_fused", SIG), flag_fused = m:kernel("jacobi_flag_fused", FLAG),
    copy = m:kernel("copy_n", "ptr, ptr, u32"), count = m:kernel("count_cond", "ptr, u32, cond"),
    count_flag = m:kernel("count_flag", "ptr, u32, ptr"),
    lean = m:kernel("jacobi_lean", SIG), flag_lean = m:kernel("jacobi_flag_lean", FLAG),
  }
  local cfg, small = { grid = 1, block = N }, { grid = 1, block = 32 }
  local hflag = ffi.new("uint32_t[1]")

  local function while_graph(name, body)
    return cuasync.graph(function(gs, g)
      x:upload(hx, nil, nil, gs)
      iters:fill(0, nil, nil, gs)
      local cond = g:condition{ default = 1 }
      g:while_(cond, function(bs) body(bs, cond) end)
    end, { name = name, stream = s })
  end
  local function launched(G) return function() G:launch(s); s:synchronize() end end
  local function host(kernel, copy, kcfg)
    return function()
      x:upload(hx); iters:fill(0)
      repeat
        kernel:launch(kcfg or cfg, x, y, N, 0, iters, ITERS, flag)
        if copy then x:upload(y) end
        flag:download_to(hflag, 4)
      until hflag[0] == 0
    end
  end

  local make = {}
  make.fused = function()
    return launched(while_graph("fused", function(bs, cond)
      k.fused:launch({ grid = 1, block = N, stream = bs }, x, y, N, 0, iters, ITERS, cond)
    end)), true
  end
  make["copy-kernel"] = function()
    return launched(while_graph("copy_kernel", function(bs, cond)
      k.jacobi:launch({ grid = 1, block = N, stream = bs }, x, y, N, 0, iters, ITERS, cond)
      k.copy:launch({ grid = 1, block = N, stream = bs }, x, y, N)
    end)), true
  end
  make.lean = function()
    assert(N % 32 == 0, "--ablate lean: the warp-shuffle sweep needs a block of whole warps")
    return launched(while_graph("lean", function(bs, cond)
      k.lean:launch({ grid = 1, block = N, stream = bs }, x, y, N, 0, iters, ITERS, cond)
      x:upload(y, nil, nil, bs)
    end)), true
  end
  make["host-lean"] = function() return host(k.flag_lean, true), true end
  make.floor = function()
    return launched(while_graph("floor", function(bs, cond)
      k.count:launch({ grid = 1, block = 32, stream = bs }, iters, ITERS, cond)
    end)), false
  end
  make["floor-host"] = function()
    return function()
      iters:fill(0)
      repeat
        k.count_flag:launch(small, iters, ITERS, flag)
        flag:download_to(hflag, 4)
      until hflag[0] == 0
    end, false
  end
  make.unrolled = function()
    local G = cuasync.graph(function(gs)
      x:upload(hx, nil, nil, gs)
      iters:fill(0, nil, nil, gs)
      for _ = 1, ITERS do
        k.jacobi_flag:launch({ grid = 1, block = N, stream = gs }, x, y, N, 0, iters, ITERS, flag)
        x:upload(y, nil, nil, gs)
      end
    end, { name = "unrolled", stream = s })
    return launched(G), true
  end
  make["host-fused"] = function() return host(k.flag_fused, false), true end
  make["host-nosync"] = function()
    return function()
      x:upload(hx); iters:fill(0)
      for _ = 1, ITERS do
        k.jacobi_flag:launch(cfg, x, y, N, 0, iters, ITERS, flag)
        x:upload(y)
      end
      flag:download_to(hflag, 4)
    end, true
  end
  make["host-pinned"] = function()
    local pin = cuasync.host_alloc(4)
    local pf = pin:as("uint32_t")
    local scfg = { grid = 1, block = N, stream = s }
    return function()
      x:upload(hx, nil, nil, s); iters:fill(0, nil, nil, s)
      repeat
        k.jacobi_flag:launch(scfg, x, y, N, 0, iters, ITERS, flag)
        x:upload(y, nil, nil, s)
        flag:download_to(pin, 4, nil, s)
        s:synchronize()
      until pf[0] == 0
    end, true
  end

  local want = ffi.string(c.want, N * 4)
  local function verify(a)
    x:poison(); y:poison()
    a.run()
    local got = iters:download("uint32_t", 1)[0]
    assert(got == ITERS, ("--ablate %s: %d sweeps, want %d"):format(a.name, got, ITERS))
    if a.sweeps then
      assert(ffi.string(x:download("float", N), N * 4) == want, ("--ablate %s: x differs from the default while graph's"):format(a.name))
    end
  end

  local out = { ways = {} }
  for _, spec in ipairs(ABLATIONS) do
    local name = spec[1]
    if wanted[name] then
      local run, sweeps = make[name]()
      local a = { key = "ablate " .. name, name = name, side = spec[2], what = spec[3], run = run, sweeps = sweeps }
      verify(a)   -- also the warm-up
      out.ways[#out.ways + 1] = a
    end
  end

  -- medians: the rounds' medians by way key; while_ms, host_ms: the default ways'.
  function out.print(medians, while_ms, host_ms)
    for _, a in ipairs(out.ways) do verify(a) end   -- still right after the rounds
    print(("ablations (each verified; 'vs default': against the default way of its side, the while graph %.3f ms, the host loop %.3f ms)"):format(
      while_ms, host_ms))
    print(("  %-14s %10s %12s %10s %12s  %s"):format("", "ms", "us/sweep", "vs default", "host/this", "what"))
    for _, a in ipairs(out.ways) do
      local ms = medians[a.key]
      print(("  %-14s %10.3f %12.3f %9.2fx %11.2fx  %s"):format(a.name, ms, 1000 * ms / ITERS,
        ms / (a.side == "graph" and while_ms or host_ms), host_ms / ms, a.what))
    end
  end
  return out
end

return M
