"""Host (CPU) time of Megatron-Core's own transformer layers on one GPU: how long the GPU waits for Python.

Why: stepsim predicts every MoE row of the check set too fast (Qwen3-30B-A3B by 33-64 %) while its kernels agree
with data/measurements/h100-sxm (bare PyTorch). Bare PyTorch issues a layer's kernels with little Python between
them; Megatron-Core runs its module tree, the router, the token dispatcher (with one device-to-host synchronisation
per MoE layer when the expert counts are not known in advance) and autograd functions around each. After a
synchronisation the GPU idles until the host has issued the next kernels, so host time per layer becomes step time
whenever the host is not far enough ahead. No public source gives Megatron-Core's host time per layer.

What: a block of LAYERS Megatron-Core TransformerLayers (the local, Transformer-Engine-free spec, because Transformer
Engine cannot be installed on the measuring machine), bf16, run forward and backward eagerly as training runs them:
  - the attention core is scaled_dot_product_attention (the local spec's DotProductAttention materialises the s x s
    scores, which no recipe runs); everything else is Megatron-Core's own code;
  - MoE layers use Megatron-Core's router, MoEAlltoAllTokenDispatcher and permutation code; the experts are either
    Megatron-Core's SequentialMLP (one MLP module per local expert, the local spec's only choice) or a small grouped
    module over torch._grouped_mm (one call per GEMM, as Transformer Engine's GroupedLinear issues them), so the
    experts' host share can be read off both ways;
  - the shapes are one expert-parallel rank's share of a published recipe on one GPU: Qwen3-30B-A3B at EP 8 holds
    16 of 128 experts and receives about as many routed rows as it has tokens (top-8 of 128 over 8 ranks); with one
    GPU that is 16 experts and top-1 (same rows per expert, same host code; the router's softmax is over 16).
For each case: wall time per forward+backward (median over ITERS, synchronised), forward alone, the GPU busy time
(union of the kernels' intervals from torch.profiler) and the kernel count; idle = wall - busy is the time the GPU
waited. Cases at TINY tokens, where the kernels take almost nothing, give the host floor: the Python time per layer.

Output: OUT/megatron_host.csv, OUT/megatron_host.json (environment: CPU model, versions), OUT/log.txt.
Usage: PYTHONPATH=<Megatron-LM checkout> python3 bench/gpu/measure_megatron_host.py OUT
"""
import dataclasses
import functools
import json
import os
import platform
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
os.makedirs(OUT, exist_ok=True)
LOG = open(os.path.join(OUT, "log.txt"), "a")
LAYERS = 4
ITERS = 20
WARMUP = 4
PROFILED = 3


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


def init_distributed():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    torch.cuda.set_device(0)
    torch.distributed.init_process_group("nccl", rank=0, world_size=1)
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed

    parallel_state.initialize_model_parallel(1, 1)
    model_parallel_cuda_manual_seed(1234)


class SdpaCoreAttention(torch.nn.Module):
    """Megatron's core-attention interface over scaled_dot_product_attention (causal; query [s, b, np, hn])."""

    def __init__(self, config=None, layer_number=None, attn_mask_type=None, **kwargs):
        super().__init__()

    def forward(self, query, key, value, attention_mask=None, attn_mask_type=None, attention_bias=None,
                packed_seq_params=None, **kwargs):
        s, b, nq, d = query.shape
        q, k, v = (t.permute(1, 2, 0, 3) for t in (query, key, value))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=k.shape[1] != nq)
        return o.permute(2, 0, 1, 3).reshape(s, b, nq * d)


