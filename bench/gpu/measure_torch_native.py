#!/usr/bin/env python3
"""Fifth set of measurements on one NVIDIA GPU for stepsim's compute model: what PyTorch-native training
(torchtitan's Llama 3 under FSDP2, eager or per-block torch.compile, PyTorch context parallelism) runs that
Megatron-Core does not.

  long_attention.csv  scaled_dot_product_attention with the flash (FlashAttention-2), cuDNN and memory-efficient
                      backends at long context: causal self-attention over 8K-256K tokens (fewer heads as the length
                      grows, so each case stays under a second), and the blocks one context-parallel rank computes
                      at 32K local tokens (causal 32K x 32K; non-causal 32K x 16K and 16K x 32K, the load-balanced
                      ring's steps) with Llama-3 8B's 32 heads (K/V repeated to every head, as torchtitan's repeat_kv
                      does before SDPA) and Llama-3 405B's 16 heads per TP-8 rank. Forward, and backward as
                      (forward+backward) - forward, each timed as a CUDA-graph replay (device time only).
  cp_ring.csv         one context-parallel rank's whole ring attention, forward and backward, as PyTorch runs it
                      (torch.distributed.tensor.experimental's templated ring attention: SDPA per step, the fp32
                      merge of each step's output and logsumexp, the fp32 accumulation of dQ/dK/dV, the
                      concatenations that feed the rotation), at CP 2/4/8 for rank 0 (every later step works on half
                      the queries, a partial merge) and rank c-1 (every later step on half the keys). The rotation's
                      collectives are replaced by no-ops (one GPU): what is left is the rank's own GPU work. Modes:
                      `torch` (PyTorch's own functions, with its rank and rotater patched), `emulated` (the same
                      algorithm written out here, the fallback where PyTorch's internals moved) and `sdpa_only` (the
                      SDPA calls of the same steps alone). overhead = mode - sdpa_only is what stepsim must add.
  llama_block.csv     a Llama-3 8B block as torchtitan writes it (fp32 RMSNorm chain, complex RoPE, repeat_kv, SDPA,
                      SwiGLU) at torchtitan's local batch 2 x 8,192 tokens, forward+backward, eager (wall, host issue
                      included), eager as a CUDA graph (device only), and under torch.compile (wall); and each of its
                      memory-bound pieces alone (RMSNorm, RoPE, SwiGLU, residual add) eager and compiled, forward and
                      forward+backward, as graphs.
  llama_block_kernels.csv  kernel time by kernel name (torch.profiler) of one forward+backward of the block, eager and
                      compiled.
Timing as in measure_moe.py: random inputs, CUDA graphs replayed after warm-up, medians. clocks.csv: nvidia-smi
every 200 ms for the whole run (the caller starts it).
Usage: python3 bench/gpu/measure_torch_native.py OUT_DIR [--quick]   (--quick: tiny shapes on the CPU)
"""
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_moe as mm  # noqa: E402  (timers, writer, log)

DEV, QUICK = mm.DEV, mm.QUICK
DT = torch.float32 if QUICK else torch.bfloat16
log = mm.log
BUDGET = {"attention": 90.0, "cp": 70.0, "block": 140.0}


def backends():
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return None, []
    if QUICK:
        return sdpa_kernel, [("math", SDPBackend.MATH)]
    out = [("flash", SDPBackend.FLASH_ATTENTION)]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        out.append(("cudnn", SDPBackend.CUDNN_ATTENTION))
    out.append(("efficient", SDPBackend.EFFICIENT_ATTENTION))
    return sdpa_kernel, out


def rand(*shape, grad=False, dtype=None):
    return torch.randn(*shape, device=DEV, dtype=dtype or DT).requires_grad_(grad)


