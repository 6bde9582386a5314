#!/usr/bin/env python3
"""Third set of kernel measurements on one NVIDIA GPU for stepsim's compute model (see measure_kernels.py): the
work of a mixture-of-experts layer besides its expert GEMMs, and what the host adds when it runs eagerly.

  moe_ops.csv    each piece of Megatron-Core's MoE layer (alltoall token dispatcher, unfused permute) timed alone
                 in a CUDA graph, forward and forward+backward: router GEMM; router + softmax + top-k + the stable
                 sort that orders the routed copies by expert; permute (index_select of the rows); sort of the
                 received rows by local expert; SwiGLU; unpermute (probabilities times rows, scatter_add); the
                 grouped expert GEMMs; with the bytes each moves.
  moe_layer.csv  the whole routed-expert block (router .. unpermute, experts as torch._grouped_mm) forward and
                 forward+backward three ways: CUDA graph (device time only), eager (host issues every kernel, as in
                 training; permute by a sort, no synchronisation) and eager as Megatron-Core's unfused permute and
                 alltoall dispatcher run it: masked_select and the tokens-per-expert copy to the host
                 (each makes the host wait for the device); the kernels per call (torch.profiler).
  dense_layer.csv  a Llama-style dense layer (RMSNorm, QKV, RoPE, SDPA, projection, SwiGLU MLP) the same three
                 ways but the last, to see whether eager issue keeps ahead of the GPU at real shapes.
  mla.csv        DeepSeek-V3's attention core (q/k head dim 192, v head dim 128) through scaled_dot_product_attention.
The expert-parallel all-to-all is the identity here (one GPU): each case is one rank's share of tokens and experts.
Timing as in measure_kernels.py: random inputs, graphs replayed after warm-up, median of replays.
Usage: python3 bench/gpu/measure_moe.py OUT_DIR [--quick]   (--quick: tiny shapes on the CPU, to check the script)
"""
import csv
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
QUICK = "--quick" in sys.argv
DEV = "cpu" if QUICK else "cuda"
DT = torch.float32 if QUICK else torch.bfloat16
os.makedirs(OUT, exist_ok=True)
T0 = time.time()
LOG = open(os.path.join(OUT, "log3.txt"), "a")


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


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def graph_time(fn, per=5, reps=7):
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
    sync()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(per):
            fn()
    g.replay()
    sync()
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


