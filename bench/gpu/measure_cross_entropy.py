"""Cross-entropy over a vocabulary shard, forward+backward, as the training frameworks run it: the time per logit.

Why: stepsim costs the loss as PyTorch's eager fp32 cross-entropy (data/efficiency.yaml `loss`, from
measure_kernels.py's `cross_entropy_fp32_fwd_bwd`), while Megatron-Core offers three paths
(`--cross-entropy-loss-fusion`, `--cross-entropy-fusion-impl native|te`) and Megatron-Bridge's and NeMo 2's benchmark
recipes run Transformer Engine's (`cross_entropy_fusion_impl = "te"`). Transformer Engine cannot be installed on the
measuring machine; its kernel design is public (transformer_engine/pytorch/triton/cross_entropy.py): one Triton
program per token row makes an online max / sum-of-exponentials pass over the bf16 logits, a second pass writes the
loss and the gradient (fp32 in current releases, bf16 in place in earlier ones), and the backward scales the
gradient rows by the incoming gradient. This script times:
  - `torch_fp32`: F.cross_entropy on logits.float() (the baseline the model uses today);
  - `megatron_unfused`: Megatron-Core's own vocab_parallel_cross_entropy (TP group of one), when importable;
  - `megatron_native`: Megatron-Core's fused_vocab_parallel_cross_entropy (jit-fused), when importable;
  - `rowwise_fp32grad` / `rowwise_bf16grad`: this script's own two-pass Triton kernels following that design
    (gradient kept in fp32 and cast to bf16 for the output layer's backward, or written in bf16).
Shapes: one rank's logits of published recipes (tokens x vocabulary / TP). Each call is a forward and a backward
with a per-token incoming gradient (Megatron's loss is not reduced inside the kernel), timed back to back between
CUDA events after warm-up (median of 15 x 3 calls). `bytes_min` = read the bf16 logits once and write their bf16
gradient once (4 bytes per logit).

Output: OUT/cross_entropy.csv, OUT/cross_entropy_log.txt.
Usage: [PYTHONPATH=<Megatron-LM checkout>] python3 bench/gpu/measure_cross_entropy.py OUT
"""
import csv
import os
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
os.makedirs(OUT, exist_ok=True)
LOG = open(os.path.join(OUT, "cross_entropy_log.txt"), "a")
DEV = "cuda"
BF = torch.bfloat16


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


@triton.jit
def _row_stats(X, x_stride, Y, M, D, XY, V, BLOCK: tl.constexpr):
    """Per row: running max m, sum of exp(x - m), and the target's logit (0 when the target is not in this shard)."""
    row = tl.program_id(0).to(tl.int64)
    x_ptr = X + row * x_stride
    y = tl.load(Y + row)
    m = float("-inf")
    d = 0.0
    xy = 0.0
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < V
        x = tl.load(x_ptr + cols, mask=mask, other=float("-inf")).to(tl.float32)
        new_m = tl.maximum(m, tl.max(x, 0))
        d = d * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), 0)
        m = new_m
        xy += tl.sum(tl.where(cols == y, x, 0.0), 0)
    tl.store(M + row, m)
    tl.store(D + row, d)
    tl.store(XY + row, xy)


@triton.jit
def _loss_and_grad(X, x_stride, G, g_stride, Y, M, D, XY, LOSS, V, BLOCK: tl.constexpr):
    """Per row: loss = log d + m - x_y and the gradient softmax - onehot into G (its dtype)."""
    row = tl.program_id(0).to(tl.int64)
    x_ptr = X + row * x_stride
    g_ptr = G + row * g_stride
    y = tl.load(Y + row)
    m = tl.load(M + row)
    d = tl.load(D + row)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < V
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        p = tl.exp(x - m) / d
        p = tl.where(cols == y, p - 1.0, p)
        tl.store(g_ptr + cols, p.to(G.dtype.element_ty), mask=mask)
    tl.store(LOSS + row, tl.log(d) + m - tl.load(XY + row))


@triton.jit
def _scale_rows(G, g_stride, GO, V, BLOCK: tl.constexpr):
    """Backward: each gradient row times the incoming gradient of its token's loss."""
    row = tl.program_id(0).to(tl.int64)
    g_ptr = G + row * g_stride
    s = tl.load(GO + row)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < V
        g = tl.load(g_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(g_ptr + cols, (g * s).to(G.dtype.element_ty), mask=mask)


def rowwise(logits, target, grad_out, grad_dtype):
    T, V = logits.shape
    block = min(32768, triton.next_power_of_2(V))
    m = torch.empty(T, device=DEV, dtype=torch.float32)
    d = torch.empty_like(m)
    xy = torch.empty_like(m)
    loss = torch.empty_like(m)
    _row_stats[(T,)](logits, logits.stride(0), target, m, d, xy, V, BLOCK=block, num_warps=32)
    g = torch.empty(T, V, device=DEV, dtype=grad_dtype)
    _loss_and_grad[(T,)](logits, logits.stride(0), g, g.stride(0), target, m, d, xy, loss, V, BLOCK=block,
                         num_warps=32)
    _scale_rows[(T,)](g, g.stride(0), grad_out, V, BLOCK=block, num_warps=32)
    return loss, g.to(BF)  # the output layer's backward GEMM takes the gradient in bf16 (a no-op for bf16)


def events_time(fn, reps=3, samples=15):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(samples):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1e-3 / reps)
    return statistics.median(out)


