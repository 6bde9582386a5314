"""GPU memory of Megatron-Core's own layers as PyTorch's caching allocator reports it: what a layer stores for
backward, the transient peak above that in forward and backward, the output layer and cross-entropy's logits, and
how much more the allocator reserves than it hands out over a pipeline-like schedule.

Why: stepsim's memory model (docs/MODEL.md §8-9) counts the activations a layer stores and the static state; issue 13
item 5 asks for memory "as PyTorch reports it": transient buffers (the largest activation being computed, the
logits), and allocator fragmentation. No public source gives these for Megatron-Core at real shapes.

What: Megatron-Core TransformerLayers (local, Transformer-Engine-free spec, bf16, RMSNorm, SwiGLU, attention core
through scaled_dot_product_attention as in measure_megatron_host.py) and Megatron-Core's GPTModel (embedding, layers,
output layer, Megatron's default vocab-parallel cross-entropy) on one GPU, tensor parallel 1:
  - stored = allocated after forward - allocated before - the forward's output; per layer from L = 1 and L = 4;
  - transient forward = peak during forward - allocated after forward;
  - transient backward = peak during backward - allocated before backward (includes the weight gradients allocated
    before the peak: `grad_bytes_first_layer` gives one layer's for subtracting);
  - fragmentation: a 1F1B-like loop (4 micro-batches in flight, 8 per step, 3 steps) over a 4-layer block:
    peak reserved / peak allocated, with the default allocator and with expandable segments.
Output: OUT/memory.csv, OUT/memory.json, OUT/log.txt (appended).
Usage: PYTHONPATH=<Megatron-LM checkout>:bench/gpu python3 bench/gpu/measure_memory.py OUT
"""
import json
import os
import sys
import traceback

import torch

import measure_megatron_host as mh

OUT = sys.argv[1] if len(sys.argv) > 1 else "out"
os.makedirs(OUT, exist_ok=True)
MiB = 1024 * 1024


def log(*a):
    mh.log(*a)


def nbytes(module):
    return sum(p.numel() * p.element_size() for p in module.parameters())


def configured(case):
    """The case's TransformerConfig with its `set` fields changed after construction (routing choices)."""
    config = mh.make_config(case)
    for k, v in case.get("set", {}).items():
        setattr(config, k, v)
    return config