# ---------------------------------------------------------------------------------------------------- attention
def attention_cases():
    if QUICK:
        return [("causal", 1, 2, 64, 64, 32, True)]
    cases = []
    for s, h in ((8192, 32), (16384, 32), (32768, 32), (65536, 8), (131072, 4), (262144, 2)):
        cases.append(("causal", 1, h, s, s, 128, True))
    for model, h in (("8b", 32), ("405b-tp8", 16)):
        cases += [(f"cp-local-{model}", 1, h, 32768, 32768, 128, True),
                  (f"cp-halfkv-{model}", 1, h, 32768, 16384, 128, False),
                  (f"cp-halfq-{model}", 1, h, 16384, 32768, 128, False)]
    return cases


def attention_section(deadline):
    sdpa_kernel, bks = backends()
    if sdpa_kernel is None:
        log("attention: torch.nn.attention missing, skipped")
        return
    row = mm.writer("long_attention.csv", ["backend", "case", "batch", "heads", "seq_q", "seq_k", "head_dim", "causal",
                                           "pass", "time_us", "tflops"])
    for bname, backend in bks:
        for case, b, h, sq, sk, d, causal in attention_cases():
            if time.time() > deadline:
                log("attention: budget reached")
                return
            q, k, v = rand(b, h, sq, d, grad=True), rand(b, h, sk, d, grad=True), rand(b, h, sk, d, grad=True)
            go = rand(b, h, sq, d)
            # causal with sq == sk: half the score matrix
            flops = 4.0 * b * h * sq * sk * d * (0.5 if causal else 1.0)
            try:
                with sdpa_kernel([backend]):
                    with torch.no_grad():
                        tf = mm.graph_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                                           per=1, reps=3)

                    def fb():
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        torch.autograd.grad(o, (q, k, v), go)

                    tfb = mm.graph_time(fb, per=1, reps=3)
            except Exception as e:  # a backend that does not take this shape
                log(f"attention {bname} {case} h{h} {sq}x{sk}: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
                continue
            common = dict(backend=bname, case=case, batch=b, heads=h, seq_q=sq, seq_k=sk, head_dim=d,
                          causal=int(causal))
            row(**common, **{"pass": "fwd"}, time_us=round(tf * 1e6, 1), tflops=round(flops / tf / 1e12, 1))
            tb = max(tfb - tf, 1e-9)
            row(**common, **{"pass": "bwd"}, time_us=round(tb * 1e6, 1), tflops=round(2.5 * flops / tb / 1e12, 1))
            log(f"attention {bname} {case} h{h} {sq}x{sk}: fwd {tf * 1e3:.2f} ms, bwd {tb * 1e3:.2f} ms")
        if DEV == "cuda":
            torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------------- CP ring
class NoOpRotater:
    """Stands in for PyTorch's ring rotaters on one GPU: hands back a buffer of the right size (no transfer)."""

    def __init__(self, world, all_gather):
        self.world, self.all_gather, self.buf = world, all_gather, None

    def exchange_buffers(self, curr):
        if self.all_gather:
            if self.buf is None:  # the gathered buffer's size, left unwritten: the transfer is not compute
                self.buf = torch.empty(self.world * curr.numel(), device=curr.device, dtype=curr.dtype)
        else:
            self.buf = curr.contiguous()

    def next_buffer(self):
        if self.all_gather:
            return self.buf.chunk(self.world)[0]
        return self.buf


def torch_ring_module():
    names = ("torch.distributed.tensor.experimental._context_parallel._attention",
             "torch.distributed.tensor.experimental._attention")
    for name in names:
        try:
            mod = __import__(name, fromlist=["_templated_ring_attention"])
        except Exception:
            continue
        if hasattr(mod, "_templated_ring_attention") and hasattr(mod, "_templated_ring_attention_backward"):
            return mod
    return None


class DistShim:
    """What PyTorch's ring attention reads of torch.distributed, answered for the rank being measured without a
    process group (its group argument is checked against ProcessGroup, here any object)."""

    ProcessGroup = object

    def __init__(self, real, rank, world):
        self._real, self._rank, self._world = real, rank, world

    def get_rank(self, group=None):
        return self._rank

    def get_world_size(self, group=None):
        return self._world

    def __getattr__(self, name):
        return getattr(self._real, name)


class PatchedRank:
    """Runs PyTorch's ring attention for one rank of a ring of `world`: its rank queries answered by DistShim, its
    rotaters replaced by NoOpRotater."""

    def __init__(self, mod, rank, world):
        self.mod, self.rank, self.world, self.saved = mod, rank, world, {}

    def __enter__(self):
        self.saved = {"dist": self.mod.dist, "_create_rotater": getattr(self.mod, "_create_rotater", None)}
        self.mod.dist = DistShim(self.saved["dist"], self.rank, self.world)
        if self.saved["_create_rotater"] is not None:
            world, mod = self.world, self.mod

            def create(pg, seq_dim, method=None):
                if method is None:
                    opts = getattr(mod, "_cp_options", None)
                    method = getattr(opts, "rotate_method", "ALL_GATHER")
                return NoOpRotater(world, "GATHER" in str(method))

            self.mod._create_rotater = create
        return self

    def __exit__(self, *a):
        self.mod.dist = self.saved["dist"]
        if self.saved["_create_rotater"] is not None:
            self.mod._create_rotater = self.saved["_create_rotater"]


AUX = {}


def flash_aux(q, k, v, causal):
    """The flash forward's bookkeeping outputs (cumulative lengths, maxima, RNG state) for a shape, which its
    backward takes back; computed once per shape, outside the timed calls after the first."""
    key = (tuple(q.shape), tuple(k.shape), bool(causal))
    if key not in AUX:
        AUX[key] = tuple(torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, bool(causal))[2:8])
    return AUX[key]