def megatron_paths():
    """Megatron-Core's two cross-entropy paths on a TP group of one, or {} when Megatron-Core is not importable."""
    try:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        torch.cuda.set_device(0)
        if not torch.distributed.is_initialized():
            torch.distributed.init_process_group("nccl", rank=0, world_size=1)
        from megatron.core import parallel_state
        from megatron.core.tensor_parallel.cross_entropy import vocab_parallel_cross_entropy

        parallel_state.initialize_model_parallel(1, 1)
        tp = parallel_state.get_tensor_model_parallel_group()
        paths = {"megatron_unfused": lambda lg, tg: vocab_parallel_cross_entropy(lg, tg, tp_group=tp)}
        try:
            from megatron.core.fusions.fused_cross_entropy import fused_vocab_parallel_cross_entropy

            paths["megatron_native"] = lambda lg, tg: fused_vocab_parallel_cross_entropy(lg, tg, tp)
        except Exception:  # noqa: BLE001 - optional path
            log("megatron_native unavailable:", traceback.format_exc().splitlines()[-1])
        return paths
    except Exception:  # noqa: BLE001 - the script still measures the rest
        log("Megatron-Core unavailable:", traceback.format_exc().splitlines()[-1])
        return {}


# (case, tokens, vocabulary shard): Llama 3 70B TP 4 / 405B TP 8 at 8K tokens (vocab 128,256), Qwen3 TP 1 / TP 2 at
# 4K (151,936), Nemotron-4 TP 8 at 4K (256,000), GPT-3 TP 8 at 2K (51,200 padded)
SHAPES = [
    ("llama3-70b-tp4", 8192, 128256 // 4),
    ("llama31-405b-tp8", 8192, 128256 // 8),
    ("qwen3-tp1", 4096, 151936),
    ("qwen3-tp2", 4096, 151936 // 2),
    ("nemotron4-tp8", 4096, 256000 // 8),
    ("gpt3-tp8", 2048, 51200 // 8),
]


def main():
    log(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name(0)}")
    # Correctness of the row-wise kernels against PyTorch on a small shard first.
    lg = torch.randn(64, 5000, device=DEV, dtype=BF) * 3
    tg = torch.randint(0, 5000, (64,), device=DEV)
    go = torch.rand(64, device=DEV, dtype=torch.float32)
    ref_lg = lg.float().requires_grad_()
    ref = F.cross_entropy(ref_lg, tg, reduction="none")
    (ref_g,) = torch.autograd.grad(ref, ref_lg, go)
    for gd in (torch.float32, BF):
        loss, g = rowwise(lg, tg, go, gd)
        log(f"check rowwise grad {gd}: max |loss - ref| {float((loss - ref).abs().max()):.2e}, "
            f"max |grad - ref| {float((g.float() - ref_g).abs().max()):.2e}")
    paths = megatron_paths()
    with open(os.path.join(OUT, "cross_entropy.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "tokens", "vocab_shard", "impl", "fwd_bwd_us", "ps_per_logit", "bytes_min_GBps"])
        for case, T, V in SHAPES:
            logits = torch.randn(T, V, device=DEV, dtype=BF) * 2
            target = torch.randint(0, V, (T,), device=DEV)
            grad_out = torch.full((T,), 1.0 / T, device=DEV, dtype=torch.float32)
            leaf = logits.clone().requires_grad_()
            impls = {
                "torch_fp32": lambda: torch.autograd.grad(
                    F.cross_entropy(leaf.float(), target, reduction="none"), leaf, grad_out),
                "rowwise_fp32grad": lambda: rowwise(logits, target, grad_out, torch.float32),
                "rowwise_bf16grad": lambda: rowwise(logits, target, grad_out, BF),
            }
            # Megatron's functions take [s, b, V] logits and [s, b] targets.
            leaf3 = logits.view(T, 1, V).clone().requires_grad_()
            tgt3 = target.view(T, 1)
            go3 = grad_out.view(T, 1)
            for name, fn in paths.items():
                impls[name] = lambda fn=fn: torch.autograd.grad(fn(leaf3, tgt3), leaf3, go3)
            for name, fn in impls.items():
                try:
                    t = events_time(fn)
                    w.writerow([case, T, V, name, round(t * 1e6, 1), round(t / (T * V) * 1e12, 3),
                                round(4 * T * V / t / 1e9, 1)])
                    f.flush()
                    log(case, name, f"{t * 1e6:.1f} us", f"{t / (T * V) * 1e12:.2f} ps/logit")
                except Exception:  # noqa: BLE001 - one failed path must not lose the others
                    log("FAILED", case, name, traceback.format_exc().splitlines()[-1])
            del logits, leaf, leaf3
            torch.cuda.empty_cache()


if __name__ == "__main__":
    t0 = time.time()
    main()
    log(f"done in {time.time() - t0:.1f} s")
