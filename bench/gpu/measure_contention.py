#!/usr/bin/env python3
"""Second set of kernel measurements on one NVIDIA GPU for stepsim's compute model (see measure_kernels.py for the
first): what a communication-like kernel holding N SMs costs a GEMM running beside it, grouped (MoE) GEMMs against
the same experts' GEMMs one by one, and Transformer Engine-style fp8 cast kernels.

  contention.csv  a GEMM loop on one stream while a persistent copy kernel of N thread blocks (512 threads each,
                  like NCCL's channels) streams memory on another: GEMM time alone and beside it, the copy's rate
                  alone and beside it, for N = 4 .. 132 and three GEMM shapes.
  grouped.csv     torch._grouped_mm over E experts with t tokens each against the sum of E single GEMMs (both in
                  CUDA graphs): the grouped kernel's efficiency relative to dense GEMMs of the per-expert shape.
  cast.csv        bf16 -> fp8 (e4m3) cast, cast + transposed copy, and amax, with their bytes and rates.
Timing as in measure_kernels.py: CUDA graphs replayed after warm-up, median of replays, random data.
Usage: python3 bench/gpu/measure_contention.py OUT_DIR [--quick]   (--quick: checks the script on the CPU only)
"""
import csv
import os
import sys
import time
import traceback

import torch

OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
QUICK = "--quick" in sys.argv
DEV = "cpu" if QUICK else "cuda"
os.makedirs(OUT, exist_ok=True)
T0 = time.time()
LOG = open(os.path.join(OUT, "log2.txt"), "a")


def log(*a):
    s = " ".join(str(x) for x in a)
    print(f"[{time.time() - T0:6.1f}s] {s}", flush=True)
    LOG.write(s + "\n")
    LOG.flush()


def writer(name, fields):
    f = open(os.path.join(OUT, name), "w", newline="")
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()

    def row(**kw):
        w.writerow(kw)
        f.flush()

    return row