def flash_fwd(q, k, v, is_causal):
    out = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, bool(is_causal))
    return out


def steps(rank, world):
    """Each ring step of one rank with load balancing: (q rows 'all'/'second', k rows 'all'/'first', causal)."""
    out = [("all", "all", True)]
    for i in range(1, world):
        out.append(("all", "first", False) if i <= rank else ("second", "all", False))
    return out


def emulated_forward(q, k, v, rank, world, sdpa_only):
    """The load-balanced ring forward as PyTorch writes it: SDPA per step, fp32 merge of output and logsumexp."""
    out_acc = lse_acc = None
    for i, (qs, ks, causal) in enumerate(steps(rank, world)):
        if i < world - 1 and not sdpa_only:
            torch.cat([k.flatten(), v.flatten()])  # the buffer handed to the rotation
        qq = q.chunk(2, dim=2)[1] if qs == "second" else q
        kk = k.chunk(2, dim=2)[0] if ks == "first" else k
        vv = v.chunk(2, dim=2)[0] if ks == "first" else v
        res = flash_fwd(qq, kk, vv, causal)
        o, lse = res[0], res[1]
        if sdpa_only:
            continue
        o, lse = o.float(), lse.float().unsqueeze(-1)
        if out_acc is None:
            out_acc, lse_acc = o, lse
            continue
        partial = qs == "second"
        cur_o = out_acc.chunk(2, dim=2)[1] if partial else out_acc
        cur_l = lse_acc.chunk(2, dim=2)[1] if partial else lse_acc
        new_o = cur_o - torch.sigmoid(lse - cur_l) * (cur_o - o)
        new_l = cur_l - F.logsigmoid(cur_l - lse)
        if partial:
            out_acc = torch.cat([out_acc.chunk(2, dim=2)[0], new_o], dim=2)
            lse_acc = torch.cat([lse_acc.chunk(2, dim=2)[0], new_l], dim=2)
        else:
            out_acc, lse_acc = new_o, new_l
    if sdpa_only:
        return None
    return out_acc.to(q.dtype), lse_acc.squeeze(-1)


