"""A tiny Megatron-style GPT trained with plain torch.distributed: the reference user of stepsim.trace.

Tensor parallelism: column-parallel (QKV, FC1, output layer) and row-parallel (attention projection, FC2)
linears with Megatron's f/g operators, and a vocabulary-parallel embedding. Pipeline parallelism: 1F1B
(Megatron's forward_backward_pipelining_without_interleaving) with batch_isend_irecv (--p2p batch) or
isend/irecv and blocking send/recv (--p2p single). Data parallelism: one all-reduce of all gradients.
Then Megatron's global grad-norm all-reduce over the model-parallel group and the data-parallel loss
average. Rank order is Megatron-Core's: rank = tp + t*(dp + d*pp).

Run it like torchrun would (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set), e.g. with
  python3 -m stepsim.trace --real --world-size 4 --out d -- megatron_gpt.py --tp 2 --pp 2
or ex-situ, one rank at a time, without --real.
"""
import argparse
import math
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--pp", type=int, default=1)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--micro-batch", type=int, default=2)
    p.add_argument("--num-microbatches", type=int, default=4)
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--p2p", choices=["batch", "single"], default="batch")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--backend", default=None, help="default: nccl with --device cuda, else gloo")
    p.add_argument("--seed", type=int, default=1234)
    return p.parse_args(argv)