def graph_time(fn, per=10, reps=7):
    """Median device seconds of one fn() from a CUDA graph of `per` calls (CPU: one timed call)."""
    if DEV != "cuda":
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(per):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3 / per)
    times.sort()
    return times[len(times) // 2]


def section(name, fn, budget_s):
    log(f"== {name} (budget {budget_s} s) at {time.strftime('%H:%M:%S')}")
    t = time.time()
    try:
        fn(t + budget_s)
    except Exception:
        log(f"section {name} failed:\n{traceback.format_exc()}")
    log(f"== {name} done in {time.time() - t:.1f} s")


def contention_section(deadline):
    row = writer("contention.csv", ["gemm", "copy_ctas", "gemm_alone_us", "gemm_beside_us", "gemm_slowdown",
                                    "copy_alone_GBps", "copy_beside_GBps"])
    if QUICK:
        log("contention: needs CUDA and Triton")
        return
    import triton
    import triton.language as tl

    @triton.jit
    def persistent_copy(src, dst, n, iters, BLOCK: tl.constexpr):
        # Each of the grid's programs walks its own strided share of the buffer `iters` times: a fixed number of
        # SMs kept busy streaming memory, as NCCL's channel blocks are.
        pid = tl.program_id(0)
        nprog = tl.num_programs(0)
        for _ in range(iters):
            for start in range(pid * BLOCK, n, nprog * BLOCK):
                offs = start + tl.arange(0, BLOCK)
                mask = offs < n
                tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)

    N = 2**25  # 64 MiB of bf16 each way (more than L2 for source and destination together)
    src = torch.randn(N, device=DEV, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    shapes = [(8192, 8192, 8192), (4096, 3584, 8192), (4096, 8192, 3584)]  # square; a TP 8 fc1 and fc2 of 70B
    side = torch.cuda.Stream()
    for m, n, k in shapes:
        A = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
        B = torch.randn(k, n, device=DEV, dtype=torch.bfloat16)
        t_gemm = graph_time(lambda: torch.matmul(A, B))
        for ctas in (4, 8, 16, 24, 32, 48, 66, 132):
            if time.time() > deadline:
                log("contention: budget reached")
                return

            def copy(iters):
                persistent_copy[(ctas,)](src, dst, N, iters, BLOCK=4096, num_warps=16)

            for warm in (1, 2, 3):  # Triton specializes an argument equal to 1: compile both variants first
                copy(warm)
            torch.cuda.synchronize()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            copy(2)
            e1.record()
            e1.synchronize()
            t_copy = e0.elapsed_time(e1) * 1e-3 / 2
            # The GEMM loop covers ~60 ms; the copy kernel is sized to outlast it.
            n_gemm = max(4, int(0.06 / t_gemm))
            iters = int(max(1, 1.5 * n_gemm * t_gemm / t_copy)) + 1
            g0, g1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            c0, c1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            with torch.cuda.stream(side):
                c0.record(side)
                copy(iters)
                c1.record(side)
            time.sleep(0.002)  # let the copy occupy its SMs first
            g0.record()
            for _ in range(n_gemm):
                torch.matmul(A, B)
            g1.record()
            torch.cuda.synchronize()
            t_beside = g0.elapsed_time(g1) * 1e-3 / n_gemm
            copy_s = c0.elapsed_time(c1) * 1e-3
            # The copy ran beside the GEMMs for the GEMM loop's length and alone for the rest.
            alone_part = max(copy_s - n_gemm * t_beside, 0)
            copied_beside = iters * 4 * N - alone_part / t_copy * 4 * N if t_copy > 0 else 0
            row(gemm=f"{m}x{n}x{k}", copy_ctas=ctas, gemm_alone_us=round(t_gemm * 1e6, 2),
                gemm_beside_us=round(t_beside * 1e6, 2), gemm_slowdown=round(t_beside / t_gemm, 4),
                copy_alone_GBps=round(4 * N / t_copy / 1e9, 1),
                copy_beside_GBps=round(max(copied_beside, 0) / (n_gemm * t_beside) / 1e9, 1))
        del A, B


def grouped_section(deadline):
    row = writer("grouped.csv", ["model", "experts", "tokens_per_expert", "n", "k", "grouped_us", "loop_us",
                                 "grouped_over_loop", "grouped_tflops", "layout"])
    grouped = getattr(torch, "_grouped_mm", None)
    if QUICK or grouped is None:
        log("grouped: needs CUDA and torch._grouped_mm")
        return
    cases = []
    for E in (8, 32):
        for t in (256, 1024, 4096):
            cases.append(("dsv3-fc1", E, t, 4096, 7168))
            cases.append(("dsv3-fc2", E, t, 7168, 2048))
    for E in (16, 64):
        for t in (128, 512, 2048):
            cases.append(("qwen3-30b-a3b-fc1", E, t, 1536, 2048))
            cases.append(("qwen3-30b-a3b-fc2", E, t, 2048, 768))
    for model, E, t, n, k in cases:
        if time.time() > deadline:
            log("grouped: budget reached")
            return
        A = torch.randn(E * t, k, device=DEV, dtype=torch.bfloat16)
        W = torch.randn(E, n, k, device=DEV, dtype=torch.bfloat16)  # weights as nn.Linear holds them: [out, in]
        offs = torch.arange(t, E * t + 1, t, device=DEV, dtype=torch.int32)
        tg, layout = None, ""
        for name, B in (("w_t", W.transpose(-2, -1)), ("w_t_contig", W.transpose(-2, -1).contiguous())):
            try:
                tg = graph_time(lambda: grouped(A, B, offs=offs, out_dtype=torch.bfloat16))
                layout = name
                break
            except Exception as e:
                log(f"grouped {model} E{E} t{t} {name}: {type(e).__name__}: {str(e).splitlines()[0][:150]}")
        if tg is None:
            continue
        chunks = [A[i * t:(i + 1) * t] for i in range(E)]

        def loop():
            for i in range(E):
                torch.nn.functional.linear(chunks[i], W[i])

        tl_ = graph_time(loop, per=2)
        row(model=model, experts=E, tokens_per_expert=t, n=n, k=k, grouped_us=round(tg * 1e6, 2),
            loop_us=round(tl_ * 1e6, 2), grouped_over_loop=round(tg / tl_, 4),
            grouped_tflops=round(2.0 * E * t * n * k / tg / 1e12, 1), layout=layout)
        del A, W


def cast_section(deadline):
    row = writer("cast.csv", ["kernel", "shape", "time_us", "bytes", "GBps"])
    if QUICK or not hasattr(torch, "float8_e4m3fn"):
        log("cast: needs CUDA and float8")
        return
    for m, k in ((8192, 8192), (4096, 16384), (16384, 4096)):
        if time.time() > deadline:
            return
        x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
        e = m * k
        t = graph_time(lambda: x.to(torch.float8_e4m3fn))
        row(kernel="cast_fp8", shape=f"{m}x{k}", time_us=round(t * 1e6, 2), bytes=3 * e, GBps=round(3 * e / t / 1e9, 1))
        t = graph_time(lambda: x.t().contiguous().to(torch.float8_e4m3fn))
        row(kernel="transpose_then_cast_fp8", shape=f"{m}x{k}", time_us=round(t * 1e6, 2), bytes=3 * e,
            GBps=round(3 * e / t / 1e9, 1))
        t = graph_time(lambda: x.abs().amax())
        row(kernel="amax", shape=f"{m}x{k}", time_us=round(t * 1e6, 2), bytes=2 * e, GBps=round(2 * e / t / 1e9, 1))
        del x


if __name__ == "__main__":
    log(f"torch {torch.__version__} device {DEV}")
    section("grouped", grouped_section, 60)
    section("contention", contention_section, 90)
    section("cast", cast_section, 20)
    log("all done")