def block_case(case, layers):
    mh.LAYERS = layers
    config = configured(case)
    block = mh.make_block(case, config)
    from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding

    s, b, h = case["seq"], case["mbs"], case["hidden"]
    emb = RotaryEmbedding(kv_channels=case["head_dim"], rotary_percent=1.0).cuda()(s)
    x = torch.randn(s, b, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    g = torch.randn(s, b, h, device="cuda", dtype=torch.bfloat16)

    def fwd():
        out = block(x, None, rotary_pos_emb=emb)
        return out[0] if isinstance(out, tuple) else out

    for _ in range(2):  # warm-up: workspaces (cuBLAS) allocated once, as in a training run after its first step
        fwd().backward(g)
        block.zero_grad(set_to_none=True)
        x.grad = None
    row = measure(lambda: fwd(), lambda out: out.backward(g), s * b * h * 2)
    per_layer_params = nbytes(block) // layers
    row.update(case=case["name"], layers=layers, tokens=s * b, params_bytes=nbytes(block),
               grad_bytes_first_layer=per_layer_params)
    del block, x, g
    torch.cuda.empty_cache()
    return row


def measure(fwd, bwd, out_bytes):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = fwd()
    torch.cuda.synchronize()
    after_f = torch.cuda.memory_allocated()
    peak_f = torch.cuda.max_memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    bwd(out)
    torch.cuda.synchronize()
    peak_b = torch.cuda.max_memory_allocated()
    after_b = torch.cuda.memory_allocated()
    return dict(stored_bytes=after_f - base - out_bytes, transient_fwd_bytes=peak_f - after_f,
                transient_bwd_bytes=peak_b - after_f, grads_after_bwd_bytes=after_b - base,
                stored_MiB=round((after_f - base - out_bytes) / MiB, 1),
                transient_fwd_MiB=round((peak_f - after_f) / MiB, 1),
                transient_bwd_MiB=round((peak_b - after_f) / MiB, 1))


def gpt_case(case, layers):
    """Megatron-Core's GPTModel: embedding, layers, final norm, output layer and its default cross-entropy."""
    from megatron.core.models.gpt.gpt_model import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec

    mh.LAYERS = layers
    config = mh.make_config(case)
    spec = get_gpt_layer_local_spec(normalization="RMSNorm")
    spec.submodules.self_attention.submodules.core_attention = mh.SdpaCoreAttention
    s, b = case["seq"], case["mbs"]
    model = GPTModel(config, spec, vocab_size=case["vocab"], max_sequence_length=s, pre_process=True,
                     post_process=True, position_embedding_type="rope",
                     share_embeddings_and_output_weights=False).cuda()
    ids = torch.randint(0, case["vocab"], (b, s), device="cuda")
    labels = torch.randint(0, case["vocab"], (b, s), device="cuda")
    pos = torch.arange(s, device="cuda").unsqueeze(0).expand(b, s)

    def fwd():
        return model(ids, pos, None, labels=labels)  # loss per token [b, s], fp32

    for _ in range(2):
        fwd().sum().backward()
        model.zero_grad(set_to_none=True)
    row = measure(fwd, lambda loss: loss.sum().backward(), b * s * 4)
    row.update(case=case["name"], layers=layers, tokens=s * b, params_bytes=nbytes(model),
               grad_bytes_first_layer=nbytes(model.decoder.layers[0]), vocab=case["vocab"],
               logits_fp32_bytes=s * b * case["vocab"] * 4)
    del model
    torch.cuda.empty_cache()
    return row


def fragmentation_case(case, expandable):
    """Peak reserved over peak allocated across a 1F1B-like order: 4 micro-batches forwarded before the first
    backward, then one forward and one backward alternately, 8 micro-batches per step, 3 steps."""
    if expandable:
        torch.cuda.memory._set_allocator_settings("expandable_segments:True")
    mh.LAYERS = 4
    config = configured(case)
    block = mh.make_block(case, config)
    from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding

    s, b, h = case["seq"], case["mbs"], case["hidden"]
    emb = RotaryEmbedding(kv_channels=case["head_dim"], rotary_percent=1.0).cuda()(s)
    g = torch.randn(s, b, h, device="cuda", dtype=torch.bfloat16)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    for _ in range(3):
        inflight = []
        for mb in range(8):
            x = torch.randn(s, b, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            out = block(x, None, rotary_pos_emb=emb)
            inflight.append(out[0] if isinstance(out, tuple) else out)
            if len(inflight) == 4 or mb == 7:
                while len(inflight) > (0 if mb == 7 else 3):
                    inflight.pop(0).backward(g)
        block.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    st = torch.cuda.memory_stats()
    row = dict(case=case["name"] + ("-expandable" if expandable else "-default"), layers=4, tokens=s * b,
               peak_allocated_bytes=torch.cuda.max_memory_allocated(),
               peak_reserved_bytes=torch.cuda.max_memory_reserved(),
               reserved_over_allocated=round(torch.cuda.max_memory_reserved() / torch.cuda.max_memory_allocated(), 4),
               alloc_retries=st.get("num_alloc_retries", 0))
    del block, g
    torch.cuda.empty_cache()
    if expandable:
        torch.cuda.memory._set_allocator_settings("expandable_segments:False")
    return row


LLAMA8 = dict(mh.LLAMA8, vocab=128256)
# Routing without the auxiliary loss: Megatron-Core's metrics tracker indexes the loss by layer number and fails for a
# block of more than one layer outside a full model.
QWEN = dict(mh.QWEN, expert_impl="grouped", set=dict(moe_router_load_balancing_type="none"))
# Random routing (not forced balanced): the experts' row counts change every micro-batch, as in training.
QWEN_RANDOM = dict(QWEN, set=dict(moe_router_load_balancing_type="none", moe_router_force_load_balancing=False))


def tp_shard(t):
    """One tensor-parallel rank's share of a Llama-3 8B layer without sequence parallelism: heads and FFN split t ways,
    the layer's input and the row-parallel outputs full width (what SP's all-gather and reduce-scatter also hold)."""
    return dict(LLAMA8, heads=32 // t, kv_heads=8 // t, ffn=14336 // t, name=f"llama3-8b-tp{t}-shard-8k", seq=8192,
                mbs=1)


JOBS_TP = [(block_case, tp_shard(t), n) for t in (2, 4, 8) for n in (1, 2)]
JOBS_MOE = [
    (block_case, dict(QWEN, name="qwen3-30b-a3b-ep8-layers-8k", seq=8192, mbs=1), 1),
    (block_case, dict(QWEN, name="qwen3-30b-a3b-ep8-layers-8k", seq=8192, mbs=1), 2),
    (fragmentation_case, dict(QWEN_RANDOM, name="qwen3-30b-a3b-ep8-random-1f1b-4k", seq=4096, mbs=1), False),
]
JOBS = [
    (block_case, dict(LLAMA8, name="llama3-8b-layers-4k", seq=4096, mbs=1), 1),
    (block_case, dict(LLAMA8, name="llama3-8b-layers-4k", seq=4096, mbs=1), 4),
    (block_case, dict(LLAMA8, name="llama3-8b-layers-8k", seq=8192, mbs=1), 1),
    (block_case, dict(LLAMA8, name="llama3-8b-layers-8k", seq=8192, mbs=1), 4),
    (block_case, dict(QWEN, name="qwen3-30b-a3b-ep8-layers-4k", seq=4096, mbs=1), 1),
    (block_case, dict(QWEN, name="qwen3-30b-a3b-ep8-layers-4k", seq=4096, mbs=1), 4),
    (gpt_case, dict(LLAMA8, name="llama3-8b-gpt-8k", seq=8192, mbs=1), 1),
    (gpt_case, dict(LLAMA8, name="llama3-8b-gpt-8k", seq=8192, mbs=1), 2),
    (fragmentation_case, dict(LLAMA8, name="llama3-8b-1f1b-4k", seq=4096, mbs=1), False),
    (fragmentation_case, dict(LLAMA8, name="llama3-8b-1f1b-4k", seq=4096, mbs=1), True),
]


def main():
    log(json.dumps(dict(script="measure_memory.py", torch=torch.__version__, gpu=torch.cuda.get_device_name(0))))
    mh.init_distributed()
    rows = []
    jobs = JOBS_TP + JOBS_MOE if os.environ.get("MEASURE_MEMORY_SECOND") else JOBS
    for fn, case, arg in jobs:
        try:
            rows.append(fn(case, arg))
            log(json.dumps(rows[-1]))
        except Exception:  # noqa: BLE001 - one failed case must not lose the others
            log("FAILED", case["name"], arg, traceback.format_exc())
        keys = []
        for r in rows:
            keys += [k for k in r if k not in keys]
        name = "memory2" if os.environ.get("MEASURE_MEMORY_SECOND") else "memory"
        with open(os.path.join(OUT, name + ".csv"), "w") as f:
            f.write(",".join(keys) + "\n")
            for r in rows:
                f.write(",".join(str(r.get(k, "")) for k in keys) + "\n")
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