def eager_time(fn, iters=20, reps=5):
    """Median wall seconds of one eager fn() over `iters` back-to-back calls (host issue included)."""
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(1 if QUICK else reps):
        t = time.perf_counter()
        for _ in range(2 if QUICK else iters):
            fn()
        sync()
        times.append((time.perf_counter() - t) / (2 if QUICK else iters))
    times.sort()
    return times[len(times) // 2]


def kernel_count(fn):
    """GPU kernels one fn() launches (torch.profiler); -1 where the profiler cannot say."""
    if DEV != "cuda":
        return -1
    try:
        from torch.profiler import ProfilerActivity, profile
        fn()
        sync()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            sync()
        return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    except Exception as e:  # the count is a by-product; the timings stand without it
        log(f"kernel count: {type(e).__name__}: {str(e)[:120]}")
        return -1


# One rank's share of the MoE layers of the published recipes: hidden, experts in all, local experts (experts /
# EP), top-k, expert FFN, tokens per rank (micro-batch x sequence / TP under sequence parallelism).
CASES = [
    ("qwen3-30b-a3b-ep8-mbs1", 2048, 128, 16, 8, 768, 4096),
    ("qwen3-30b-a3b-ep8-mbs4", 2048, 128, 16, 8, 768, 16384),
    ("mixtral-8x7b-ep8", 4096, 8, 1, 2, 14336, 4096),
    ("deepseek-v3-ep64", 7168, 256, 4, 8, 2048, 4096),
]
if QUICK:
    CASES = [("tiny", 64, 16, 4, 2, 32, 256)]

GROUPED = getattr(torch, "_grouped_mm", None)


class MoeBlock:
    """The routed experts of one layer as Megatron-Core's alltoall dispatcher runs them (permute fusion off)."""

    def __init__(self, h, E, e_loc, k, ffn, T):
        self.h, self.E, self.e_loc, self.k, self.ffn, self.T = h, E, e_loc, k, ffn, T
        mk = lambda *s: (torch.randn(*s, device=DEV, dtype=DT) * 0.02).requires_grad_()
        self.x = torch.randn(T, h, device=DEV, dtype=DT).requires_grad_()
        self.wr = mk(E, h)
        self.w1 = mk(e_loc, 2 * ffn, h)  # gate and up, as nn.Linear holds them: [out, in]
        self.w2 = mk(e_loc, h, ffn)
        self.params = [self.x, self.wr, self.w1, self.w2]
        # The rows a rank receives, sorted by local expert (fixed: the routing of random inputs is fixed).
        with torch.no_grad():
            _, idx = self.route(self.x)
            rm = torch.zeros(T, E, dtype=torch.bool, device=DEV).scatter(1, idx, True)
            experts = torch.arange(E, device=DEV).unsqueeze(1).expand(E, T).masked_select(rm.t().contiguous())
            local = experts % e_loc
            self.sort_idx = torch.sort(local, stable=True).indices
            self.unsort_idx = torch.argsort(self.sort_idx)
            counts = torch.bincount(local, minlength=e_loc)
            self.offs = torch.cumsum(counts, 0).to(torch.int32)
            self.counts = counts.tolist()

    def route(self, x):
        logits = F.linear(x, self.wr)
        probs, idx = torch.topk(torch.softmax(logits.float(), dim=-1), self.k, dim=-1)
        return probs, idx

    def permute(self, x, probs, idx, megatron):
        """Rows of x in expert order, their probabilities, and the source token of each row.

        megatron=True is Megatron-Core's unfused path: a routing map, masked_select (whose data-dependent size makes
        the host wait for the device) and the tokens-per-expert copy the alltoall dispatcher makes for its splits.
        megatron=False gets the same rows by a stable sort of the chosen experts (every token picks exactly k, so the
        size is known): no host synchronisation, so it can run in a CUDA graph.
        """
        T, E, k = self.T, self.E, self.k
        if megatron:
            rm = torch.zeros(T, E, dtype=torch.bool, device=DEV).scatter(1, idx, True)
            pm = torch.zeros(T, E, dtype=probs.dtype, device=DEV).scatter(1, idx, probs)
            rm.sum(dim=0).cpu()
            rmt = rm.t().contiguous()
            sorted_indices = torch.arange(T, device=DEV).unsqueeze(0).expand(E, T).masked_select(rmt)
            permuted_probs = pm.t().contiguous().masked_select(rmt)
        else:
            order = torch.sort(idx.flatten(), stable=True).indices
            sorted_indices = torch.div(order, k, rounding_mode="floor")
            permuted_probs = probs.flatten().index_select(0, order)
        return x.index_select(0, sorted_indices), permuted_probs, sorted_indices

    def experts(self, y):
        if GROUPED is not None and DEV == "cuda":
            a = GROUPED(y, self.w1.transpose(-2, -1), offs=self.offs, out_dtype=DT)
            g, u = a.chunk(2, dim=-1)
            return GROUPED(F.silu(g) * u, self.w2.transpose(-2, -1), offs=self.offs, out_dtype=DT)
        outs, start = [], 0
        for i, c in enumerate(self.counts):
            a = F.linear(y[start:start + c], self.w1[i])
            g, u = a.chunk(2, dim=-1)
            outs.append(F.linear(F.silu(g) * u, self.w2[i]))
            start += c
        return torch.cat(outs)

    def unpermute(self, y, permuted_probs, sorted_indices):
        y = y * permuted_probs.unsqueeze(-1).to(y.dtype)
        out = torch.zeros(self.T, self.h, device=DEV, dtype=y.dtype)
        return out.scatter_add(0, sorted_indices.unsqueeze(1).expand(-1, self.h), y)

    def forward(self, megatron=False):
        probs, idx = self.route(self.x)
        y, pp, si = self.permute(self.x, probs, idx, megatron)
        if self.e_loc > 1:  # received rows sorted by local expert, and back after the experts
            y = y.index_select(0, self.sort_idx)
        y = self.experts(y)
        if self.e_loc > 1:
            y = y.index_select(0, self.unsort_idx)
        return self.unpermute(y, pp, si)

    def fwd_bwd(self, megatron=False):
        out = self.forward(megatron)
        return torch.autograd.grad(out, self.params, torch.ones_like(out))


def moe_ops_section(deadline):
    row = writer("moe_ops.csv", ["case", "op", "shape", "fwd_us", "fwd_bwd_us", "fwd_bytes", "fwd_GBps"])
    for name, h, E, e_loc, k, ffn, T in CASES:
        if time.time() > deadline:
            log("moe_ops: budget reached")
            return
        try:
            m = MoeBlock(h, E, e_loc, k, ffn, T)
            R = T * k
            eb = 4 if QUICK else 2
            x = m.x
            with torch.no_grad():
                probs, idx = m.route(x)
                y_perm, pp, si = m.permute(x, probs, idx, False)
            yr = torch.randn(R, h, device=DEV, dtype=DT).requires_grad_()
            a2 = torch.randn(R, 2 * ffn, device=DEV, dtype=DT).requires_grad_()

            def both(f, inputs):
                def run():
                    out = f()
                    return torch.autograd.grad(out, inputs, torch.ones_like(out), allow_unused=True)
                return run

            ops = [
                ("router_gemm", f"{T}x{E}x{h}", lambda: F.linear(x, m.wr), [x, m.wr], T * h * eb + T * E * eb),
                ("router_softmax_topk_sort", f"{T}x{E} k{k}", lambda: m.permute(x, *m.route(x), False)[1], [x, m.wr],
                 T * E * 4 * 2),
                ("permute_rows", f"{R}x{h}", lambda: x.index_select(0, si), [x], 2 * R * h * eb),
                ("sort_chunks", f"{R}x{h}", lambda: yr.index_select(0, m.sort_idx), [yr], 2 * R * h * eb),
                ("swiglu", f"{R}x{2 * ffn}", lambda: F.silu(a2[:, :ffn]) * a2[:, ffn:], [a2], 3 * R * ffn * eb),
                ("unpermute", f"{R}x{h}", lambda: m.unpermute(yr, pp, si), [yr], 2 * R * h * eb + T * h * eb),
                ("experts_grouped", f"{e_loc}e x{R}x{2 * ffn}x{h}", lambda: m.experts(yr), [yr, m.w1, m.w2],
                 R * h * eb),
            ]
            for op, shape, f, inputs, nbytes in ops:
                try:
                    tf = graph_time(f)
                    tb = graph_time(both(f, inputs), per=2)
                    row(case=name, op=op, shape=shape, fwd_us=round(tf * 1e6, 2), fwd_bwd_us=round(tb * 1e6, 2),
                        fwd_bytes=nbytes, fwd_GBps=round(nbytes / tf / 1e9, 1))
                except Exception as e:
                    log(f"moe_ops {name} {op}: {type(e).__name__}: {str(e).splitlines()[0][:150]}")
            del m
        except Exception:
            log(f"moe_ops {name}:\n{traceback.format_exc()[-600:]}")


def moe_layer_section(deadline):
    row = writer("moe_layer.csv", ["case", "tokens", "routed_rows", "local_experts", "mode", "fwd_us", "fwd_bwd_us",
                                   "kernels_fwd", "kernels_fwd_bwd"])
    for name, h, E, e_loc, k, ffn, T in CASES:
        if time.time() > deadline:
            log("moe_layer: budget reached")
            return
        try:
            m = MoeBlock(h, E, e_loc, k, ffn, T)
            kf = kernel_count(lambda: m.forward(False))
            kb = kernel_count(lambda: m.fwd_bwd(False))
            for mode in ("graph", "eager", "eager_megatron_unfused"):
                hs = mode == "eager_megatron_unfused"
                timer = graph_time if mode == "graph" else eager_time
                with torch.no_grad():
                    tf = timer(lambda: m.forward(hs))
                tb = timer(lambda: m.fwd_bwd(hs)) if mode != "graph" else graph_time(lambda: m.fwd_bwd(False), per=2)
                row(case=name, tokens=T, routed_rows=T * k, local_experts=e_loc, mode=mode,
                    fwd_us=round(tf * 1e6, 1), fwd_bwd_us=round(tb * 1e6, 1), kernels_fwd=kf, kernels_fwd_bwd=kb)
            del m
        except Exception:
            log(f"moe_layer {name}:\n{traceback.format_exc()[-600:]}")


def rope(t, cos, sin):
    """Rotary embedding as eager PyTorch writes it (rotate-half)."""
    d = t.shape[-1] // 2
    rot = torch.cat((-t[..., d:], t[..., :d]), dim=-1)
    return t * cos + rot * sin


def dense_layer_section(deadline):
    row = writer("dense_layer.csv", ["case", "tokens", "mode", "fwd_us", "fwd_bwd_us", "kernels_fwd_bwd"])
    # name, hidden, heads, kv heads, ffn, sequence (micro-batch 1, TP 1)
    cases = [("llama3-8b-tp1-8k", 4096, 32, 8, 14336, 8192), ("qwen3-30b-a3b-attn-4k", 2048, 32, 4, 0, 4096)]
    if QUICK:
        cases = [("tiny", 64, 4, 2, 128, 128)]
    for name, h, nh, nkv, ffn, s in cases:
        if time.time() > deadline:
            log("dense_layer: budget reached")
            return
        try:
            d = 128 if not QUICK else 16
            mk = lambda *sh: (torch.randn(*sh, device=DEV, dtype=DT) * 0.02).requires_grad_()
            x = torch.randn(s, h, device=DEV, dtype=DT).requires_grad_()
            wqkv, wo = mk((nh + 2 * nkv) * d, h), mk(h, nh * d)
            n1, n2 = mk(h), mk(h)
            w1, w2 = (mk(2 * ffn, h), mk(h, ffn)) if ffn else (None, None)
            params = [p for p in (x, wqkv, wo, n1, n2, w1, w2) if p is not None]
            pos = torch.arange(s, device=DEV, dtype=torch.float32)
            inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=DEV, dtype=torch.float32) / d))
            ang = torch.outer(pos, inv)
            cos = torch.cat((ang, ang), -1).cos().to(DT)[:, None, :]
            sin = torch.cat((ang, ang), -1).sin().to(DT)[:, None, :]

            def layer():
                a = F.rms_norm(x, (h,), n1) if hasattr(F, "rms_norm") else x * n1
                qkv = F.linear(a, wqkv)
                q, kk, v = qkv.split([nh * d, nkv * d, nkv * d], dim=-1)
                q, kk = rope(q.view(s, nh, d), cos, sin), rope(kk.view(s, nkv, d), cos, sin)
                v = v.view(s, nkv, d)
                rep = nh // nkv
                q = q.transpose(0, 1).unsqueeze(0)
                kk = kk.repeat_interleave(rep, 1).transpose(0, 1).unsqueeze(0)
                v = v.repeat_interleave(rep, 1).transpose(0, 1).unsqueeze(0)
                o = F.scaled_dot_product_attention(q, kk, v, is_causal=True)
                hdn = x + F.linear(o.squeeze(0).transpose(0, 1).reshape(s, nh * d), wo)
                if not ffn:
                    return hdn
                b = F.rms_norm(hdn, (h,), n2) if hasattr(F, "rms_norm") else hdn * n2
                g, u = F.linear(b, w1).chunk(2, -1)
                return hdn + F.linear(F.silu(g) * u, w2)

            def fb():
                out = layer()
                return torch.autograd.grad(out, params, torch.ones_like(out))

            kb = kernel_count(fb)
            for mode in ("graph", "eager"):
                timer = graph_time if mode == "graph" else eager_time
                with torch.no_grad():
                    tf = timer(layer)
                tb = graph_time(fb, per=2) if mode == "graph" else eager_time(fb)
                row(case=name, tokens=s, mode=mode, fwd_us=round(tf * 1e6, 1), fwd_bwd_us=round(tb * 1e6, 1),
                    kernels_fwd_bwd=kb)
        except Exception:
            log(f"dense_layer {name}:\n{traceback.format_exc()[-600:]}")


