#!/usr/bin/env python3
"""Fourth set of measurements on one NVIDIA GPU for stepsim's compute model: what the host costs a training step
when PyTorch issues its kernels eagerly, on a stack of whole transformer layers rather than one block.

  host.csv  a stack of LAYERS layers (attention + dense MLP, or attention + Megatron-Core's routed-expert block) at one
            rank's real shapes, forward and forward+backward, three ways: a CUDA graph (device time only), eager (the
            host issues every kernel, nothing synchronises it), and eager with one host synchronisation per MoE layer
            at the point where Megatron-Core's alltoall dispatcher makes it (`cuda_sync_point = "before_ep_alltoall"`:
            the tokens-per-expert counts copied to the host for the all-to-all's split sizes). The difference
            eager_sync - eager, per layer, is what one synchronisation costs: the device drains, then waits while the
            host issues the kernels that follow until it is ahead again.

The permute is the sort-based one of measure_moe.py (no hidden synchronisation), so the eager and eager_sync rows differ
only by the synchronisation. The expert-parallel all-to-all is the identity (one GPU). Weights are shared between the
layers of a stack (the host's work per layer does not depend on it; it keeps large cases within memory).
Usage: python3 bench/gpu/measure_host.py OUT_DIR [--quick]   (--quick: tiny shapes on the CPU, to check the script)
"""
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_moe as mm  # noqa: E402  (timers, writer, the routed-expert block)

LAYERS = 4
DEV, DT, QUICK = mm.DEV, mm.DT, mm.QUICK
log = mm.log

# name, hidden, heads, kv heads, head dim, dense ffn (0: MoE), gated MLP, tokens, MoE (experts, local, top-k, ffn)
CASES = [
    ("qwen3-30b-a3b-ep8-mbs1", 2048, 32, 4, 128, 0, True, 4096, (128, 16, 8, 768)),
    ("qwen3-30b-a3b-ep8-mbs2", 2048, 32, 4, 128, 0, True, 8192, (128, 16, 8, 768)),
    ("mixtral-8x7b-ep8", 4096, 32, 8, 128, 0, True, 4096, (8, 1, 2, 14336)),
    ("gpt-1.7b-4k", 2048, 16, 16, 128, 8192, False, 4096, None),
    ("llama3-8b-tp4-8k-shard", 4096, 8, 2, 128, 3584, True, 8192, None),
    ("llama3-8b-tp1-4k", 4096, 32, 8, 128, 14336, True, 4096, None),
]
if QUICK:
    CASES = [("tiny-moe", 64, 4, 2, 16, 0, True, 256, (16, 4, 2, 32)), ("tiny", 64, 4, 2, 16, 128, False, 256, None)]


def attention(x, s, w, nh, nkv, d):
    q, k, v = F.linear(x, w["qkv"]).split([nh * d, nkv * d, nkv * d], dim=-1)
    rep = nh // nkv
    q = q.view(s, nh, d).transpose(0, 1).unsqueeze(0)
    k = k.view(s, nkv, d).repeat_interleave(rep, 1).transpose(0, 1).unsqueeze(0)
    v = v.view(s, nkv, d).repeat_interleave(rep, 1).transpose(0, 1).unsqueeze(0)
    if hasattr(F, "scaled_dot_product_attention"):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:  # old PyTorch (the --quick check on the CPU)
        o = torch.softmax(q @ k.transpose(-2, -1) / d ** 0.5, dim=-1) @ v
    return F.linear(o.squeeze(0).transpose(0, 1).reshape(s, nh * d), w["o"])


def norm(x, weight):
    return F.rms_norm(x, (x.shape[-1],), weight) if hasattr(F, "rms_norm") else x * weight


