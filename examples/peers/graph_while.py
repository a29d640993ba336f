#!/usr/bin/env python3
"""The peer of examples/bench_graph_loop.lua's loop row, in cuda.core.

The same convergence loop: the jacobi / jacobi_flag kernels of kernels-src/graph_loop.cu (the
file's own text, compiled by cuda.core's Program with kernels-src on the include path, so that
its #include <cuasync/graph.cuh> finds the same header cuasync hands NVRTC), one block of --n
threads, tol 0 so that every way runs to --iters sweeps, the same start vector as the Lua script
(its --seed: the same Park-Miller sequence, rounded to float the same way). Timed end to end
through the stream's synchronize, as the Lua script times its ways:

  host    the loop driven from Python: launch jacobi_flag, copy y -> x, copy the flag to pinned
          host memory and synchronize, each sweep (cuasync's host_loop, with cuda.core's launch)
  while   a graph with a while node (GraphBuilder.create_condition + while_loop: cuda.core 1.x;
          create_conditional_handle: 0.3 to 0.7) whose body is the jacobi kernel, which sets the
          condition, and the copy; one launch, one synchronize
  body    a graph of one sweep (kernel, copy, flag copy) launched once per sweep, the host
          reading the flag between launches: what a graph gives where there is no while node

Copies and fills go through cuda.bindings' driver calls on the builder's stream (captured like
any other stream work), so the graph's nodes are cuasync's: memcpy, memset, kernel, conditional.
Each way is checked: --iters sweeps, and x bit-identical to a NumPy float32 reference of the
same sweeps. The Lua script compares x_hex with its own x (same seed, same kernel).

Prints one JSON line on stdout: {"peer": "cuda.core", ..., "host_ms", "while_ms", "body_ms",
"ratio" (host / while), ...}; where the while graph cannot be made, while_ms is null and
"while_why" says why. On a failure: {"peer": "cuda.core", "error": "..."} and a nonzero exit
(2: cuda.core, cuda.bindings or NumPy does not import; 1: anything else).

  python3 examples/peers/graph_while.py [--iters 1000] [--n 256] [--rounds 7] [--seed S] [--kernels DIR]
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

PEER = "cuda.core"


def emit(obj, code):
    obj = dict({"peer": PEER}, **obj)
    print(json.dumps(obj), flush=True)
    if "error" in obj:
        print("graph_while.py: " + obj["error"], file=sys.stderr)
    sys.exit(code)


def imports():
    """cuda.core's names (the 1.x top level, else the 0.x experimental namespace), the driver, NumPy."""
    try:
        import numpy as np
    except Exception as e:  # noqa: BLE001 - any import failure is reported as such
        emit({"error": f"NumPy does not import: {type(e).__name__}: {e}"}, 2)
    try:
        import cuda.core as core
        if not hasattr(core, "Program"):
            import cuda.core.experimental as core
    except Exception as e:  # noqa: BLE001
        emit({"error": f"cuda.core does not import: {type(e).__name__}: {e}"}, 2)
    try:
        from cuda.bindings import driver
    except Exception:  # noqa: BLE001 - cuda-python before the cuda.bindings split
        try:
            from cuda import cuda as driver
        except Exception as e:  # noqa: BLE001
            emit({"error": f"cuda.bindings.driver does not import: {type(e).__name__}: {e}"}, 2)
    return core, driver, np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=1000, help="sweeps (the loop's cap; tol is 0)")
    ap.add_argument("--n", type=int, default=256, help="points = threads of the one block (<= 1024)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds (median)")
    ap.add_argument("--seed", type=int, default=12345, help="start of the Park-Miller sequence (the Lua script's)")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--kernels", default=os.path.join(here, "..", "..", "kernels-src"), help="kernels-src/")
    a = ap.parse_args()
    if not (1 <= a.n <= 1024 and a.iters >= 1 and a.rounds >= 1 and 1 <= a.seed < 2147483647):
        emit({"error": "need 1 <= --n <= 1024, --iters >= 1, --rounds >= 1, 1 <= --seed < 2^31 - 1"}, 1)
    core, driver, np = imports()
    stage = "start"
    try:
        stage = "setup"
        run = Loop(core, driver, np, a)
        stage = "the ways"
        emit(run.measure(), 0)
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - every failure leaves as a JSON line that says why
        emit({"error": f"{stage}: {type(e).__name__}: {e}"}, 1)