class GroupedExperts(torch.nn.Module):
    """All local experts as two torch._grouped_mm calls (gate+up, down) with SwiGLU between, probabilities applied
    before the down projection as Megatron's experts do."""

    def __init__(self, num_local_experts, config, pg_collection=None, name=None, **kwargs):
        super().__init__()
        h, f = config.hidden_size, config.moe_ffn_hidden_size
        dev = torch.cuda.current_device()
        self.w1 = torch.nn.Parameter(torch.randn(num_local_experts, h, 2 * f, device=dev, dtype=torch.bfloat16) * 0.02)
        self.w2 = torch.nn.Parameter(torch.randn(num_local_experts, f, h, device=dev, dtype=torch.bfloat16) * 0.02)

    def forward(self, x, tokens_per_expert, probs, **kwargs):
        offs = torch.cumsum(tokens_per_expert.to(device=x.device, dtype=torch.int32), 0, dtype=torch.int32)
        a, b = torch._grouped_mm(x, self.w1, offs=offs).chunk(2, dim=-1)
        hmid = (F.silu(a) * b * probs.unsqueeze(-1).to(a.dtype))
        return torch._grouped_mm(hmid, self.w2, offs=offs), None

    def backward_dw(self):
        pass


def make_config(case):
    from megatron.core.transformer.transformer_config import TransformerConfig

    kw = dict(
        num_layers=LAYERS, hidden_size=case["hidden"], num_attention_heads=case["heads"],
        num_query_groups=case["kv_heads"], kv_channels=case["head_dim"], ffn_hidden_size=case["ffn"],
        normalization="RMSNorm", qk_layernorm=case.get("qk_norm", False), gated_linear_unit=True,
        activation_func=F.silu, add_bias_linear=False, bf16=True, params_dtype=torch.bfloat16,
        hidden_dropout=0.0, attention_dropout=0.0, apply_rope_fusion=False, bias_activation_fusion=False,
        masked_softmax_fusion=False, persist_layer_norm=False, gradient_accumulation_fusion=False,
        bias_dropout_fusion=False,
    )
    if case.get("experts"):
        kw.update(num_moe_experts=case["experts"], moe_ffn_hidden_size=case["moe_ffn"], moe_router_topk=case["topk"],
                  moe_token_dispatcher_type=case.get("dispatcher", "alltoall"), moe_router_load_balancing_type="aux_loss",
                  moe_aux_loss_coeff=1e-3, moe_grouped_gemm=False, moe_router_dtype="fp32",
                  moe_router_force_load_balancing=True, moe_permute_fusion=False,
                  moe_router_pre_softmax=case["topk"] == 1)
    return TransformerConfig(**kw)


def make_block(case, config):
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_block import TransformerBlock

    spec = get_gpt_layer_local_spec(num_experts=case.get("experts"), moe_grouped_gemm=False,
                                    qk_layernorm=case.get("qk_norm", False), normalization="RMSNorm")
    spec.submodules.self_attention.submodules.core_attention = SdpaCoreAttention
    if case.get("experts") and case.get("expert_impl") == "grouped":
        # The MoE spec is a ModuleSpec or (newer Megatron-Core) a functools.partial over MoELayer.
        mlp = spec.submodules.mlp
        if isinstance(mlp, functools.partial):
            subs = dataclasses.replace(mlp.keywords["submodules"], experts=GroupedExperts)
            spec.submodules.mlp = functools.partial(mlp.func, *mlp.args, **{**mlp.keywords, "submodules": subs})
        else:
            mlp.submodules = dataclasses.replace(mlp.submodules, experts=GroupedExperts)
    block = TransformerBlock(config, spec).cuda()
    return block


def busy_us(prof):
    """Union of CUDA kernel/memcpy intervals (us) and their count."""
    iv = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            iv.append((e.time_range.start, e.time_range.end))
    iv.sort()
    total, end = 0.0, None
    start = None
    for a, b in iv:
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    if end is not None:
        total += end - start
    return total, len(iv)