class Parallel:
    """This rank's coordinates and process groups (Megatron's parallel_state, in small)."""

    def __init__(self, tp, pp):
        world, rank = dist.get_world_size(), dist.get_rank()
        if world % (tp * pp):
            raise SystemExit("world size %d is not a multiple of tp*pp=%d" % (world, tp * pp))
        dp = world // (tp * pp)
        self.tp, self.pp, self.dp, self.rank = tp, pp, dp, rank
        self.tp_rank, self.dp_rank, self.pp_rank = rank % tp, (rank // tp) % dp, rank // (tp * dp)
        g = lambda t, d, p: t + tp * (d + dp * p)  # noqa: E731  global rank of (tp, dp, pp) coordinates
        # Every rank creates every group in the same order, as torch.distributed requires.
        self.tp_group = self._groups([[g(t, d, p) for t in range(tp)] for p in range(pp) for d in range(dp)])
        self.dp_group = self._groups([[g(t, d, p) for d in range(dp)] for p in range(pp) for t in range(tp)])
        self.mp_group = self._groups([[g(t, d, p) for p in range(pp) for t in range(tp)] for d in range(dp)])
        self.prev = g(self.tp_rank, self.dp_rank, self.pp_rank - 1) if self.pp_rank > 0 else None
        self.next = g(self.tp_rank, self.dp_rank, self.pp_rank + 1) if self.pp_rank < pp - 1 else None

    def _groups(self, rank_lists):
        mine = None
        for ranks in rank_lists:
            group = dist.new_group(ranks)
            if self.rank in ranks:
                mine = group
        return mine

    @property
    def first(self):
        return self.pp_rank == 0

    @property
    def last(self):
        return self.pp_rank == self.pp - 1


PAR = None  # set in main(); the autograd functions below read the TP group from it
DEV = torch.device("cpu")


def _all_reduce_tp(x):
    if PAR.tp > 1:
        dist.all_reduce(x, group=PAR.tp_group)
    return x


class _CopyToTP(torch.autograd.Function):
    """Megatron's f: identity forward, all-reduce of the input gradient backward."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return _all_reduce_tp(g.contiguous())


class _ReduceFromTP(torch.autograd.Function):
    """Megatron's g: all-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx, x):
        return _all_reduce_tp(x.contiguous().clone())

    @staticmethod
    def backward(ctx, g):
        return g


class _GatherFromTP(torch.autograd.Function):
    """All-gather along the last dimension forward; keep this rank's slice backward."""

    @staticmethod
    def forward(ctx, x):
        if PAR.tp == 1:
            return x
        x = x.contiguous()
        parts = [torch.empty_like(x) for _ in range(PAR.tp)]
        dist.all_gather(parts, x, group=PAR.tp_group)
        return torch.cat(parts, dim=-1)

    @staticmethod
    def backward(ctx, g):
        return g.chunk(PAR.tp, dim=-1)[PAR.tp_rank].contiguous() if PAR.tp > 1 else g


def _param(*shape):
    w = torch.empty(*shape)
    nn.init.normal_(w, std=0.02)
    return nn.Parameter(w)


class ColumnParallelLinear(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = _param(n_out // PAR.tp, n_in)
        self.bias = nn.Parameter(torch.zeros(n_out // PAR.tp))

    def forward(self, x):
        return F.linear(_CopyToTP.apply(x), self.weight, self.bias)


class RowParallelLinear(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = _param(n_out, n_in // PAR.tp)
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return _ReduceFromTP.apply(F.linear(x, self.weight)) + self.bias


class VocabParallelEmbedding(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.per_rank = vocab // PAR.tp
        self.start = PAR.tp_rank * self.per_rank
        self.weight = _param(self.per_rank, hidden)

    def forward(self, ids):
        outside = (ids < self.start) | (ids >= self.start + self.per_rank)
        local = (ids - self.start).masked_fill(outside, 0)
        return _ReduceFromTP.apply(F.embedding(local, self.weight).masked_fill(outside.unsqueeze(-1), 0.0))


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.heads, self.head_dim = a.heads // PAR.tp, a.hidden // a.heads
        self.ln1, self.ln2 = nn.LayerNorm(a.hidden), nn.LayerNorm(a.hidden)
        self.qkv = ColumnParallelLinear(a.hidden, 3 * a.hidden)
        self.proj = RowParallelLinear(a.hidden, a.hidden)
        self.fc1 = ColumnParallelLinear(a.hidden, 4 * a.hidden)
        self.fc2 = RowParallelLinear(4 * a.hidden, a.hidden)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, self.heads, 3 * self.head_dim).transpose(1, 2).chunk(3, -1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        causal = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        att = torch.softmax(scores.masked_fill(causal, float("-inf")), -1) @ v
        x = x + self.proj(att.transpose(1, 2).reshape(b, s, -1))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Stage(nn.Module):
    """The layers of this pipeline stage; the first holds the embeddings, the last the head and loss."""

    def __init__(self, a):
        super().__init__()
        per_stage = a.layers // PAR.pp
        self.blocks = nn.ModuleList(Block(a) for _ in range(per_stage))
        if PAR.first:
            self.embed = VocabParallelEmbedding(a.vocab, a.hidden)
            self.pos = _param(a.seq, a.hidden)
        if PAR.last:
            self.ln_f = nn.LayerNorm(a.hidden)
            self.head = ColumnParallelLinear(a.hidden, a.vocab)

    def forward(self, x, tokens, labels):
        if PAR.first:
            x = self.embed(tokens) + self.pos
        for block in self.blocks:
            x = block(x)
        if not PAR.last:
            return x
        logits = _GatherFromTP.apply(self.head(self.ln_f(x)))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


class P2P:
    """Megatron's p2p_communication: the activation/gradient exchanges between adjacent stages."""

    def __init__(self, shape, mode):
        self.shape, self.mode = shape, mode

    def _exchange(self, send_prev=None, send_next=None, recv_prev=False, recv_next=False):
        recv_prev = recv_prev and PAR.prev is not None
        recv_next = recv_next and PAR.next is not None
        send_prev = send_prev if PAR.prev is not None else None
        send_next = send_next if PAR.next is not None else None
        got_prev = torch.empty(self.shape, device=DEV) if recv_prev else None
        got_next = torch.empty(self.shape, device=DEV) if recv_next else None
        ops = []  # Megatron's order: send prev, recv prev, send next, recv next
        if send_prev is not None:
            ops.append((dist.isend, send_prev.contiguous(), PAR.prev))
        if got_prev is not None:
            ops.append((dist.irecv, got_prev, PAR.prev))
        if send_next is not None:
            ops.append((dist.isend, send_next.contiguous(), PAR.next))
        if got_next is not None:
            ops.append((dist.irecv, got_next, PAR.next))
        if ops and self.mode == "batch":
            for req in dist.batch_isend_irecv([dist.P2POp(op, t, peer) for op, t, peer in ops]):
                req.wait()
        elif len(ops) == 1:  # one direction only: blocking calls, as the matching peer posts the other side
            op, t, peer = ops[0]
            (dist.send if op is dist.isend else dist.recv)(t, peer)
        else:
            for req in [op(t, peer) for op, t, peer in ops]:
                req.wait()
        for t in (got_prev, got_next):
            if t is not None:
                t.requires_grad_()
        return got_prev, got_next

    def recv_forward(self):
        return self._exchange(recv_prev=True)[0]

    def send_forward(self, y):
        self._exchange(send_next=y)

    def recv_backward(self):
        return self._exchange(recv_next=True)[1]

    def send_backward(self, g):
        self._exchange(send_prev=g)

    def send_forward_recv_backward(self, y):
        return self._exchange(send_next=y, recv_next=True)[1]

    def send_backward_recv_forward(self, g):
        return self._exchange(send_prev=g, recv_prev=True)[0]


def train_step(a, model, opt, p2p, tokens, labels):
    """One step: 1F1B over the micro-batches, then gradient all-reduce, clipping and the update."""
    m = a.num_microbatches
    losses, inputs, outputs = [], [], []
    mb = iter(range(m))

    def forward(x):
        i = next(mb)
        y = model(x, tokens[i], labels[i])
        if PAR.last:
            losses.append(y.detach())
            y = y / m
        return y

    def backward(x, y, g):
        torch.autograd.backward(y, grad_tensors=None if PAR.last else g)
        return x.grad if x is not None else None

    warmup = min(PAR.pp - PAR.pp_rank - 1, m)
    for _ in range(warmup):
        x = p2p.recv_forward()
        y = forward(x)
        p2p.send_forward(y)
        inputs.append(x)
        outputs.append(y)
    x = p2p.recv_forward() if m > warmup else None
    for i in range(m - warmup):
        y = forward(x)
        g = p2p.send_forward_recv_backward(y)
        inputs.append(x)
        outputs.append(y)
        gx = backward(inputs.pop(0), outputs.pop(0), g)
        if i == m - warmup - 1:
            p2p.send_backward(gx)
        else:
            x = p2p.send_backward_recv_forward(gx)
    for _ in range(warmup):
        g = p2p.recv_backward()
        p2p.send_backward(backward(inputs.pop(0), outputs.pop(0), g))

    grads = [p.grad for p in model.parameters()]
    if PAR.dp > 1:  # one flat buffer, like Megatron's contiguous gradient buffer
        flat = torch.cat([g.reshape(-1) for g in grads]) / PAR.dp
        dist.all_reduce(flat, group=PAR.dp_group)
        offset = 0
        for g in grads:
            g.copy_(flat[offset:offset + g.numel()].view_as(g))
            offset += g.numel()
    norm_sq = torch.stack([g.pow(2).sum() for g in grads]).sum().reshape(1)
    if PAR.tp * PAR.pp > 1:  # Megatron's global norm: summed over the model-parallel group
        dist.all_reduce(norm_sq, group=PAR.mp_group)
    scale = min(1.0, 1.0 / (float(norm_sq.sqrt()) + 1e-6))
    for g in grads:
        g.mul_(scale)
    opt.step()
    opt.zero_grad(set_to_none=False)
    loss = torch.stack(losses).mean().reshape(1) if PAR.last else None
    if loss is not None and PAR.dp > 1:
        dist.all_reduce(loss, group=PAR.dp_group)
        loss /= PAR.dp
    return loss


def main(argv=None):
    global PAR, DEV
    a = parse_args(argv)
    if a.device == "cuda":  # one GPU per rank; an ex-situ trace gives every rank LOCAL_RANK 0
        DEV = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(DEV)
    dist.init_process_group(a.backend or ("nccl" if a.device == "cuda" else "gloo"))
    PAR = Parallel(a.tp, a.pp)
    if a.layers % a.pp or a.heads % a.tp or a.vocab % a.tp or a.hidden % a.heads:
        raise SystemExit("layers must divide by pp; heads and vocab by tp; hidden by heads")
    torch.manual_seed(a.seed + PAR.rank)
    model = Stage(a).to(DEV)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    p2p = P2P((a.micro_batch, a.seq, a.hidden), a.p2p)
    data = torch.Generator().manual_seed(a.seed + PAR.dp_rank)  # the same batch on every rank of a DP replica
    for step in range(a.steps):
        seqs = torch.randint(a.vocab, (a.num_microbatches, a.micro_batch, a.seq + 1), generator=data).to(DEV)
        loss = train_step(a, model, opt, p2p, seqs[..., :-1], seqs[..., 1:])
        if loss is not None and PAR.tp_rank == 0 and PAR.dp_rank == 0:
            print("step %d loss %.4f" % (step, float(loss)))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