class Loop:
    def __init__(self, core, driver, np, a):
        self.core, self.drv, self.np, self.a = core, driver, np, a
        self.N, self.ITERS = a.n, a.iters
        self.dev = core.Device(0)
        self.dev.set_current()
        self.s = self.dev.create_stream()
        cc = self.dev.compute_capability
        path = os.path.join(a.kernels, "graph_loop.cu")
        with open(path) as f:
            code = f.read()
        opts = core.ProgramOptions(arch=f"sm_{cc[0]}{cc[1]}", std="c++17", include_path=[os.path.abspath(a.kernels)])
        obj = core.Program(code, code_type="c++", options=opts).compile("cubin")
        self.jacobi, self.jacobi_flag = obj.get_kernel("jacobi"), obj.get_kernel("jacobi_flag")
        self.cfg = core.LaunchConfig(grid=1, block=self.N)
        nb = self.N * 4
        self.nb = nb
        self.x, self.y, self.iters, self.flag = (self.call("cuMemAlloc", s) for s in (nb, nb, 4, 4))
        self.hx, self.hflag = self.call("cuMemAllocHost", nb), self.call("cuMemAllocHost", 4)
        self.x0 = self.start_vector()
        ctypes.memmove(self.hx, self.x0.ctypes.data, nb)
        self.want = self.reference()

    # -- driver calls ------------------------------------------------------------------------------
    def call(self, name, *args):
        """driver.name(*args); raises with the driver's error name; returns the result (or None)."""
        out = getattr(self.drv, name)(*args)
        err, rest = (out[0], out[1:]) if isinstance(out, tuple) else (out, ())
        if int(err) != 0:
            _, ename = self.drv.cuGetErrorName(err)
            raise RuntimeError(f"{name}: {ename.decode() if isinstance(ename, bytes) else ename}")
        if not rest:
            return None
        v = rest[0]
        return int(v) if not isinstance(v, (bytes, str)) else v

    def start_vector(self):
        np, seed = self.np, self.a.seed
        x = np.empty(self.N, dtype=np.float32)
        for i in range(self.N):   # as the Lua script: seed = seed * 16807 % (2^31 - 1); x[i] = seed / (2^31 - 1)
            seed = seed * 16807 % 2147483647
            x[i] = np.float32(seed / 2147483647)
        return x

    def reference(self):
        """The sweeps in float32 (the kernel's arithmetic: 0.5f * (a + b), no FMA to contract)."""
        np = self.np
        x = self.x0.copy()
        k = 0
        half = np.float32(0.5)
        while True:
            y = x.copy()
            y[1:-1] = half * (x[:-2] + x[2:])
            r = float(np.max(np.abs(y - x))) if self.N > 0 else 0.0
            k += 1
            x = y
            if not (r > 0.0 and k < self.ITERS):
                return k, x

    def args(self, last):
        np = self.np
        return (np.uint64(self.x), np.uint64(self.y), np.uint32(self.N), np.float32(0.0),
                np.uint64(self.iters), np.uint32(self.ITERS), np.uint64(last))

    # enqueued on a stream handle (a captured one records a node)
    def reset(self, h):
        self.call("cuMemcpyHtoDAsync", self.x, self.hx, self.nb, h)
        self.call("cuMemsetD32Async", self.iters, 0, 1, h)

    def sweep_copy(self, h):
        self.call("cuMemcpyDtoDAsync", self.x, self.y, self.nb, h)

    # -- the graphs ---------------------------------------------------------------------------------
    def while_graph(self):
        """(graph, None) or (None, why): a graph with a while node, or why cuda.core cannot make one."""
        gb = self.s.create_graph_builder()
        gb.begin_building()
        try:
            self.reset(gb.stream.handle)
            if hasattr(gb, "create_condition"):
                cond = gb.create_condition(default_value=1)
                value = int(cond.handle)
            elif hasattr(gb, "create_conditional_handle"):
                cond = gb.create_conditional_handle(default_value=1)
                value = int(cond)
            else:
                raise NotImplementedError("this cuda.core's GraphBuilder has no create_condition / create_conditional_handle")
            if not hasattr(gb, "while_loop"):
                raise NotImplementedError("this cuda.core's GraphBuilder has no while_loop")
            body = gb.while_loop(cond)
            body.begin_building()
            self.core.launch(body, self.cfg, self.jacobi, *self.args(value))
            self.sweep_copy(body.stream.handle)
            body.end_building()
        except Exception as e:  # noqa: BLE001 - measured without it, saying why
            try:
                gb.end_building()
            except Exception:  # noqa: BLE001 - the capture may be invalidated already
                pass
            return None, f"{type(e).__name__}: {e}"
        gb.end_building()
        g = gb.complete()
        g.upload(self.s)
        return g, None

    def body_graph(self):
        gb = self.s.create_graph_builder()
        gb.begin_building()
        h = gb.stream.handle
        self.core.launch(gb, self.cfg, self.jacobi_flag, *self.args(self.flag))
        self.sweep_copy(h)
        self.call("cuMemcpyDtoHAsync", self.hflag, self.flag, 4, h)
        gb.end_building()
        g = gb.complete()
        g.upload(self.s)
        return g

    # -- the ways --------------------------------------------------------------------------------
    def flag_value(self):
        return ctypes.c_uint32.from_address(self.hflag).value

    def way_host(self):
        h = self.s.handle
        self.reset(h)
        launch, cfg, k, args = self.core.launch, self.cfg, self.jacobi_flag, self.args(self.flag)
        while True:
            launch(self.s, cfg, k, *args)
            self.sweep_copy(h)
            self.call("cuMemcpyDtoHAsync", self.hflag, self.flag, 4, h)
            self.s.sync()   # the host reads the flag each sweep
            if self.flag_value() == 0:
                return

    def way_while(self):
        self.g_while.launch(self.s)
        self.s.sync()

    def way_body(self):
        self.reset(self.s.handle)
        while True:
            self.g_body.launch(self.s)
            self.s.sync()
            if self.flag_value() == 0:
                return

    def result(self):
        np = self.np
        x = np.empty(self.N, dtype=np.float32)
        it = np.zeros(1, dtype=np.uint32)
        self.call("cuMemcpyDtoH", x.ctypes.data, self.x, self.nb)
        self.call("cuMemcpyDtoH", it.ctypes.data, self.iters, 4)
        return int(it[0]), x

    def check(self, name):
        """The way's sweeps and x against the reference, on x and y poisoned before it ran."""
        k, x = self.result()
        want_k, want_x = self.want
        if k != want_k or k != self.ITERS:
            raise RuntimeError(f"{name}: {k} sweeps, the reference {want_k}, want {self.ITERS}")
        if x.tobytes() != want_x.tobytes():
            bad = int(self.np.argmax(x != want_x))
            raise RuntimeError(f"{name}: x differs from the float32 reference first at {bad}: {x[bad]!r} vs {want_x[bad]!r}")

    def poison(self):
        for p in (self.x, self.y, self.iters):
            self.call("cuMemsetD8Async", p, 0xFF, 4 if p == self.iters else self.nb, self.s.handle)
        self.s.sync()

    def measure(self):
        self.g_while, why = self.while_graph()
        self.g_body = self.body_graph()
        ways = {"host": self.way_host, "body": self.way_body}
        if self.g_while is not None:
            ways["while"] = self.way_while
        for name, fn in ways.items():   # each checked once (also the warm-up)
            self.poison()
            fn()
            self.check(name)
        times = {k: [] for k in ways}
        for _ in range(self.a.rounds):
            for name, fn in ways.items():
                t0 = time.perf_counter_ns()
                fn()
                times[name].append((time.perf_counter_ns() - t0) / 1e6)
        for name, fn in ways.items():   # still right after the rounds
            self.poison()
            fn()
            self.check(name)
        med = {k: statistics.median(v) for k, v in times.items()}
        ver = getattr(self.core, "__version__", None)
        if ver is None:
            try:
                from importlib.metadata import version
                ver = version("cuda-core")
            except Exception:  # noqa: BLE001
                ver = "unknown"
        out = {
            "version": ver, "device": self.dev.name, "n": self.N, "iters": self.ITERS, "rounds": self.a.rounds,
            "seed": self.a.seed, "sweeps": self.want[0],
            "host_ms": med["host"], "body_ms": med["body"], "while_ms": med.get("while"),
            "ratio": med["host"] / med["while"] if "while" in med else None,
            "body_ratio": med["host"] / med["body"],
            "x_hex": self.want[1].tobytes().hex(),
        }
        if why:
            out["while_why"] = why
        return out


if __name__ == "__main__":
    main()