def mla_section(deadline):
    row = writer("mla.csv", ["backend", "heads", "seq", "qk_dim", "v_dim", "causal", "pass", "time_us", "tflops",
                             "note"])
    if QUICK:
        log("mla: needs CUDA")
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for heads, seq in ((64, 4096), (128, 4096), (16, 4096)):  # DeepSeek-V3 per rank at TP 2, TP 1, TP 8
        for bk_name, bk in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            if time.time() > deadline:
                log("mla: budget reached")
                return
            q = torch.randn(1, heads, seq, 192, device=DEV, dtype=DT, requires_grad=True)
            k = torch.randn(1, heads, seq, 192, device=DEV, dtype=DT, requires_grad=True)
            v = torch.randn(1, heads, seq, 128, device=DEV, dtype=DT, requires_grad=True)
            note = "v_dim 128"
            vv = v
            try:
                with sdpa_kernel(bk):
                    F.scaled_dot_product_attention(q, k, vv, is_causal=True)
            except Exception as e:
                note = "v padded to 192 (" + type(e).__name__ + ")"
                vv = F.pad(v.detach(), (0, 64)).requires_grad_()
            try:
                with sdpa_kernel(bk):
                    tf = graph_time(lambda: F.scaled_dot_product_attention(q, k, vv, is_causal=True))

                    def fb():
                        o = F.scaled_dot_product_attention(q, k, vv, is_causal=True)
                        return torch.autograd.grad(o, [q, k, vv], torch.ones_like(o))

                    tb = graph_time(fb, per=2) - tf
                # FLOPs: QK^T over 192 and PV over 128, halved for causal; backward 2.5x the forward
                fl = 2.0 * heads * seq * seq * (192 + 128) / 2
                for p, t, mult in (("fwd", tf, 1.0), ("bwd", tb, 2.5)):
                    row(backend=bk_name, heads=heads, seq=seq, qk_dim=192, v_dim=128, causal=1, **{"pass": p},
                        time_us=round(t * 1e6, 2), tflops=round(mult * fl / t / 1e12, 1), note=note)
            except Exception as e:
                log(f"mla {bk_name} h{heads}: {type(e).__name__}: {str(e).splitlines()[0][:150]}")


def main():
    log(f"torch {torch.__version__}, device {torch.cuda.get_device_name() if DEV == 'cuda' else 'cpu'}")
    budget = float(os.environ.get("MOE_BUDGET_S", "200"))
    end = T0 + budget
    for name, fn, share in (("moe_ops", moe_ops_section, 0.35), ("moe_layer", moe_layer_section, 0.3),
                            ("dense_layer", dense_layer_section, 0.15), ("mla", mla_section, 0.2)):
        start = time.time()
        log(f"section {name}")
        try:
            fn(min(end, start + share * budget))
        except Exception:
            log(f"{name} failed:\n{traceback.format_exc()[-800:]}")
        log(f"section {name} done in {time.time() - start:.1f}s")
        if DEV == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
