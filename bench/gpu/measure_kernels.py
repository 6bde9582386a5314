#!/usr/bin/env python3
"""Kernel measurements on one NVIDIA GPU at the shapes of real training jobs, for stepsim's compute model.

What it measures (each section writes its own CSV under the output folder, so a run stopped early keeps what it had):
  gemm.csv       bf16 GEMMs of Megatron's linear layers (forward, dgrad, wgrad in their real layouts: F.linear,
                 dY @ W, dY^T @ X) for the dense and MoE models of ../shared/data/published-runs at 2K-16K tokens,
                 plus sweeps over one dimension in steps of 128 (tile and wave quantization), and fp8 GEMMs
                 (torch._scaled_mm, TN as Transformer Engine runs every fp8 GEMM).
  attention.csv  torch scaled_dot_product_attention, flash (FlashAttention-2) and cuDNN backends, causal and not,
                 head dim 64/128, 512-32K tokens at 16K tokens per batch (the FlashAttention-3 paper's setup),
                 forward and forward+backward.
  membound.csv   memory-bound kernels: copy, add, SwiGLU, LayerNorm fwd/bwd, cross-entropy fwd+bwd over a
                 vocabulary shard, embedding fwd/bwd, fused AdamW: time and bytes moved (the fewest bytes the kernel
                 must read and write).
  misc.json      device properties, kernel floor (graph-replayed tiny kernel), eager host overhead per op, the
                 cuBLAS SM carve-out curve, concurrent copy + GEMM slowdown, and the SM clock and power sampled by
                 nvidia-smi during a 6 s GEMM loop (the sustained clock under the power limit).
Timing: CUDA events around each launch, after warm-up, median of repeats; random inputs (never zeros); inputs
smaller than 64 MiB rotate over 4 buffers so repeats do not run from L2.
Usage: python3 bench/gpu/measure_kernels.py OUT_DIR [--quick]   (--quick: tiny shapes on the CPU, to check the script)
"""
import csv
import json
import math
import os
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
QUICK = "--quick" in sys.argv
DEV = "cpu" if QUICK else "cuda"
os.makedirs(OUT, exist_ok=True)
LOG = open(os.path.join(OUT, "log.txt"), "a")
T0 = time.time()


def log(*a):
    s = " ".join(str(x) for x in a)
    print(f"[{time.time() - T0:6.1f}s] {s}", flush=True)
    LOG.write(s + "\n")
    LOG.flush()


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def _events_time(fn, reps):
    """Seconds per call of `reps` back-to-back calls between two CUDA events (the host runs ahead)."""
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e-3 / reps


METHOD = {"last": ""}


