#!/usr/bin/env python3
"""sdpa.py: the peers of examples/attention_sweep.lua. Times torch's scaled_dot_product_attention
backends (cuDNN, flash = FlashAttention-2, efficient = memory-efficient) on the same shapes, bf16,
forward, with CUDA events: the median of --reps timed calls after --warmup, and prints one JSON
object on stdout. TFLOP/s counts 4 B H S^2 D, halved for causal (the sweep's count).

  python3 examples/peers/sdpa.py --shapes 4x16x4096x128,4x16x4096x128c [--warmup 5] [--reps 20]

A shape is BxHxSxD, with a trailing c for causal. Where torch (or CUDA) is absent it prints
{"torch": false, "why": ...} and exits 0: the sweep then shows cuasync alone.
"""
import argparse
import json
import statistics
import sys


def parse_shape(text):
    causal = text.endswith("c")
    b, h, s, d = (int(x) for x in text.rstrip("c").split("x"))
    return b, h, s, d, causal


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", required=True, help="BxHxSxD[c],... (c: causal)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception as e:  # no torch: say so, the sweep goes on alone
        print(json.dumps({"torch": False, "why": "torch does not import: %s" % e}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"torch": False, "why": "torch %s sees no CUDA device" % torch.__version__}))
        return 0
    backends = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    out = {"torch": torch.__version__, "cudnn_version": torch.backends.cudnn.version(),
           "device": torch.cuda.get_device_name(0), "results": []}
    for text in a.shapes.split(","):
        b, h, s, d, causal = parse_shape(text)
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        row = {"shape": text, "b": b, "h": h, "s": s, "d": d, "causal": causal}
        for name, be in backends.items():
            try:
                with sdpa_kernel(be):
                    for _ in range(a.warmup):
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    times = []
                    for _ in range(a.reps):
                        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        start.record()
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        end.record()
                        end.synchronize()
                        times.append(start.elapsed_time(end))
                ms = statistics.median(times)
                row[name] = {"ms": ms, "tflops": flops / (ms * 1e-3) / 1e12}
            except Exception as e:  # a backend that does not serve the shape
                row[name] = {"error": str(e).splitlines()[0][:200] if str(e) else type(e).__name__}
        out["results"].append(row)
        del q, k, v
        torch.cuda.empty_cache()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
