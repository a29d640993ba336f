-- bench_graph_loop.lua: what device-side control flow and per-node edits give a Lua script, each
-- way verified, measured side by side in interleaved rounds (median of the rounds).
--  1. A Jacobi loop of --iters sweeps of small one-block kernels (tol 0: the loop runs to its
--     cap), end to end through the final synchronize: a while node in a graph (the kernel sets
--     the condition) against the same loop driven from Lua (launch, copy, read the flag back,
--     each sweep). Both must end with the same sweep count and bit-identical x. Beside them, in
--     the same rounds, the while graph whose body holds --unroll copies of (kernel, copy)
--     (g:while_(c, fn, { unroll = U }); the kernel jacobi_guarded does nothing once the loop has
--     ended), so the while node's per-round cost is paid once per U sweeps; verified to end with
--     the same sweeps and x, also at a sweep count that is not a multiple of U.
--  2. A graph of --nodes small launches: one kernel's scalar changed and the graph launched,
--     through G.nodes[i]:set(...) against a re-capture + G:update(fn); the output verified.
--     Timed through the synchronize (both run the 3000 kernels), and the host calls alone.
--  3. G:launch of a checked graph against the bare native graph launch (the check's cost).
-- Then cuda.core on the same loop: examples/peers/graph_while.py (python3 where it and cuda.core
-- import; --peer off skips it), its while graph against its host-driven loop, the same seed,
-- checked against this run's x; where it cannot run, a line says why.
-- --ablate a,b,...: variants of loop 1 timed in the same rounds (off by default; the default
-- ways, their kernels and their graphs are the same with or without it), each verified: what
-- the while graph's and the host loop's time per sweep is made of (ABLATIONS below).
--   luajit examples/bench_graph_loop.lua [--iters 1000] [--nodes 3000] [--rounds 7] [--unroll 4] [--ablate all] [--peer off]
package.path = (debug.getinfo(1, "S").source:match("^@(.*)/") or ".") .. "/lib/?.lua;" .. package.path
require("example.checkout")   -- examples/lib/: this checkout's lua/ and build/ first on the paths
local ffi = require("ffi")
local cuasync = require("cuasync")
local native = require("cuasync.native")
local device = require("cuasync.device")
local ablation = require("example.graph_loop_ablations")
local peer = require("example.peer")
local o = require("cuasync.tools.cli").script{ options = {
  { "--iters N", "Jacobi sweeps per loop", default = 1000 },
  { "--nodes N", "launches in the edited graph", default = 3000 },
  { "--rounds N", "interleaved rounds", default = 7 },
  { "--unroll U", "copies of the body in the unrolled while graph's body (1 or off: not run)", default = 4,
    type = function(v)
      if v == "off" then return 1 end
      local n = tonumber(v)
      if n and n % 1 == 0 and n >= 1 then return n end
      return nil, "is not off or an integer >= 1"
    end },
  { "--ablate LIST", ("variants of the loop, timed beside it: %s, or all"):format(table.concat(ablation.NAMES, ", ")),
    type = "list", check = ablation.check },
  { "--peer WHAT", "cuda.core on the same loop (examples/peers/graph_while.py)", default = "auto", choices = { "auto", "off" } },
} }

local prog = cuasync.program{ file = "graph_loop.cu" }
local ok, why = cuasync.available()
if not ok then
  local names = {}
  for k in prog:ptx():gmatch("%.entry ([%w_]+)%(") do names[#names + 1] = k end
  print(("compiled graph_loop.cu (%s) for %s (%d bytes); runs skipped: %s"):format(table.concat(names, ", "), prog:arch(),
    #prog:cubin(), why))
  if o.ablate then
    local ap = ablation.program(cuasync, cuasync.kernels_dir())
    print(("compiled the ablations' variants for %s (%d bytes)"):format(ap:arch(), #ap:cubin()))
  end
  return
end

local mod = prog:compile()
local jacobi = mod:kernel("jacobi", "ptr, ptr, u32, f32, ptr, u32, cond")
local jacobi_flag = mod:kernel("jacobi_flag", "ptr, ptr, u32, f32, ptr, u32, ptr")
local scale = mod:kernel("scale", "ptr, ptr, f32, u32")
local guarded = mod:kernel("jacobi_guarded", "ptr, ptr, u32, f32, ptr, u32, ptr, cond")
local N, ITERS, NODES, U = 256, o.iters, o.nodes, o.unroll
local now = cuasync.now_ns
local function median(t) table.sort(t); return t[math.ceil(#t / 2)] end

-- -- 1. the loop ---------------------------------------------------------------------------------
local hx = cuasync.host_alloc(N * 4)
local fx = hx:as("float")
local seed = (os.time() % 2147483646) + 1
local seed0 = seed   -- the peer makes the same x from it
for i = 0, N - 1 do seed = seed * 16807 % 2147483647; fx[i] = seed / 2147483647 end
local x, y, iters, flag = cuasync.alloc(N * 4), cuasync.alloc(N * 4), cuasync.alloc(4), cuasync.alloc(4)
local done = cuasync.alloc(4)   -- jacobi_guarded's flag: the loop has ended
local cfg = { grid = 1, block = N }
local s = cuasync.stream{ non_blocking = true }
-- The while graph of max_iters sweeps; given unroll, its body is that many copies of the sweep
-- (jacobi_guarded) and the copy, the done flag reset with the count.
local function while_graph(name, max_iters, unroll)
  return cuasync.graph(function(gs, g)
    x:upload(hx, nil, nil, gs)
    iters:fill(0, nil, nil, gs)
    if unroll then done:fill(0, nil, nil, gs) end
    local c = g:condition{ default = 1, name = "running" }
    g:while_(c, function(bs)
      if unroll then
        guarded:launch({ grid = 1, block = N, stream = bs }, x, y, N, 0, iters, max_iters, done, c)
      else
        jacobi:launch({ grid = 1, block = N, stream = bs }, x, y, N, 0, iters, max_iters, c)
      end
      x:upload(y, nil, nil, bs)   -- a copy after the loop ended copies y, which is x already
    end, unroll and { unroll = unroll } or nil)
  end, { name = name, stream = s })
end
local loop = while_graph("jacobi", ITERS)
local function launched(G) return function() G:launch(s); s:synchronize() end end
local graph_loop = launched(loop)
local hflag = ffi.new("uint32_t[1]")
local function host_loop()
  x:upload(hx); iters:fill(0)
  repeat
    jacobi_flag:launch(cfg, x, y, N, 0, iters, ITERS, flag)
    x:upload(y)
    flag:download_to(hflag, 4)   -- waits for the sweep: the host reads the flag each iteration
  until hflag[0] == 0
end
local function result()
  return iters:download("uint32_t", 1)[0], x:download("float", N)
end

graph_loop(); local gi, gx = result()
host_loop(); local hi, hx2 = result()
assert(gi == ITERS and hi == ITERS, ("sweeps: graph %d, host %d, want %d"):format(gi, hi, ITERS))
assert(ffi.string(gx, N * 4) == ffi.string(hx2, N * 4), "the while graph and the host loop end with different x")

-- the unrolled while graph: run on poisoned x and y, the sweeps and x must be the default's; and
-- at a sweep count that is not a multiple of U (a last round whose later copies do nothing)
local graph_unrolled
local function same_as(G, P, sweeps, what)
  local runs = {}
  for i, H in ipairs({ P, G }) do
    x:poison(); y:poison(); done:poison()
    H:launch(s); s:synchronize()
    local k, v = result()
    assert(k == sweeps, ("%s: %d sweeps, want %d"):format(what, k, sweeps))
    runs[i] = ffi.string(v, N * 4)
  end
  assert(runs[1] == runs[2], what .. ": x differs from the default while graph's")
end
if U > 1 then
  local unrolled = while_graph("jacobi_unrolled", ITERS, U)
  graph_unrolled = launched(unrolled)
  same_as(unrolled, loop, ITERS, ("while graph, body x %d"):format(U))
  local odd = ITERS - 1 - ((ITERS - 1) % U == 0 and 1 or 0)
  if odd >= 1 then
    local P, G = while_graph("check", odd), while_graph("check_unrolled", odd, U)
    same_as(G, P, odd, ("while graph, body x %d, %d sweeps"):format(U, odd))
    P:close(); G:close()
  end
end

-- -- 2. one node's scalar in a NODES-launch graph -----------------------------------------------
local n = 1024
local a, b = cuasync.alloc(n * 4), cuasync.alloc(n * 4)
local ha = cuasync.host_alloc(n * 4)
for i = 0, n - 1 do ha:as("float")[i] = i end
a:upload(ha)
local MID = math.floor(NODES / 2)
local function capture_fn(v)
  return function(gs, g)
    for i = 1, NODES do
      if i == MID then g:name("mid") end
      scale:launch({ grid = 4, block = 256, stream = gs }, b, a, i == MID and v or 1.0, n)
    end
  end
end
local big = cuasync.graph(capture_fn(1.0), { name = "big", stream = s })
local value = 1
local node = big.nodes.mid
-- each also keeps its host calls' own time (before the synchronize): the issue's wording, a
-- change + launch against a re-capture + update, as the host pays them
local host = { edit = {}, recapture = {} }
local function edit()
  value = value + 1
  local t0 = now()
  node:set(b, a, value, n); big:launch(s)
  host.edit[#host.edit + 1] = tonumber(now() - t0) / 1e6
  s:synchronize()
end
local function recapture()
  value = value + 1
  local t0 = now()
  big:update(capture_fn(value)); node = big:node("mid")
  host.recapture[#host.recapture + 1] = tonumber(now() - t0) / 1e6
  big:launch(s); s:synchronize()
end
-- every node writes b, so the edited node's output is overwritten by the next: the edit is
-- verified on a one-node graph
local probe = cuasync.graph(function(gs, g) g:name("only"); scale:launch({ grid = 4, block = 256, stream = gs }, b, a, 1.0, n) end)
probe.nodes.only:set(b, a, 3.0, n); probe:launch(); cuasync.synchronize()
local pb = b:download("float", n)
for i = 0, n - 1 do assert(pb[i] == 3 * i, "node:set did not reach the kernel") end

-- -- 3. the launch check's cost ------------------------------------------------------------------
local one = cuasync.graph(function(gs) scale:launch({ grid = 1, block = 32, stream = gs }, b, a, 1.0, 32) end, { stream = s })
local C, errbuf, ERRLEN = native.C, native.errbuf, native.ERRLEN
local sh = s.handle
local REPS = 10000
local function checked() for _ = 1, REPS do one:launch(s) end; s:synchronize() end
local function bare() local x_ = one.h.exec for _ = 1, REPS do C.cuasync_graph_launch(x_, sh, errbuf, ERRLEN) end; s:synchronize() end

-- -- the ablations asked for (none by default): their ways, each verified against gx ----------
local ablate = ablation.new{ cuasync = cuasync, kernels = cuasync.kernels_dir(), names = o.ablate, N = N, ITERS = ITERS,
  x = x, y = y, iters = iters, flag = flag, hx = hx, stream = s, want = gx }

-- -- rounds ----------------------------------------------------------------------------------------
local ways = { graph_loop = graph_loop, host_loop = host_loop, edit = edit, recapture = recapture, checked = checked, bare = bare }
local order = { "graph_loop", "host_loop", "edit", "recapture", "checked", "bare" }
if graph_unrolled then ways.graph_unrolled = graph_unrolled; table.insert(order, 2, "graph_unrolled") end
for _, a in ipairs(ablate.ways) do ways[a.key] = a.run; order[#order + 1] = a.key end
local t = {}
for _, k in ipairs(order) do t[k] = {}; ways[k]() end   -- warm
host.edit, host.recapture = {}, {}
for _ = 1, o.rounds do
  for _, k in ipairs(order) do
    local t0 = now(); ways[k](); t[k][#t[k] + 1] = tonumber(now() - t0) / 1e6
  end
end
graph_loop(); gi = result(); assert(gi == ITERS)
if graph_unrolled then   -- still right after the rounds
  x:poison(); graph_unrolled(); local ui, ux = result()
  assert(ui == ITERS and ffi.string(ux, N * 4) == ffi.string(gx, N * 4), "the unrolled while graph went wrong in the rounds")
end
local m = {}
for _, k in ipairs(order) do m[k] = median(t[k]) end
print(("device: %s, driver %d; %d rounds, median ms"):format(cuasync.device(0).name, device.driver_version(), o.rounds))
print(("%-46s %10s %10s %8s  %s"):format("", "ms", "vs", "ratio", "target"))
print(("%-46s %10.3f %10.3f %7.2fx  >= 3x"):format(("while graph vs host loop, %d sweeps"):format(ITERS),
  m.graph_loop, m.host_loop, m.host_loop / m.graph_loop))
if graph_unrolled then
  print(("%-46s %10.3f %10.3f %7.2fx  >= 3x"):format(("while graph, body x %d, vs host loop"):format(U),
    m.graph_unrolled, m.host_loop, m.host_loop / m.graph_unrolled))
else
  print(("%-46s %10s %10s %8s  (--unroll %s)"):format("while graph, body x U", "-", "-", "-", "1: not run"))
end
print(("%-46s %10.3f %10.3f %7.1f%%  <= 10%%"):format(("node:set+launch vs update+launch, %d nodes"):format(NODES),
  m.edit, m.recapture, 100 * m.edit / m.recapture))
print(("%-46s %10.3f %10.3f %7.1f%%  <= 10%%"):format("  the host's calls only (no synchronize)",
  median(host.edit), median(host.recapture), 100 * median(host.edit) / median(host.recapture)))
print(("%-46s %10.3f %10.3f %7.1f%%  <= 2%%"):format(("G:launch vs bare native launch, %d launches"):format(REPS),
  m.checked, m.bare, 100 * (m.checked - m.bare) / m.bare))
ablate.print(m, m.graph_loop, m.host_loop)

-- -- cuda.core on the same loop (after the rounds: the GPU is idle while it runs) -------------------
if o.peer == "off" then
  print("cuda.core on the same loop: not run (--peer off)")
else
  local p, why = peer.run("peers/graph_while.py", { "--iters", ITERS, "--n", N, "--rounds", o.rounds, "--seed", seed0,
    "--kernels", cuasync.kernels_dir() })
  if not p then
    print("cuda.core on the same loop: not measured: " .. why)
  else
    assert(p.sweeps == ITERS, ("the peer ran %s sweeps, want %d"):format(tostring(p.sweeps), ITERS))
    local same = p.x_hex == peer.hex(ffi.string(gx, N * 4))
    assert(same, "the peer's x differs from this run's (same seed, same kernel)")
    local label = ("cuda.core %s: while graph vs host loop"):format(p.version or "?")
    if p.while_ms then
      print(("%-46s %10.3f %10.3f %7.2fx  (cuasync %.2fx)"):format(label, p.while_ms, p.host_ms, p.host_ms / p.while_ms,
        m.host_loop / m.graph_loop))
    else
      print(("%-46s %10s %10.3f %8s  no while graph: %s"):format(label, "-", p.host_ms, "-", p.while_why or "?"))
    end
    print(("%-46s %10.3f %10.3f %7.2fx  (a graph of one sweep, launched per sweep)"):format("cuda.core: body graph per sweep vs host loop",
      p.body_ms, p.host_ms, p.host_ms / p.body_ms))
    print("  (cuda.core's x is bit-identical to this run's; its rounds ran after these, in python3)")
  end
end
