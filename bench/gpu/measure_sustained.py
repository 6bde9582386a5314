#!/usr/bin/env python3
"""Sustained (power-limited) rates on one NVIDIA GPU, third set of measurements for stepsim's compute model: each
kernel runs back to back for about 5 s, long enough for the clock to settle at the power limit as it does in a
training step, while nvidia-smi samples the SM clock and power every 100 ms.

  sustained.csv       kernel, shape, seconds looped, calls, mean time per call, TFLOP/s, fraction of the bf16
                      datasheet peak (989.5 TFLOP/s for H100 SXM), mean SM clock and power over the loop.
  sustained_clocks.csv  the nvidia-smi samples (timestamp, SM clock, power).
Kernels: cuDNN and flash (FlashAttention-2) attention forward and forward+backward (causal, head dim 128, 16 heads,
4K and 8K tokens; Llama-3 70B's TP-8 shape, 8 query heads on 1 KV head, 8K), and an 8192^3 bf16 GEMM for reference.
Usage: python3 bench/gpu/measure_sustained.py OUT_DIR [--quick]   (--quick: 0.2 s loops, to check the script)
"""
import csv
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
QUICK = "--quick" in sys.argv
LOOP_S = 0.2 if QUICK else 5.0
PEAK = 989.5e12
os.makedirs(OUT, exist_ok=True)


def main():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader",
                            "-lms", "100"], stdout=open(os.path.join(OUT, "sustained_clocks.csv"), "w"),
                           stderr=subprocess.DEVNULL)
    f = open(os.path.join(OUT, "sustained.csv"), "w", newline="")
    w = csv.DictWriter(f, fieldnames=["kernel", "shape", "loop_s", "calls", "time_us", "tflops", "fraction_of_peak",
                                      "start", "end"])
    w.writeheader()

    def loop(name, shape, fn, flops):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        start = time.strftime("%H:%M:%S")
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t = time.perf_counter()
        calls = 0
        e0.record()
        while time.perf_counter() - t < LOOP_S:
            for _ in range(10):
                fn()
            calls += 10
            if calls % 50 == 0:
                torch.cuda.synchronize()
        e1.record()
        torch.cuda.synchronize()
        sec = e0.elapsed_time(e1) * 1e-3
        w.writerow(dict(kernel=name, shape=shape, loop_s=round(sec, 3), calls=calls, time_us=round(sec / calls * 1e6, 2),
                        tflops=round(flops * calls / sec / 1e12, 1), fraction_of_peak=round(flops * calls / sec / PEAK, 4),
                        start=start, end=time.strftime("%H:%M:%S")))
        f.flush()
        print(name, shape, round(flops * calls / sec / PEAK, 4), flush=True)

    A = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    loop("gemm_bf16", "8192x8192x8192", lambda: torch.matmul(A, B), 2.0 * 8192**3)
    del A, B
    for b, hq, hkv, s in ((4, 16, 16, 4096), (2, 16, 16, 8192), (1, 8, 1, 8192)):
        q = torch.randn(b, hq, s, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(b, hkv, s, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(b, hkv, s, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        go = torch.randn(b, hq, s, 128, device="cuda", dtype=torch.bfloat16)
        gqa = {"enable_gqa": True} if hkv != hq else {}
        fwd = 4.0 * b * hq * s * s * 128 * 0.5
        shape = f"b{b} h{hq}/{hkv} s{s} d128 causal"
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel([backend]):
                    loop(f"{name}_fwd", shape, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa), fwd)

                    def fb():
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
                        torch.autograd.grad(o, (q, k, v), go)

                    loop(f"{name}_fwd_bwd", shape, fb, 3.5 * fwd)
            except Exception as e:
                print(name, shape, "failed:", type(e).__name__, str(e).splitlines()[0][:120], flush=True)
        del q, k, v, go
    smi.terminate()


if __name__ == "__main__":
    if QUICK and not torch.cuda.is_available():
        print("needs CUDA; nothing to check here")
    else:
        main()