def emulated_backward(q, k, v, out, lse, go, rank, world, sdpa_only):
    """The ring backward: SDPA backward per step, dQ/dK/dV accumulated in fp32, dK/dV concatenated for rotation."""
    gq = torch.zeros_like(q, dtype=torch.float32)
    gk = torch.zeros_like(k, dtype=torch.float32)
    gv = torch.zeros_like(v, dtype=torch.float32)
    for i, (qs, ks, causal) in enumerate(steps(rank, world)):
        if i < world - 1 and not sdpa_only:
            torch.cat([k.flatten(), v.flatten()])
        second = qs == "second"
        qq = q.chunk(2, dim=2)[1] if second else q
        oo = out.chunk(2, dim=2)[1] if second else out
        dd = go.chunk(2, dim=2)[1] if second else go
        ll = lse.chunk(2, dim=2)[1].contiguous() if second else lse
        kk = k.chunk(2, dim=2)[0] if ks == "first" else k
        vv = v.chunk(2, dim=2)[0] if ks == "first" else v
        cq, ck, mq, mk_, seed, offset = flash_aux(qq, kk, vv, causal)
        dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_backward(
            dd, qq, kk, vv, oo, ll, cq, ck, mq, mk_, 0.0, bool(causal), seed, offset)[:3]
        if sdpa_only:
            continue
        if ks == "first":
            gk = torch.cat([gk.chunk(2, dim=2)[0] + dk, gk.chunk(2, dim=2)[1]], dim=2)
            gv = torch.cat([gv.chunk(2, dim=2)[0] + dv, gv.chunk(2, dim=2)[1]], dim=2)
        else:
            gk += dk
            gv += dv
        torch.cat([gk.flatten(), gv.flatten()])  # the dK/dV buffer handed to the rotation
        if second:
            gq = torch.cat([gq.chunk(2, dim=2)[0], gq.chunk(2, dim=2)[1] + dq], dim=2)
        else:
            gq += dq
    if sdpa_only:
        return None
    return gq.to(q.dtype), gk.to(k.dtype), gv.to(v.dtype)


def torch_forward(mod, q, k, v, rank, world):
    with PatchedRank(mod, rank, world):
        return mod._templated_ring_attention(None, 2, torch.ops.aten._scaled_dot_product_flash_attention, query=q,
                                             key=k, value=v, is_causal=True, dropout_p=0.0, scale=None)


def torch_backward(mod, q, k, v, out, lse, go, rank, world):
    cq, ck, mq, mk_, seed, offset = flash_aux(q, k, v, True)  # as the full forward handed them to the backward
    with PatchedRank(mod, rank, world):
        return mod._templated_ring_attention_backward(
            None, 2, torch.ops.aten._scaled_dot_product_flash_attention_backward.default, grad_out=go,
            grad_out_name="grad_out", query=q, key=k, value=v, out=out, logsumexp=lse, is_causal=True,
            cum_seq_q=cq, cum_seq_k=ck, max_q=mq, max_k=mk_, dropout_p=0.0, philox_seed=seed,
            philox_offset=offset, scale=None)