def moe(x, blk, sync):
    """Megatron-Core's routed experts, alltoall dispatcher: route, permute, [sync], sort by local expert, experts,
    unsort, unpermute."""
    probs, idx = blk.route(x)
    # tokens per expert, on the device (not bincount: it reads the maximum on the host to size its output)
    flat = idx.flatten()
    counts = torch.zeros(blk.E, device=DEV, dtype=torch.long).scatter_add_(0, flat, torch.ones_like(flat))
    y, pp, si = blk.permute(x, probs, idx, False)
    if sync:  # the split sizes of the all-to-all come to the host: the host waits for the device here
        counts.cpu().tolist()
    if blk.e_loc > 1:
        y = y.index_select(0, blk.sort_idx)
    y = blk.experts(y)
    if blk.e_loc > 1:
        y = y.index_select(0, blk.unsort_idx)
    return blk.unpermute(y, pp, si)


def run_case(row, name, h, nh, nkv, d, ffn, gated, s, moe_shape):
    mk = lambda *sh: (torch.randn(*sh, device=DEV, dtype=DT) * 0.02).requires_grad_()
    w = {"qkv": mk((nh + 2 * nkv) * d, h), "o": mk(h, nh * d), "n1": mk(h), "n2": mk(h)}
    blk = None
    if moe_shape:
        E, e_loc, k, fe = moe_shape
        blk = mm.MoeBlock(h, E, e_loc, k, fe, s)
        params = list(w.values()) + [blk.wr, blk.w1, blk.w2]
    else:
        w["fc1"], w["fc2"] = mk((2 if gated else 1) * ffn, h), mk(h, ffn)
        params = list(w.values())
    x0 = torch.randn(s, h, device=DEV, dtype=DT).requires_grad_()
    params.append(x0)

    def stack(sync):
        x = x0
        for _ in range(LAYERS):
            x = x + attention(norm(x, w["n1"]), s, w, nh, nkv, d)
            n = norm(x, w["n2"])
            if blk is not None:
                x = x + moe(n, blk, sync)
            else:
                a = F.linear(n, w["fc1"])
                if gated:
                    g, u = a.chunk(2, -1)
                    a = F.silu(g) * u
                else:
                    a = F.gelu(a)
                x = x + F.linear(a, w["fc2"])
        return x

    def fb(sync):
        out = stack(sync)
        return torch.autograd.grad(out, params, torch.ones_like(out))

    kf = mm.kernel_count(lambda: stack(False))
    kb = mm.kernel_count(lambda: fb(False))
    modes = ["graph", "eager"] + (["eager_sync"] if blk is not None else [])
    for mode in modes:
        sync = mode == "eager_sync"
        if mode == "graph":
            with torch.no_grad():
                tf = mm.graph_time(lambda: stack(False), per=2)
            tb = mm.graph_time(lambda: fb(False), per=1)
        else:
            with torch.no_grad():
                tf = mm.eager_time(lambda: stack(sync), iters=10)
            tb = mm.eager_time(lambda: fb(sync), iters=10)
        row(case=name, layers=LAYERS, tokens=s, mode=mode, fwd_us=round(tf * 1e6, 1), fwd_bwd_us=round(tb * 1e6, 1),
            fwd_us_per_layer=round(tf * 1e6 / LAYERS, 1), fwd_bwd_us_per_layer=round(tb * 1e6 / LAYERS, 1),
            kernels_fwd=kf, kernels_fwd_bwd=kb)


def main():
    log(f"measure_host: torch {torch.__version__}, device {torch.cuda.get_device_name() if DEV == 'cuda' else 'cpu'}")
    row = mm.writer("host.csv", ["case", "layers", "tokens", "mode", "fwd_us", "fwd_bwd_us", "fwd_us_per_layer",
                                 "fwd_bwd_us_per_layer", "kernels_fwd", "kernels_fwd_bwd"])
    end = mm.T0 + float(os.environ.get("HOST_BUDGET_S", "150"))
    for case in CASES:
        if time.time() > end:
            log("host: budget reached")
            break
        start = time.time()
        try:
            run_case(row, *case)
        except Exception:
            log(f"host {case[0]}:\n{traceback.format_exc()[-700:]}")
        log(f"host {case[0]} done in {time.time() - start:.1f}s")
        if DEV == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