class BareLayers(torch.nn.Module):
    """The same dense layers in plain PyTorch calls (no Megatron modules): the host floor of the kernels alone."""

    def __init__(self, c):
        super().__init__()
        h, nq, nk, d, f = c["hidden"], c["heads"], c["kv_heads"], c["head_dim"], c["ffn"]
        self.nq, self.nk, self.d = nq, nk, d
        mk = lambda o, i: torch.nn.Parameter(torch.randn(o, i, device="cuda", dtype=torch.bfloat16) * 0.02)
        self.layers = torch.nn.ModuleList()
        for _ in range(LAYERS):
            m = torch.nn.Module()
            m.n1 = torch.nn.Parameter(torch.ones(h, device="cuda", dtype=torch.bfloat16))
            m.n2 = torch.nn.Parameter(torch.ones(h, device="cuda", dtype=torch.bfloat16))
            m.qkv, m.proj = mk((nq + 2 * nk) * d, h), mk(h, nq * d)
            m.fc1, m.fc2 = mk(2 * f, h), mk(h, f)
            self.layers.append(m)

    def forward(self, x, _mask, rotary_pos_emb=None):
        s, b, h = x.shape
        cos, sin = rotary_pos_emb.cos().to(x.dtype), rotary_pos_emb.sin().to(x.dtype)
        for m in self.layers:
            y = F.rms_norm(x, (h,), m.n1)
            q, k, v = F.linear(y, m.qkv).split([self.nq * self.d, self.nk * self.d, self.nk * self.d], dim=-1)
            q = q.view(s, b, self.nq, self.d)
            k = k.view(s, b, self.nk, self.d)
            v = v.view(s, b, self.nk, self.d)
            rot = lambda t: t * cos + torch.cat((-t[..., self.d // 2:], t[..., : self.d // 2]), dim=-1) * sin
            q, k = rot(q), rot(k)
            o = SdpaCoreAttention()(q, k, v)
            x = x + F.linear(o, m.proj)
            y = F.rms_norm(x, (h,), m.n2)
            a, g = F.linear(y, m.fc1).chunk(2, dim=-1)
            x = x + F.linear(F.silu(a) * g, m.fc2)
        return x


def run_case(case):
    if case.get("bare"):
        block = BareLayers(case)
    else:
        config = make_config(case)
        block = make_block(case, config)
    from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding

    s, b = case["seq"], case["mbs"]
    rope = RotaryEmbedding(kv_channels=case["head_dim"], rotary_percent=1.0).cuda()
    emb = rope(s)
    x = torch.randn(s, b, case["hidden"], device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(s, b, case["hidden"], device="cuda", dtype=torch.bfloat16)

    def fwd():
        out = block(x, None, rotary_pos_emb=emb)
        return out[0] if isinstance(out, tuple) else out

    def step():
        out = fwd()
        out.backward(g)
        block.zero_grad(set_to_none=True)
        x.grad = None

    for _ in range(WARMUP):
        step()
    torch.cuda.synchronize()
    walls, fwds = [], []
    for _ in range(ITERS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fwd()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        out.backward(g)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        block.zero_grad(set_to_none=True)
        x.grad = None
        fwds.append((t1 - t0) * 1e6)
        walls.append((t2 - t0) * 1e6)
    # Host issue time of forward when the GPU is not waited for at the end (the synchronisations inside still wait).
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fwd()
    t_issue = (time.perf_counter() - t0) * 1e6
    out.backward(g)
    torch.cuda.synchronize()
    block.zero_grad(set_to_none=True)
    x.grad = None

    from torch.profiler import ProfilerActivity, profile

    busy_f, busy_fb, kf, kfb = [], [], 0, 0
    for _ in range(PROFILED):
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as pf:
            out = fwd()
            torch.cuda.synchronize()
        bf, kf = busy_us(pf)
        with profile(activities=[ProfilerActivity.CUDA]) as pb:
            out.backward(g)
            torch.cuda.synchronize()
        bb, kb = busy_us(pb)
        kfb = kf + kb
        busy_f.append(bf)
        busy_fb.append(bf + bb)
        block.zero_grad(set_to_none=True)
        x.grad = None
    wall = statistics.median(walls)
    fw = statistics.median(fwds)
    bfb = statistics.median(busy_fb)
    bf = statistics.median(busy_f)
    row = dict(case=case["name"], kind="moe" if case.get("experts") else ("bare" if case.get("bare") else "dense"),
               expert_impl=case.get("expert_impl", ""), layers=LAYERS, tokens=s * b,
               fwd_us=round(fw, 1), fwd_bwd_us=round(wall, 1), gpu_busy_fwd_us=round(bf, 1),
               gpu_busy_fwd_bwd_us=round(bfb, 1), idle_fwd_us_per_layer=round((fw - bf) / LAYERS, 1),
               idle_fwd_bwd_us_per_layer=round((wall - bfb) / LAYERS, 1), fwd_issue_us=round(t_issue, 1),
               kernels_fwd=kf, kernels_fwd_bwd=kfb, spread_fwd_bwd=round((max(walls) - min(walls)) / wall, 3))
    log(json.dumps(row))
    del block, x, g, out
    torch.cuda.empty_cache()
    return row


QWEN = dict(hidden=2048, heads=32, kv_heads=4, head_dim=128, ffn=6144, qk_norm=True, experts=16, moe_ffn=768, topk=1)
LLAMA8 = dict(hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336)
CASES = [
    dict(QWEN, name="qwen3-30b-a3b-ep8-grouped-4k", expert_impl="grouped", seq=4096, mbs=1),
    dict(QWEN, name="qwen3-30b-a3b-ep8-grouped-8k", expert_impl="grouped", seq=4096, mbs=2),
    dict(QWEN, name="qwen3-30b-a3b-ep8-grouped-tiny", expert_impl="grouped", seq=256, mbs=1),
    dict(QWEN, name="qwen3-30b-a3b-ep8-sequential-4k", expert_impl="sequential", seq=4096, mbs=1),
    dict(QWEN, name="qwen3-30b-a3b-ep8-sequential-tiny", expert_impl="sequential", seq=256, mbs=1),
    dict(QWEN, name="qwen3-30b-a3b-ep8-grouped-allgather-tiny", expert_impl="grouped", dispatcher="allgather",
         seq=256, mbs=1),
    dict(LLAMA8, name="llama3-8b-dense-4k", seq=4096, mbs=1),
    dict(LLAMA8, name="llama3-8b-dense-tiny", seq=256, mbs=1),
    dict(LLAMA8, name="llama3-8b-bare-4k", bare=True, seq=4096, mbs=1),
    dict(LLAMA8, name="llama3-8b-bare-tiny", bare=True, seq=256, mbs=1),
]


def main():
    env = dict(python=platform.python_version(), torch=torch.__version__, cuda=torch.version.cuda,
               gpu=torch.cuda.get_device_name(0), cpu=platform.processor())
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    env["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import subprocess
        env["megatron_commit"] = subprocess.run(["cat", os.environ.get("MEGATRON_COMMIT_FILE", "/dev/null")],
                                                capture_output=True, text=True).stdout.strip()
    except Exception:  # noqa: BLE001 - environment notes only
        pass
    # A CPU-speed reference: the same pure-Python loop timed on any other machine scales the host times.
    t0 = time.perf_counter()
    acc = 0
    for i in range(2_000_000):
        acc += i & 7
    env["python_loop_2M_ms"] = round((time.perf_counter() - t0) * 1e3, 1)
    z = torch.zeros(1, device="cuda")
    for _ in range(500):  # warm-up: the first launches load modules lazily
        z.add_(1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5000):
        z.add_(1)
    torch.cuda.synchronize()
    env["eager_add_us"] = round((time.perf_counter() - t0) / 5000 * 1e6, 2)
    log(json.dumps(env))
    init_distributed()
    rows = []
    for case in CASES:
        t = time.time()
        try:
            rows.append(run_case(case))
        except Exception:  # noqa: BLE001 - one failed case must not lose the others
            log("FAILED", case["name"], traceback.format_exc())
        log("case", case["name"], "took", round(time.time() - t, 1), "s")
        with open(os.path.join(OUT, "megatron_host.csv"), "w") as f:
            if rows:
                keys = list(rows[0].keys())
                f.write(",".join(keys) + "\n")
                for r in rows:
                    f.write(",".join(str(r[k]) for k in keys) + "\n")
        with open(os.path.join(OUT, "megatron_host.json"), "w") as f:
            json.dump(dict(env=env, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