def cp_section(deadline):
    if QUICK or not hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention"):
        log("cp: needs the flash kernel on a GPU, skipped")
        return
    row = mm.writer("cp_ring.csv", ["model", "heads", "local_tokens", "cp", "rank", "mode", "fwd_us", "bwd_us"])
    mod = torch_ring_module()
    log(f"cp: PyTorch ring module {mod.__name__ if mod else 'not found'}")
    # Every cost of the ring scales with the heads (SDPA's FLOPs and the merges' bytes alike), so 8 heads stand for
    # Llama-3 8B's 32 and 405B's 16 per TP-8 rank; what sets the ratio is the local length, 32K in the runs.
    s = 32768
    for model, h in (("llama3-32k-local", 8),):
        q, k, v, go = rand(1, h, s, 128), rand(1, h, s, 128), rand(1, h, s, 128), rand(1, h, s, 128)
        for world in (2, 4, 8):
            for rank in (0, world - 1):
                if time.time() > deadline:
                    log("cp: budget reached")
                    return
                try:
                    ref = emulated_forward(q, k, v, rank, world, False)
                except Exception:
                    log(f"cp {model} c{world} r{rank} reference:\n{traceback.format_exc()[-900:]}")
                    return
                modes = [("sdpa_only", lambda: emulated_forward(q, k, v, rank, world, True),
                          lambda: emulated_backward(q, k, v, ref[0], ref[1], go, rank, world, True)),
                         ("emulated", lambda: emulated_forward(q, k, v, rank, world, False),
                          lambda: emulated_backward(q, k, v, ref[0], ref[1], go, rank, world, False))]
                if mod is not None:
                    modes.append(("torch", lambda: torch_forward(mod, q, k, v, rank, world),
                                  lambda: torch_backward(mod, q, k, v, ref[0], ref[1], go, rank, world)))
                for mode, fwd, bwd in modes:
                    try:
                        with torch.no_grad():
                            tf = mm.eager_time(fwd, iters=2, reps=3)
                            tb = mm.eager_time(bwd, iters=2, reps=3)
                    except Exception:
                        log(f"cp {model} c{world} r{rank} {mode}:\n{traceback.format_exc()[-900:]}")
                        continue
                    row(model=model, heads=h, local_tokens=s, cp=world, rank=rank, mode=mode,
                        fwd_us=round(tf * 1e6, 1), bwd_us=round(tb * 1e6, 1))
                    log(f"cp {model} c{world} r{rank} {mode}: fwd {tf * 1e3:.2f} ms, bwd {tb * 1e3:.2f} ms")
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------------- Llama block
def rms_norm(x, w, eps=1e-5):
    """torchtitan's RMSNorm: in fp32, cast back, times the weight."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * w


def rope(x, freqs):
    """Complex rotation of consecutive pairs, in fp32 (torchtitan's apply_rotary_emb, one tensor)."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * freqs).flatten(3).type_as(x)


def repeat_kv(x, n):
    b, s, h, d = x.shape
    return x if n == 1 else x[:, :, :, None, :].expand(b, s, h, n, d).reshape(b, s, h * n, d)


def swiglu(a, b):
    return F.silu(a) * b


class Block(torch.nn.Module):
    def __init__(self, dim, heads, kv_heads, ffn, seq):
        super().__init__()
        hd = dim // heads
        self.h, self.kvh, self.hd = heads, kv_heads, hd
        mk = lambda o, i: torch.nn.Parameter(torch.randn(o, i, device=DEV, dtype=DT) * 0.02)
        self.wq, self.wk, self.wv, self.wo = mk(heads * hd, dim), mk(kv_heads * hd, dim), mk(kv_heads * hd, dim), \
            mk(dim, heads * hd)
        self.w1, self.w3, self.w2 = mk(ffn, dim), mk(ffn, dim), mk(dim, ffn)
        self.n1 = torch.nn.Parameter(torch.ones(dim, device=DEV, dtype=DT))
        self.n2 = torch.nn.Parameter(torch.ones(dim, device=DEV, dtype=DT))
        inv = 1.0 / (500000.0 ** (torch.arange(0, hd, 2, device=DEV).float() / hd))
        ang = torch.outer(torch.arange(seq, device=DEV).float(), inv)
        self.register_buffer("freqs", torch.polar(torch.ones_like(ang), ang).view(1, seq, 1, hd // 2))

    def forward(self, x):
        b, s, _ = x.shape
        n = rms_norm(x, self.n1)
        q = F.linear(n, self.wq).view(b, s, self.h, self.hd)
        k = F.linear(n, self.wk).view(b, s, self.kvh, self.hd)
        v = F.linear(n, self.wv).view(b, s, self.kvh, self.hd)
        q, k = rope(q, self.freqs), rope(k, self.freqs)
        k, v = repeat_kv(k, self.h // self.kvh), repeat_kv(v, self.h // self.kvh)
        if hasattr(F, "scaled_dot_product_attention"):
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        else:
            qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            o = torch.softmax(qt @ kt.transpose(-2, -1) / self.hd ** 0.5, dim=-1) @ vt
        h = x + F.linear(o.transpose(1, 2).reshape(b, s, -1), self.wo)
        m = rms_norm(h, self.n2)
        return h + F.linear(swiglu(F.linear(m, self.w1), F.linear(m, self.w3)), self.w2)


def compiled(fn):
    if not hasattr(torch, "compile") or QUICK:
        return None
    try:
        return torch.compile(fn)
    except Exception:
        log(f"compile:\n{traceback.format_exc()[-500:]}")
        return None


def kernel_table(fn, mode, row):
    if DEV != "cuda":
        return
    from torch.profiler import ProfilerActivity, profile
    fn()
    mm.sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        mm.sync()
    agg = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            t = agg.setdefault(e.name, [0, 0.0])
            t[0] += 1
            t[1] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
    for name, (n, us) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        row(mode=mode, kernel=name[:160], calls=n, time_us=round(us, 1))


def piece_rows(row, tokens, dim, heads, kv_heads, ffn, seq):
    """Each memory-bound piece of the block alone, eager and compiled, as graphs."""
    hd = dim // heads
    b = tokens // seq
    x = rand(b, seq, dim, grad=True)
    w = torch.ones(dim, device=DEV, dtype=DT, requires_grad=True)
    q = rand(b, seq, heads, hd, grad=True)
    a, c = rand(b, seq, ffn, grad=True), rand(b, seq, ffn, grad=True)
    y = rand(b, seq, dim, grad=True)
    inv = 1.0 / (500000.0 ** (torch.arange(0, hd, 2, device=DEV).float() / hd))
    ang = torch.outer(torch.arange(seq, device=DEV).float(), inv)
    freqs = torch.polar(torch.ones_like(ang), ang).view(1, seq, 1, hd // 2)
    pieces = [("rmsnorm", lambda: rms_norm(x, w), (x, w), b * seq * dim),
              ("rope_q", lambda: rope(q, freqs), (q,), b * seq * heads * hd),
              ("swiglu", lambda: swiglu(a, c), (a, c), b * seq * ffn),
              ("residual_add", lambda: x + y, (x, y), b * seq * dim)]
    for name, fn, inputs, elements in pieces:
        for mode in ("eager", "compiled"):
            f = fn if mode == "eager" else compiled(fn)
            if f is None:
                continue
            g = torch.randn_like(fn())

            def fb(f=f, inputs=inputs, g=g):
                torch.autograd.grad(f(), inputs, g)

            try:
                with torch.no_grad():
                    tf = mm.graph_time(f, per=5, reps=5)
                tfb = mm.graph_time(fb, per=5, reps=5)
            except Exception:
                log(f"piece {name} {mode}:\n{traceback.format_exc()[-600:]}")
                continue
            row(case=name, tokens=b * seq, mode=mode, fwd_us=round(tf * 1e6, 1), fwd_bwd_us=round(tfb * 1e6, 1),
                elements=elements)
            log(f"piece {name} {mode}: fwd {tf * 1e6:.1f} us, fwd+bwd {tfb * 1e6:.1f} us")


def block_section(deadline):
    row = mm.writer(os.environ.get("BLOCK_CSV", "llama_block.csv"),
                    ["case", "tokens", "mode", "fwd_us", "fwd_bwd_us", "elements"])
    krow = mm.writer(os.environ.get("BLOCK_KERNELS", "llama_block_kernels.csv"), ["mode", "kernel", "calls", "time_us"])
    dim, heads, kvh, ffn, seq, batch = (4096, 32, 8, 14336, 8192, 2) if not QUICK else (64, 4, 2, 128, 32, 2)
    # BLOCK_SEQ / BLOCK_BATCH: another shape (the block alone, no pieces); BLOCK_BACKEND=flash: SDPA limited to
    # FlashAttention-2 (PyTorch 2.11 picks cuDNN on Hopper by default).
    seq, batch = int(os.environ.get("BLOCK_SEQ", seq)), int(os.environ.get("BLOCK_BATCH", batch))
    tag = f"llama3-8b-block-{batch}x{seq}"
    if "BLOCK_BACKEND" in os.environ:
        tag += "-" + os.environ["BLOCK_BACKEND"]
    restrict = None
    if "BLOCK_BACKEND" in os.environ:  # held until the function returns (a dropped context manager restores at once)
        from torch.nn.attention import SDPBackend, sdpa_kernel
        restrict = sdpa_kernel([SDPBackend.FLASH_ATTENTION])
        restrict.__enter__()
    blk = Block(dim, heads, kvh, ffn, seq)
    x = rand(batch, seq, dim, grad=True)
    params = [x] + list(blk.parameters())
    g = rand(batch, seq, dim)
    cblk = compiled(blk)
    modes = [("eager", blk), ("compiled", cblk)] if cblk is not None else [("eager", blk)]
    for mode, m in modes:

        def fb(m=m):
            torch.autograd.grad(m(x), params, g)

        try:
            t0 = time.time()
            fb()
            mm.sync()
            log(f"block {mode}: first call {time.time() - t0:.1f} s")
            with torch.no_grad():
                tf = mm.eager_time(lambda: m(x), iters=5, reps=3)
            tfb = mm.eager_time(fb, iters=5, reps=3)
            row(case=tag, tokens=batch * seq, mode=mode, fwd_us=round(tf * 1e6, 1),
                fwd_bwd_us=round(tfb * 1e6, 1), elements="")
            log(f"block {mode}: fwd {tf * 1e3:.2f} ms, fwd+bwd {tfb * 1e3:.2f} ms")
            if mode == "eager":
                with torch.no_grad():
                    gf = mm.graph_time(lambda: blk(x), per=1, reps=5)
                gfb = mm.graph_time(fb, per=1, reps=5)
                row(case=tag, tokens=batch * seq, mode="eager_graph", fwd_us=round(gf * 1e6, 1),
                    fwd_bwd_us=round(gfb * 1e6, 1), elements="")
                log(f"block eager as graph: fwd {gf * 1e3:.2f} ms, fwd+bwd {gfb * 1e3:.2f} ms")
            kernel_table(fb, f"{tag} {mode}", krow)
        except Exception:
            log(f"block {mode}:\n{traceback.format_exc()[-900:]}")
    del blk, cblk, x, g, params
    if restrict is not None:
        restrict.__exit__(None, None, None)
    if time.time() > deadline or "BLOCK_SEQ" in os.environ:
        log("block: budget reached before the pieces")
        return
    try:
        piece_rows(row, batch * seq, dim, heads, kvh, ffn, seq)
    except Exception:
        log(f"pieces:\n{traceback.format_exc()[-900:]}")


def main():
    log(f"measure_torch_native: torch {torch.__version__}, "
        f"device {torch.cuda.get_device_name() if DEV == 'cuda' else 'cpu'}")
    which = [a for a in sys.argv[2:] if not a.startswith("--")] or ["attention", "cp", "block"]
    sections = {"attention": attention_section, "cp": cp_section, "block": block_section}
    for name in which:
        start = time.time()
        try:
            sections[name](start + BUDGET[name] * (0.05 if QUICK else 1))
        except Exception:
            log(f"{name}:\n{traceback.format_exc()[-900:]}")
        log(f"{name} done in {time.time() - start:.1f} s")
        if DEV == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
