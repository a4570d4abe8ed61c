"""A DeepSeek-V2-Lite-shaped model decoding through mla_wrapper. **Needs a CUDA GPU.**

    python tutorials/deepseek_mini.py [--layers 4] [--decode-steps 64] [--tol 0.03]

What it shows a serving engine author:

- the model: hidden 2048, 16 heads, kv_lora_rank 512, rope dim 64, qk_nope 128, v 128 (random
  weights scaled 1/sqrt(fan_in), RMSNorm, RoPE, a SwiGLU MLP, a small vocabulary);
- a paged latent cache (one [pages, 64, 576] buffer per layer: 512 normed latent + 64 rope'd
  key) and a simple block allocator handing out pages as sequences grow;
- absorbed MLA: q_nope is absorbed through W_UK into the 512-wide latent, the wrapper attends
  over the latent cache (MQA over 576 dims), and its output goes back up through W_UV;
- chunked prefill of prompts of different lengths through the wrapper's causal path
  (qo_len > 1, causal=True, one plan per chunk step shared by all layers);
- decode in a CUDA graph per batch bucket: one ``use_cuda_graph=True`` wrapper per bucket, the
  whole model step (embedding .. logits) captured once, then per step: plan() on the host
  outside the graph, copy the step's tokens into the graph's input buffers, replay. Requests
  have different token budgets, so the batch shrinks and moves between buckets (padded with
  dummy requests that read and write a reserved page).

Every prefill and decode step's logits are compared with the same model using plain PyTorch
attention: non-absorbed multi-head attention over the decompressed cache (k_nope = ckv @ W_UK,
v = ckv @ W_UV), which also checks the absorption math. The reference is teacher-forced with
the tokens the wrapper model picked (greedy). Tokens/s of both decode loops are printed. The
script exits with status 1 when any step's logits differ by more than ``--tol`` (relative L2
error; bf16 activations give ~1e-2) or contain a NaN, and 2 when no CUDA GPU is present.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

import mla_wrapper

HIDDEN, HEADS, KV_LORA, ROPE, NOPE, V_DIM = 2048, 16, 512, 64, 128, 128
QK_DIM = NOPE + ROPE
SM_SCALE = 1.0 / math.sqrt(QK_DIM)
PAGE_SIZE = 64
VOCAB, MLP_DIM = 8192, 4096
DUMMY_PAGE = 0            # reserved: padding requests of a CUDA-graph bucket use it
BUCKETS = (1, 2, 4, 8)
DT = torch.bfloat16


# ------------------------------------------------------------------------------ the model
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


class Rope:
    """Rotate-half RoPE over the 64 rope dims, tables for up to ``max_pos`` positions."""

    def __init__(self, max_pos: int, device, theta: float = 10000.0):
        inv = 1.0 / theta ** (torch.arange(0, ROPE, 2, device=device, dtype=torch.float32) / ROPE)
        ang = torch.arange(max_pos, device=device, dtype=torch.float32)[:, None] * inv[None]
        self.cos, self.sin = ang.cos(), ang.sin()          # [max_pos, 32]

    def __call__(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """x [T, ..., 64], positions [T] int64 -> rotated x (same dtype)."""
        shape = (x.shape[0],) + (1,) * (x.dim() - 2) + (ROPE // 2,)
        cos, sin = self.cos[positions].view(shape), self.sin[positions].view(shape)
        x1, x2 = x.float().chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


@dataclass
class Layer:
    attn_norm: torch.Tensor
    w_q: torch.Tensor        # [HIDDEN, HEADS * 192]  (V2-Lite has no q LoRA)
    w_kv_a: torch.Tensor     # [HIDDEN, 512 + 64]     (kv_a_proj_with_mqa)
    kv_norm: torch.Tensor    # [512]
    w_uk: torch.Tensor       # [HEADS, 512, 128]      (kv_b_proj, key half)
    w_uv: torch.Tensor       # [HEADS, 512, 128]      (kv_b_proj, value half)
    w_o: torch.Tensor        # [HEADS * 128, HIDDEN]
    mlp_norm: torch.Tensor
    w_gate: torch.Tensor
    w_up: torch.Tensor
    w_down: torch.Tensor


class Model:
    """Weights and the forward pass; attention is a pluggable function so the wrapper path and
    the plain-PyTorch reference share everything else."""

    def __init__(self, num_layers: int, device, seed: int = 0):
        g = torch.Generator(device="cpu").manual_seed(seed)

        def w(*shape, fan_in=None):
            fan_in = fan_in or shape[-2]
            return (torch.randn(*shape, generator=g) / math.sqrt(fan_in)).to(device, DT)

        ones = lambda n: torch.ones(n, device=device, dtype=DT)  # noqa: E731
        self.embed = (torch.randn(VOCAB, HIDDEN, generator=g)).to(device, DT)
        self.layers = [Layer(attn_norm=ones(HIDDEN), w_q=w(HIDDEN, HEADS * QK_DIM),
                             w_kv_a=w(HIDDEN, KV_LORA + ROPE), kv_norm=ones(KV_LORA),
                             w_uk=w(HEADS, KV_LORA, NOPE), w_uv=w(HEADS, KV_LORA, V_DIM),
                             w_o=w(HEADS * V_DIM, HIDDEN), mlp_norm=ones(HIDDEN),
                             w_gate=w(HIDDEN, MLP_DIM), w_up=w(HIDDEN, MLP_DIM),
                             w_down=w(MLP_DIM, HIDDEN))
                       for _ in range(num_layers)]
        self.final_norm = ones(HIDDEN)
        self.lm_head = w(HIDDEN, VOCAB)

    def forward(self, tokens, positions, slots, caches, rope, attention) -> torch.Tensor:
        """tokens / positions / slots [T] int64 (slot = page * PAGE_SIZE + offset in the cache);
        caches: per layer [pages, PAGE_SIZE, 576]; attention(layer_idx, layer, q_nope [T, H,
        128], q_pe [T, H, 64]) -> [T, H * 128]. Returns logits [T, VOCAB] float32."""
        T = tokens.shape[0]
        x = self.embed[tokens]
        for i, L in enumerate(self.layers):
            h = rms_norm(x, L.attn_norm)
            q = (h @ L.w_q).view(T, HEADS, QK_DIM)
            q_nope, q_pe = q[..., :NOPE], rope(q[..., NOPE:], positions)
            kv = h @ L.w_kv_a
            latent = torch.cat([rms_norm(kv[:, :KV_LORA], L.kv_norm), rope(kv[:, KV_LORA:], positions)], -1)
            caches[i].view(-1, KV_LORA + ROPE).index_copy_(0, slots, latent)
            x = x + attention(i, L, q_nope, q_pe) @ L.w_o
            h = rms_norm(x, L.mlp_norm)
            x = x + (F.silu(h @ L.w_gate) * (h @ L.w_up)) @ L.w_down
        return (rms_norm(x, self.final_norm) @ self.lm_head).float()


def absorbed_attention(wrapper, caches):
    """Attention through the wrapper (planned for the step): q_nope [T, H, 128] is absorbed
    through W_UK into q_latent [T, H, 512]; the wrapper attends over the latent cache; its
    output [T, H, 512] goes up through W_UV to [T, H, 128]."""

    def attention(i, L, q_nope, q_pe):
        q_latent = torch.bmm(q_nope.transpose(0, 1), L.w_uk.transpose(1, 2)).transpose(0, 1)
        o_latent = wrapper.run(q_latent, q_pe, caches[i][..., :KV_LORA], caches[i][..., KV_LORA:])
        o = torch.bmm(o_latent.transpose(0, 1), L.w_uv).transpose(0, 1)    # [T, H, 128]
        return o.reshape(q_nope.shape[0], HEADS * V_DIM)

    return attention


def reference_attention(step, caches):
    """Plain PyTorch multi-head attention, not absorbed: each request's latent rows are gathered
    from its pages and decompressed into per-head keys (ckv @ W_UK, plus the shared rope key) and
    values (ckv @ W_UV); causal softmax attention in float32."""

    def attention(i, L, q_nope, q_pe):
        q = torch.cat([q_nope, q_pe], -1)                                   # [T, H, 192]
        outs, t0 = [], 0
        for pages, qo_len, kv_len in zip(step.pages, step.qo_lens, step.kv_lens):
            rows = caches[i][torch.tensor(pages, device=q.device)].reshape(-1, KV_LORA + ROPE)[:kv_len]
            ckv, kpe = rows[:, :KV_LORA].float(), rows[:, KV_LORA:].float()
            k = torch.cat([torch.einsum("ld,hdn->hln", ckv, L.w_uk.float()),
                           kpe.expand(HEADS, kv_len, ROPE)], -1)            # [H, L, 192]
            v = torch.einsum("ld,hdn->hln", ckv, L.w_uv.float())             # [H, L, 128]
            qr = q[t0:t0 + qo_len].float().transpose(0, 1)                  # [H, q, 192]
            visible = (torch.arange(kv_len, device=q.device)[None, :]
                       <= torch.arange(qo_len, device=q.device)[:, None] + (kv_len - qo_len))
            o = F.scaled_dot_product_attention(qr, k, v, attn_mask=visible, scale=SM_SCALE)
            outs.append(o.transpose(0, 1).reshape(qo_len, HEADS * V_DIM))
            t0 += qo_len
        return torch.cat(outs).to(q_nope.dtype)

    return attention


# ------------------------------------------------------------------------------ the cache
class BlockAllocator:
    """Hands out cache pages from a free list (page DUMMY_PAGE is never handed out)."""

    def __init__(self, num_pages: int):
        self.free = list(range(num_pages - 1, DUMMY_PAGE, -1))

    def allocate(self) -> int:
        if not self.free:
            raise RuntimeError("KV cache out of pages: raise --pages")
        return self.free.pop()

    def release(self, pages) -> None:
        self.free.extend(reversed(pages))


@dataclass
class Sequence:
    prompt: list
    max_new: int
    pages: list = field(default_factory=list)
    length: int = 0            # tokens in the cache
    generated: list = field(default_factory=list)

    @property
    def done(self) -> bool:
        return len(self.generated) >= self.max_new


@dataclass
class Step:
    """One batch as both models see it (recorded by the wrapper run, replayed by the reference)."""
    tokens: list
    positions: list
    slots: list
    qo_lens: list
    kv_lens: list
    pages: list           # per request: its page ids (covering kv_len)
    causal: bool

    def indptrs(self):
        qo = [0]
        kv = [0]
        for q, p in zip(self.qo_lens, self.pages):
            qo.append(qo[-1] + q)
            kv.append(kv[-1] + len(p))
        return (torch.tensor(qo, dtype=torch.int32), torch.tensor(kv, dtype=torch.int32),
                torch.tensor([x for p in self.pages for x in p], dtype=torch.int32),
                torch.tensor(self.kv_lens, dtype=torch.int32))


def schedule(seqs, allocator, new_tokens, causal):
    """Append new_tokens[r] (a list) to each sequence r: allocate pages, return the Step."""
    step = Step([], [], [], [], [], [], causal)
    for s, toks in zip(seqs, new_tokens):
        for t in toks:
            if s.length % PAGE_SIZE == 0:
                s.pages.append(allocator.allocate())
            step.tokens.append(t)
            step.positions.append(s.length)
            step.slots.append(s.pages[s.length // PAGE_SIZE] * PAGE_SIZE + s.length % PAGE_SIZE)
            s.length += 1
        step.qo_lens.append(len(toks))
        step.kv_lens.append(s.length)
        step.pages.append(list(s.pages))
    return step


def pad(step: Step, bucket: int) -> Step:
    """Pad a decode step to a CUDA-graph bucket with dummy requests (one token at position 0
    reading and writing the reserved page)."""
    n = bucket - len(step.qo_lens)
    return Step(step.tokens + [0] * n, step.positions + [0] * n,
                step.slots + [DUMMY_PAGE * PAGE_SIZE] * n, step.qo_lens + [1] * n,
                step.kv_lens + [1] * n, step.pages + [[DUMMY_PAGE]] * n, False)


def plan(wrapper, step: Step, device) -> None:
    qo, kv, idx, lens = step.indptrs()
    wrapper.plan(qo, kv, idx.to(device, non_blocking=True), lens, HEADS, KV_LORA, ROPE, PAGE_SIZE,
                 step.causal, SM_SCALE, DT, DT)


def as_device(step: Step, device):
    return tuple(torch.tensor(v, dtype=torch.int64).to(device, non_blocking=True)
                 for v in (step.tokens, step.positions, step.slots))


def last_token_rows(step: Step) -> torch.Tensor:
    ends = torch.tensor(step.qo_lens).cumsum(0) - 1
    return ends


# ------------------------------------------------------------------------------ the runs
class GraphDecoder:
    """One use_cuda_graph=True wrapper and one captured model step per batch bucket."""

    def __init__(self, model, caches, rope, workspace, max_pages_per_req, device):
        self.graphs = {}
        for b in BUCKETS:
            bufs = dict(qo_indptr=torch.arange(b + 1, dtype=torch.int32, device=device),
                        kv_indptr=torch.zeros(b + 1, dtype=torch.int32, device=device),
                        kv_indices=torch.zeros(b * max_pages_per_req, dtype=torch.int32, device=device),
                        kv_len_arr=torch.zeros(b, dtype=torch.int32, device=device))
            wrapper = mla_wrapper.BatchMLAPagedAttentionWrapper(workspace, use_cuda_graph=True, **bufs)
            dummy = pad(Step([], [], [], [], [], [], False), b)
            plan(wrapper, dummy, device)       # the first plan fixes heads / page size / dtypes
            inputs = tuple(torch.zeros(b, dtype=torch.int64, device=device) for _ in range(3))
            fwd = lambda: model.forward(*inputs, caches, rope, absorbed_attention(wrapper, caches))  # noqa: E731
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fwd()                                                   # warm up (cuBLAS)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                logits = fwd()
            self.graphs[b] = (wrapper, graph, inputs, logits)

    def step(self, step: Step, device) -> torch.Tensor:
        n = len(step.qo_lens)
        bucket = next(b for b in BUCKETS if b >= n)
        wrapper, graph, inputs, logits = self.graphs[bucket]
        padded = pad(step, bucket)
        plan(wrapper, padded, device)                                   # host, outside the graph
        for buf, src in zip(inputs, as_device(padded, device)):
            buf.copy_(src)
        graph.replay()
        return logits[:n]


def run_wrapper_model(model, prompts, budgets, args, device):
    """Chunked prefill (eager wrapper, causal) then graph decode; returns the recorded steps,
    their logits (float32, last token per request for prefill steps) and decode tokens/s."""
    caches = [torch.zeros(args.pages, PAGE_SIZE, KV_LORA + ROPE, device=device, dtype=DT)
              for _ in model.layers]
    rope = Rope(args.max_len, device)
    allocator = BlockAllocator(args.pages)
    workspace = torch.empty(256 << 20, dtype=torch.uint8, device=device)
    eager = mla_wrapper.BatchMLAPagedAttentionWrapper(workspace)
    decoder = GraphDecoder(model, caches, rope, workspace, args.max_len // PAGE_SIZE, device)
    seqs = [Sequence(p, m) for p, m in zip(prompts, budgets)]
    steps, logits_log = [], []

    # chunked prefill: every request with prompt left takes up to --chunk tokens per step
    while any(s.length < len(s.prompt) for s in seqs):
        batch = [s for s in seqs if s.length < len(s.prompt)]
        step = schedule(batch, allocator, [s.prompt[s.length:s.length + args.chunk] for s in batch], True)
        plan(eager, step, device)
        logits = model.forward(*as_device(step, device), caches, rope, absorbed_attention(eager, caches))
        logits = logits[last_token_rows(step).to(device)]
        steps.append(step)
        logits_log.append(logits)
        for s, row in zip(batch, logits.argmax(-1).tolist()):
            if s.length == len(s.prompt):
                s.generated.append(row)          # the first new token comes from the prompt

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    decoded = 0
    for _ in range(args.decode_steps):
        batch = [s for s in seqs if not s.done]
        if not batch:
            break
        step = schedule(batch, allocator, [[s.generated[-1]] for s in batch], False)
        logits = decoder.step(step, device)
        steps.append(step)
        logits_log.append(logits.clone())
        for s, tok in zip(batch, logits.argmax(-1).tolist()):   # .tolist() syncs: greedy needs it
            s.generated.append(tok)
            if s.done:
                allocator.release(s.pages)
        decoded += len(batch)
    torch.cuda.synchronize()
    return steps, logits_log, decoded / (time.perf_counter() - t0)


def run_reference_model(model, steps, args, device):
    """The same steps (same tokens, positions and pages) with plain PyTorch attention."""
    caches = [torch.zeros(args.pages, PAGE_SIZE, KV_LORA + ROPE, device=device, dtype=DT)
              for _ in model.layers]
    rope = Rope(args.max_len, device)
    logits_log, decoded, elapsed = [], 0, 0.0
    for step in steps:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        logits = model.forward(*as_device(step, device), caches, rope, reference_attention(step, caches))
        if step.causal:
            logits = logits[last_token_rows(step).to(device)]
        else:
            logits.argmax(-1).tolist()          # the same per-step sync as the greedy loop
            elapsed += time.perf_counter() - t0
            decoded += len(step.qo_lens)
        logits_log.append(logits)
    return logits_log, decoded / max(elapsed, 1e-9)


def rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    if not torch.isfinite(a).all():
        return math.inf
    return float((a - b).norm() / b.norm())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--decode-steps", type=int, default=64)
    ap.add_argument("--prompts", type=str, default="37,300,129,1000,64",
                    help="comma-separated prompt lengths")
    ap.add_argument("--chunk", type=int, default=128, help="prefill chunk (tokens per request)")
    ap.add_argument("--pages", type=int, default=256)
    ap.add_argument("--max-len", type=int, default=4096)
    ap.add_argument("--tol", type=float, default=0.03, help="max relative L2 error of logits")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("deepseek_mini.py needs a CUDA GPU", file=sys.stderr)
        return 2
    device = torch.device("cuda")
    lens = [int(x) for x in args.prompts.split(",")]
    if len(lens) > max(BUCKETS):
        raise ValueError(f"--prompts: at most {max(BUCKETS)} prompts (the largest graph bucket)")
    if max(lens) + args.decode_steps > args.max_len:
        raise ValueError(f"--max-len: {args.max_len} is shorter than the longest prompt "
                         f"{max(lens)} + --decode-steps {args.decode_steps}")
    g = torch.Generator().manual_seed(args.seed)
    prompts = [torch.randint(0, VOCAB, (n,), generator=g).tolist() for n in lens]
    # different budgets: requests finish at different steps, so the decode batch moves
    # between CUDA-graph buckets (5 -> 8-bucket, 4 -> 4, 2 -> 2, ...)
    budgets = [max(1, args.decode_steps * (len(lens) - i) // len(lens)) for i in range(len(lens))]
    model = Model(args.layers, device, seed=args.seed)

    steps, got, wrapper_tps = run_wrapper_model(model, prompts, budgets, args, device)
    want, ref_tps = run_reference_model(model, steps, args, device)

    worst, agree, total = 0.0, 0, 0
    for k, (step, a, b) in enumerate(zip(steps, got, want)):
        err = rel_l2(a, b)
        worst = max(worst, err)
        agree += int((a.argmax(-1) == b.argmax(-1)).sum())
        total += a.shape[0]
        kind = "prefill" if step.causal else "decode "
        if err > args.tol or k < 2 or k % 16 == 0:
            print(f"step {k:3d} {kind} batch {len(step.qo_lens)} tokens {len(step.tokens):5d}: "
                  f"logits rel L2 error {err:.2e}")
    print(f"{len(steps)} steps, worst logits rel L2 error {worst:.2e} (tolerance {args.tol}); "
          f"greedy tokens agree {agree}/{total}")
    print(f"decode tokens/s: mla_wrapper (CUDA graphs) {wrapper_tps:,.0f}, "
          f"plain PyTorch attention (eager) {ref_tps:,.0f}")
    if worst > args.tol:
        print(f"FAIL: logits diverge beyond the bf16 tolerance {args.tol}", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