def time_fn(fn, min_reps=5, max_reps=50, budget_s=0.25):
    """Device seconds of one fn(): the calls are captured back to back in a CUDA graph (no host launch gaps, as in
    a training step where the host runs ahead), replayed after warm-up; median over replays. Falls back to
    back-to-back launches between events where capture fails. METHOD["last"] says which."""
    if DEV != "cuda":
        fn()
        t = time.perf_counter()
        fn()
        METHOD["last"] = "cpu"
        return time.perf_counter() - t
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    sync()
    est = _events_time(fn, 3)
    # enough calls per replay to cover ~2 ms, at most 20 (each call keeps its own output in the graph's pool)
    per = int(min(20, max(1, math.ceil(2e-3 / max(est, 1e-7)))))
    reps = int(min(max_reps, max(min_reps, budget_s / max(est * per, 1e-7))))
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(per):
                fn()
        g.replay()
        sync()
        times = [_events_time(g.replay, 1) / per for _ in range(reps)]
        METHOD["last"] = f"graph{per}"
        del g
    except Exception:
        sync()
        times = [_events_time(fn, per) for _ in range(reps)]
        METHOD["last"] = f"events{per}"
    times.sort()
    return times[len(times) // 2]


class Rotating:
    """Up to 4 sets of inputs, so that small problems are not timed from a warm L2."""

    def __init__(self, make, nbytes):
        n = 4 if nbytes < 64 * 2**20 else 1
        self.sets = [make() for _ in range(n)]
        self.i = 0

    def next(self):
        self.i = (self.i + 1) % len(self.sets)
        return self.sets[self.i]


def writer(name, fields):
    path = os.path.join(OUT, name)
    f = open(path, "w", newline="")
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()

    def row(**kw):
        w.writerow(kw)
        f.flush()

    return row


def section(name, fn, budget_s):
    log(f"== {name} (budget {budget_s} s) at {time.strftime('%H:%M:%S')}")
    t = time.time()
    try:
        fn(t + budget_s)
    except Exception:
        log(f"section {name} failed:\n{traceback.format_exc()}")
    log(f"== {name} done in {time.time() - t:.1f} s")


# ---------------------------------------------------------------------------------------------------------------
# Linear layers of the published runs' models, per tensor-parallel rank. (name, hidden, heads, kv_heads, head_dim,
# ffn, gated, vocab, tp). Sequence parallelism gathers all tokens of the micro-batch before each GEMM, so a GEMM's
# m = micro-batch x sequence / context-parallel.
MODELS = [
    ("gpt-7.1b", 4096, 32, 32, 128, 16384, False, 131072, 2),
    ("gpt-16b", 6144, 48, 48, 128, 24576, False, 131072, 4),
    ("gpt-32b", 7168, 56, 56, 128, 28672, False, 131072, 8),
    ("gpt-70b", 8192, 64, 64, 128, 32768, False, 131072, 8),
    ("gpt-175b", 12288, 96, 96, 128, 49152, False, 131072, 8),
    ("gpt-314b", 16384, 128, 128, 128, 65536, False, 131072, 8),
    ("gpt-462b", 18432, 144, 144, 128, 73728, False, 131072, 8),
    ("llama2-7b-tp1", 4096, 32, 32, 128, 11008, True, 32000, 1),
    ("llama2-7b-tp4", 4096, 32, 32, 128, 11008, True, 32000, 4),
    ("llama3-8b-tp1", 4096, 32, 8, 128, 14336, True, 128256, 1),
    ("llama3-70b-tp4", 8192, 64, 8, 128, 28672, True, 128256, 4),
    ("llama3-70b-tp8", 8192, 64, 8, 128, 28672, True, 128256, 8),
    ("llama3-405b-tp8", 16384, 128, 8, 128, 53248, True, 128256, 8),
    ("dsv3-dense-tp2", 7168, 128, 128, 128, 18432, True, 129280, 2),
]
TOKENS = [2048, 4096, 8192, 16384]
# MoE expert GEMMs (grouped GEMMs run as one GEMM per expert at its token count): (name, hidden, expert ffn, gated).
EXPERTS = [("dsv3-expert", 7168, 2048, True), ("qwen3-30b-a3b-expert", 2048, 768, True),
           ("mixtral-8x7b-expert", 4096, 14336, True)]
EXPERT_TOKENS = [256, 512, 1024, 2048, 4096, 8192]


def linear_shapes():
    """(model, layer, tokens, out n, in k) of every linear layer of every model above."""
    out = []
    for name, h, heads, kv, hd, ffn, gated, vocab, tp in MODELS:
        for T in TOKENS:
            out.append((name, "qkv", T, (heads + 2 * kv) * hd // tp, h))
            out.append((name, "proj", T, h, heads * hd // tp))
            out.append((name, "fc1", T, (2 if gated else 1) * ffn // tp, h))
            out.append((name, "fc2", T, h, ffn // tp))
            out.append((name, "logits", T, -(-vocab // tp // 128) * 128, h))
    for name, h, effn, gated in EXPERTS:
        for T in EXPERT_TOKENS:
            out.append((name, "fc1", T, (2 if gated else 1) * effn, h))
            out.append((name, "fc2", T, h, effn))
    return out


def gemm_flops(m, n, k):
    return 2.0 * m * n * k


def bench_bf16(m, n, k, pass_):
    """One pass of a linear layer y[m,n] = x[m,k] W[n,k]^T in its real layout."""
    dt = torch.bfloat16 if DEV == "cuda" else torch.float32

    if pass_ == "fwd":
        make = lambda: (torch.randn(m, k, device=DEV, dtype=dt), torch.randn(n, k, device=DEV, dtype=dt))
        fn = lambda a: F.linear(a[0], a[1])
    elif pass_ == "dgrad":  # dX[m,k] = dY[m,n] @ W[n,k]
        make = lambda: (torch.randn(m, n, device=DEV, dtype=dt), torch.randn(n, k, device=DEV, dtype=dt))
        fn = lambda a: torch.matmul(a[0], a[1])
    else:  # wgrad: dW[n,k] = dY[m,n]^T @ X[m,k]
        make = lambda: (torch.randn(m, n, device=DEV, dtype=dt), torch.randn(m, k, device=DEV, dtype=dt))
        fn = lambda a: torch.matmul(a[0].t(), a[1])
    nbytes = 2 * (m * k + n * k + m * n)
    rot = Rotating(make, nbytes)
    return time_fn(lambda: fn(rot.next()), max_reps=30, budget_s=0.04)


def gemm_section(deadline):
    row = writer("gemm.csv", ["set", "model", "layer", "pass", "dtype", "m", "n", "k", "time_us", "tflops", "method"])
    shapes = linear_shapes()
    if QUICK:
        shapes = [(s[0], s[1], 64, max(16, s[3] // 256), max(16, s[4] // 256)) for s in shapes[:6]]
    for model, layer, T, n, k in shapes:
        for pass_ in ("fwd", "dgrad", "wgrad"):
            if time.time() > deadline:
                log("gemm: budget reached")
                return
            t = bench_bf16(T, n, k, pass_)
            # the problem's (m, n, k) in GEMM terms: M rows of the output, N columns, K the reduction
            m_, n_, k_ = {"fwd": (T, n, k), "dgrad": (T, k, n), "wgrad": (n, k, T)}[pass_]
            row(set="model", model=model, layer=layer, **{"pass": pass_}, dtype="bf16", m=m_, n=n_, k=k_,
                time_us=round(t * 1e6, 3), tflops=round(gemm_flops(m_, n_, k_) / t / 1e12, 2), method=METHOD["last"])
    log(f"gemm: {len(shapes)} layer shapes x 3 passes")


def sweep_section(deadline):
    """One dimension in steps of 128 at fixed others: tile and wave quantization show as steps."""
    row = writer("gemm_sweep.csv", ["sweep", "m", "n", "k", "time_us", "tflops", "method"])
    sweeps = []
    step = 16 if QUICK else 128
    top = 64 if QUICK else 8192
    for n in range(step, top + 1, step):
        sweeps.append(("n@m8192k4096", 8192 if not QUICK else 64, n, 4096 if not QUICK else 64))
    for m in range(step, top + 1, step):
        sweeps.append(("m@n4096k4096", m, 4096 if not QUICK else 64, 4096 if not QUICK else 64))
    for k in range(step * 2, top + 1, step * 2):
        sweeps.append(("k@m4096n4096", 4096 if not QUICK else 64, 4096 if not QUICK else 64, k))
    # squares 256 .. 16384 (powers of two and halfway), the MAMF-style best case
    for e in range(16, 29) if not QUICK else range(8, 10):
        s = int(round(2 ** (e / 2) / 128) * 128) if not QUICK else 2 ** (e // 2)
        sweeps.append(("square", s, s, s))
    for name, m, n, k in sweeps:
        if time.time() > deadline:
            log("sweep: budget reached")
            return
        t = bench_bf16(m, n, k, "fwd")
        row(sweep=name, m=m, n=n, k=k, time_us=round(t * 1e6, 3), tflops=round(gemm_flops(m, n, k) / t / 1e12, 2),
            method=METHOD["last"])


def fp8_section(deadline):
    row = writer("gemm_fp8.csv", ["model", "layer", "pass", "m", "n", "k", "fast_accum", "time_us", "tflops", "method"])
    if QUICK or not hasattr(torch, "float8_e4m3fn"):
        log("fp8: skipped (needs CUDA and torch.float8_e4m3fn)")
        return
    one = torch.ones((), device=DEV, dtype=torch.float32)
    seen = set()
    for model, layer, T, n, k in linear_shapes():
        if T not in (4096, 8192) and not model.endswith("expert"):
            continue
        for pass_ in ("fwd", "dgrad", "wgrad"):
            m_, n_, k_ = {"fwd": (T, n, k), "dgrad": (T, k, n), "wgrad": (n, k, T)}[pass_]
            if (m_, n_, k_) in seen or time.time() > deadline:
                continue
            seen.add((m_, n_, k_))
            fast = pass_ == "fwd"  # Transformer Engine: split (slow) accumulation for dgrad and wgrad
            # TN: a row-major [m,k], b column-major [k,n] (a [n,k] row-major tensor transposed)
            make = lambda: (torch.randn(m_, k_, device=DEV).to(torch.float8_e4m3fn),
                            torch.randn(n_, k_, device=DEV).to(torch.float8_e4m3fn))
            rot = Rotating(make, m_ * k_ + n_ * k_ + 2 * m_ * n_)

            def fn():
                a, b = rot.next()
                return torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                        use_fast_accum=fast)

            t = time_fn(fn, max_reps=30, budget_s=0.04)
            row(model=model, layer=layer, **{"pass": pass_}, m=m_, n=n_, k=k_, fast_accum=int(fast),
                time_us=round(t * 1e6, 3), tflops=round(gemm_flops(m_, n_, k_) / t / 1e12, 2), method=METHOD["last"])
    log(f"fp8: {len(seen)} shapes")


def attention_section(deadline):
    row = writer("attention.csv", ["backend", "batch", "heads", "kv_heads", "seq", "head_dim", "causal", "pass",
                                   "time_us", "tflops", "method"])
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        log("attention: torch.nn.attention missing, skipped")
        return
    backends = [("flash", SDPBackend.FLASH_ATTENTION)]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends.append(("cudnn", SDPBackend.CUDNN_ATTENTION))
    cases = []
    for d in (128, 64):
        for s in (512, 1024, 2048, 4096, 8192, 16384, 32768):
            cases.append((max(1, 16384 // s), 2048 // d, 2048 // d, s, d))
    # Real per-rank shapes: Llama-3 70B / 405B at TP 8 (8 or 16 query heads, 1 or 2 KV heads), GPT-3 175B at TP 8.
    cases += [(1, 8, 1, 8192, 128), (1, 16, 1, 8192, 128), (1, 12, 12, 4096, 128), (2, 12, 12, 2048, 128)]
    if QUICK:
        cases = [(1, 2, 2, 64, 32)]
    for bname, backend in backends:
        for b, hq, hkv, s, d in cases:
            for causal in (True, False):
                if time.time() > deadline:
                    log("attention: budget reached")
                    return
                q = torch.randn(b, hq, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                k = torch.randn(b, hkv, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                v = torch.randn(b, hkv, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                go = torch.randn(b, hq, s, d, device=DEV, dtype=torch.bfloat16)
                gqa = {"enable_gqa": True} if hkv != hq else {}
                fwd_flops = 4.0 * b * hq * s * s * d * (0.5 if causal else 1.0)
                try:
                    with sdpa_kernel([backend]):
                        f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa)
                        tf = time_fn(f, budget_s=0.08)
                        mf = METHOD["last"]

                        def fb():
                            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa)
                            torch.autograd.grad(o, (q, k, v), go)

                        tfb = time_fn(fb, budget_s=0.08)
                        mfb = METHOD["last"]
                except Exception as e:  # a backend that does not take this shape
                    log(f"attention {bname} b{b} h{hq}/{hkv} s{s} d{d} causal={causal}: {type(e).__name__}: "
                        f"{str(e).splitlines()[0][:160]}")
                    continue
                common = dict(backend=bname, batch=b, heads=hq, kv_heads=hkv, seq=s, head_dim=d, causal=int(causal))
                row(**common, **{"pass": "fwd"}, time_us=round(tf * 1e6, 3), tflops=round(fwd_flops / tf / 1e12, 2),
                    method=mf)
                tb = max(tfb - tf, 1e-9)
                row(**common, **{"pass": "bwd"}, time_us=round(tb * 1e6, 3),
                    tflops=round(2.5 * fwd_flops / tb / 1e12, 2), method=mfb)
                del q, k, v, go


def membound_section(deadline):
    row = writer("membound.csv", ["kernel", "shape", "time_us", "bytes", "GBps", "method"])
    bf = torch.bfloat16 if DEV == "cuda" else torch.float32
    eb = 2 if DEV == "cuda" else 4

    def rec(kernel, shape, t, nbytes):
        row(kernel=kernel, shape=shape, time_us=round(t * 1e6, 3), bytes=int(nbytes), GBps=round(nbytes / t / 1e9, 1),
            method=METHOD["last"])

    scale = 1 if not QUICK else 1 / 1024
    N = int(2**28 * scale)  # 256 Mi elements, 512 MiB in bf16
    x = torch.randn(N, device=DEV, dtype=bf)
    y = torch.randn(N, device=DEV, dtype=bf)
    z = torch.empty_like(x)
    rec("copy", f"{N}", time_fn(lambda: z.copy_(x)), 2 * N * eb)
    rec("add", f"{N}", time_fn(lambda: torch.add(x, y, out=z)), 3 * N * eb)
    rec("mul_scalar", f"{N}", time_fn(lambda: torch.mul(x, 0.5, out=z)), 2 * N * eb)
    del x, y, z
    for T, h, ffn in ((8192, 4096, 14336 // 1), (8192, 8192, 28672 // 8), (4096, 16384, 53248 // 8)):
        if time.time() > deadline:
            return
        T_ = max(8, int(T * scale))
        # SwiGLU as eager PyTorch runs it (silu then mul: two kernels) on [T, 2*ffn] -> [T, ffn]
        a = torch.randn(T_, 2 * ffn, device=DEV, dtype=bf)
        rec("swiglu_eager", f"{T_}x{2 * ffn}", time_fn(lambda: F.silu(a[:, :ffn]) * a[:, ffn:]), 3 * T_ * ffn * eb)
        del a
        xs = torch.randn(T_, h, device=DEV, dtype=bf, requires_grad=True)
        w = torch.randn(h, device=DEV, dtype=bf, requires_grad=True)
        bb = torch.randn(h, device=DEV, dtype=bf, requires_grad=True)
        g = torch.randn(T_, h, device=DEV, dtype=bf)
        tf = time_fn(lambda: F.layer_norm(xs, (h,), w, bb))

        def ln_fb():
            o = F.layer_norm(xs, (h,), w, bb)
            torch.autograd.grad(o, (xs, w, bb), g)

        tfb = time_fn(ln_fb)
        rec("layernorm_fwd", f"{T_}x{h}", tf, 2 * T_ * h * eb)
        rec("layernorm_bwd", f"{T_}x{h}", max(tfb - tf, 1e-9), 3 * T_ * h * eb)
        if hasattr(F, "rms_norm"):
            tr = time_fn(lambda: F.rms_norm(xs, (h,), w))

            def rms_fb():
                o = F.rms_norm(xs, (h,), w)
                torch.autograd.grad(o, (xs, w), g)

            trb = time_fn(rms_fb)
            rec("rmsnorm_fwd", f"{T_}x{h}", tr, 2 * T_ * h * eb)
            rec("rmsnorm_bwd", f"{T_}x{h}", max(trb - tr, 1e-9), 3 * T_ * h * eb)
        del xs, w, bb, g
    for T, V in ((4096, 131072 // 8), (8192, 128256 // 8), (4096, 32000), (4096, 250880 // 4)):
        if time.time() > deadline:
            return
        T_ = max(8, int(T * scale))
        logits = torch.randn(T_, V, device=DEV, dtype=bf, requires_grad=True)
        tgt = torch.randint(0, V, (T_,), device=DEV)

        def ce_fb():
            loss = F.cross_entropy(logits.float(), tgt)
            torch.autograd.grad(loss, (logits,))

        # fewest bytes: read the bf16 logits twice (forward, backward) and write their gradient once
        rec("cross_entropy_fp32_fwd_bwd", f"{T_}x{V}", time_fn(ce_fb), 3 * T_ * V * eb)
        del logits
    for V, h, T in ((128256, 4096, 8192), (32000, 4096, 4096), (131072 // 8, 12288, 4096)):
        if time.time() > deadline:
            return
        T_ = max(8, int(T * scale))
        table = torch.randn(V, h, device=DEV, dtype=bf, requires_grad=True)
        idx = torch.randint(0, V, (T_,), device=DEV)
        gout = torch.randn(T_, h, device=DEV, dtype=bf)
        tf = time_fn(lambda: F.embedding(idx, table))

        def emb_fb():
            o = F.embedding(idx, table)
            torch.autograd.grad(o, (table,), gout)

        tfb = time_fn(emb_fb)
        rec("embedding_fwd", f"{V}x{h}@{T_}", tf, 2 * T_ * h * eb)
        # backward writes a dense [V, h] gradient (zero-fill plus scatter-add of T rows)
        rec("embedding_bwd", f"{V}x{h}@{T_}", max(tfb - tf, 1e-9), V * h * eb + 2 * T_ * h * eb)
        del table, gout
    if time.time() > deadline:
        return
    # Fused AdamW over fp32 master weights as Megatron's distributed optimizer holds them: per parameter read
    # weight, grad, m, v and write weight, m, v = 28 bytes.
    P = int(2**28 * scale)
    params = [torch.nn.Parameter(torch.randn(P // 8, device=DEV)) for _ in range(8)]
    for p in params:
        p.grad = torch.randn_like(p)
    try:
        opt = torch.optim.AdamW(params, lr=1e-4, fused=DEV == "cuda")
    except Exception:
        opt = torch.optim.AdamW(params, lr=1e-4)
    rec("adamw_fused_fp32", f"{P}", time_fn(lambda: opt.step(), max_reps=10), 28 * P)
    del params, opt


def misc_section(deadline):
    info = {}
    if DEV == "cuda":
        p = torch.cuda.get_device_properties(0)
        info["device"] = {"name": p.name, "sm_count": p.multi_processor_count, "total_memory": p.total_memory,
                          "torch": torch.__version__, "cuda": torch.version.cuda,
                          "cudnn": torch.backends.cudnn.version()}
        try:
            info["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,"
                 "power.max_limit,clocks.sm,temperature.gpu", "--format=csv"], capture_output=True, text=True,
                timeout=20).stdout
        except Exception as e:
            info["nvidia_smi"] = repr(e)
    # Kernel floor: a one-element add replayed 200 times in a CUDA graph (no host launch gaps).
    x = torch.randn(1, device=DEV)
    if DEV == "cuda":
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                x.add_(1.0)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(200):
                x.add_(1.0)
        info["graph_tiny_kernel_us"] = time_fn(lambda: g.replay()) / 200 * 1e6
        # Eager: host time per tiny op when the GPU keeps up (launch-bound)
        sync()
        t = time.perf_counter()
        for _ in range(2000):
            x.add_(1.0)
        sync()
        info["eager_tiny_op_us"] = (time.perf_counter() - t) / 2000 * 1e6
        # cuBLAS SM carve-out (the SMs userbuffers or NCCL take from a GEMM), if this PyTorch exposes it
        carve = {}
        setter = getattr(torch._C, "_set_sm_carveout_experimental", None)
        if setter is not None:
            for c in (0, 8, 16, 24, 32, 48, 66):
                try:
                    setter(c if c > 0 else None)
                    carve[c] = bench_bf16(8192, 8192, 8192, "fwd") * 1e6
                except Exception as e:
                    carve[c] = repr(e)[:160]
            try:
                setter(None)
            except Exception:
                pass
        info["gemm_8192_us_by_sm_carveout"] = carve
        # Concurrent copy on a side stream: the GEMM's slowdown from sharing HBM and SMs with a bandwidth-bound
        # kernel (a crude stand-in for a collective's copy kernels).
        A = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
        B = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
        src = torch.randn(2**28, device=DEV, dtype=torch.bfloat16)
        dst = torch.empty_like(src)
        t_gemm = time_fn(lambda: torch.matmul(A, B))
        t_copy = time_fn(lambda: dst.copy_(src))
        side = torch.cuda.Stream()
        sync()
        n_gemm = 40
        n_copy = max(1, int(round(n_gemm * t_gemm / t_copy)))
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        ev[0].record()
        for _ in range(n_gemm):
            torch.matmul(A, B)
        ev[1].record()
        with torch.cuda.stream(side):
            ev[2].record(side)
            for _ in range(n_copy):
                dst.copy_(src)
            ev[3].record(side)
        sync()
        info["concurrent_gemm_copy"] = {
            "gemm_alone_us": t_gemm * 1e6, "copy_alone_us": t_copy * 1e6, "n_gemm": n_gemm, "n_copy": n_copy,
            "gemm_loop_us": ev[0].elapsed_time(ev[1]) * 1e3, "copy_loop_us": ev[2].elapsed_time(ev[3]) * 1e3,
            "note": "gemm_loop_us / (n_gemm * gemm_alone_us) is the GEMM's slowdown while the copies run beside it"}
        del A, B, src, dst
        # Sustained clock: a 6 s loop of 8192^3 bf16 GEMMs (clocks.csv, sampled all run long, shows the SM clock).
        A = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
        B = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
        time.sleep(0.5)
        t = time.perf_counter()
        n = 0
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        while time.perf_counter() - t < 6.0:
            for _ in range(20):
                torch.matmul(A, B)
            n += 20
            if n % 200 == 0:
                sync()
        e1.record()
        sync()
        info["sustained_gemm_8192"] = {"n": n, "seconds": e0.elapsed_time(e1) * 1e-3,
                                       "tflops": n * 2 * 8192**3 / (e0.elapsed_time(e1) * 1e-3) / 1e12}
    with open(os.path.join(OUT, "misc.json"), "w") as f:
        json.dump(info, f, indent=1, default=str)
    log(json.dumps(info, default=str)[:1500])


if __name__ == "__main__":
    log(f"torch {torch.__version__} device {DEV}")
    if DEV == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        log(torch.cuda.get_device_name(0))
    smi = None
    if DEV == "cuda":
        try:  # SM clock and power every 100 ms for the whole run: which clock each section ran at
            smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,"
                                    "temperature.gpu,clocks_throttle_reasons.active", "--format=csv,noheader",
                                    "-lms", "100"], stdout=open(os.path.join(OUT, "clocks.csv"), "w"),
                                   stderr=subprocess.DEVNULL)
        except Exception as e:
            log(f"nvidia-smi sampling failed: {e!r}")
    section("gemm", gemm_section, 100)
    section("attention", attention_section, 45)
    section("membound", membound_section, 40)
    section("sweep", sweep_section, 35)
    section("fp8", fp8_section, 45)
    section("misc", misc_section, 40)
    if smi is not None:
        smi.terminate()
    log("all done")
