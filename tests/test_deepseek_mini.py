"""tutorials/deepseek_mini.py: on the CPU its bookkeeping (allocator, chunked-prefill and padded
decode schedules) and the absorption math, with the reference standing in for the wrapper; on a
GPU (marked) the tutorial itself, small: real kernels, CUDA-graph buckets, checked logits."""
from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path

import pytest
import torch

from mla_wrapper.reference import mla_attention

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tutorials"))
import deepseek_mini as dm  # noqa: E402


class _RefWrapper:
    """plan()/run() with the wrapper's signatures, computed by reference.mla_attention."""

    def __init__(self, workspace=None, use_cuda_graph=False, **bufs):
        self.capacity = bufs["qo_indptr"].numel() - 1 if use_cuda_graph else None

    def plan(self, qo, kv, idx, lens, heads, d_ckv, d_kpe, page_size, causal, sm_scale, q_dt, kv_dt):
        assert (heads, d_ckv, d_kpe) == (dm.HEADS, 512, 64) and q_dt == kv_dt == dm.DT
        assert qo.dtype == kv.dtype == idx.dtype == lens.dtype == torch.int32
        assert self.capacity is None or lens.numel() == self.capacity
        self.plan_args = (qo, kv, idx, lens, page_size, causal, sm_scale)

    def run(self, q_nope, q_pe, ckv, kpe):
        qo, kv, idx, lens, page_size, causal, sm_scale = self.plan_args
        assert q_nope.shape == (int(qo[-1]), dm.HEADS, 512) and q_nope.stride(-1) == 1
        o, _ = mla_attention(q_nope, q_pe, ckv, kpe, qo, kv, idx, lens, page_size, causal, sm_scale)
        return o.to(q_nope.dtype)


class _EagerDecoder:
    """GraphDecoder without the graphs: same buckets, padding and per-bucket wrappers."""

    def __init__(self, model, caches, rope, workspace, max_pages_per_req, device):
        self.model, self.caches, self.rope = model, caches, rope
        self.wrappers = {b: _RefWrapper(use_cuda_graph=True, qo_indptr=torch.zeros(b + 1))
                         for b in dm.BUCKETS}
        self.buckets_used = set()

    def step(self, step, device):
        n = len(step.qo_lens)
        bucket = next(b for b in dm.BUCKETS if b >= n)
        self.buckets_used.add(bucket)
        padded = dm.pad(step, bucket)
        dm.plan(self.wrappers[bucket], padded, device)
        return self.model.forward(*dm.as_device(padded, device), self.caches, self.rope,
                                  dm.absorbed_attention(self.wrappers[bucket], self.caches))[:n]


def test_block_allocator_and_schedule():
    alloc = dm.BlockAllocator(8)
    seqs = [dm.Sequence(list(range(70)), 4), dm.Sequence(list(range(3)), 4)]
    step = dm.schedule(seqs, alloc, [s.prompt[:64] for s in seqs], causal=True)
    assert step.qo_lens == [64, 3] and step.kv_lens == [64, 3]
    assert dm.DUMMY_PAGE not in {p for ps in step.pages for p in ps}
    step2 = dm.schedule(seqs[:1], alloc, [seqs[0].prompt[64:]], causal=True)
    assert step2.positions == list(range(64, 70)) and len(step2.pages[0]) == 2
    assert step2.slots[0] == step2.pages[0][1] * dm.PAGE_SIZE
    padded = dm.pad(dm.schedule(seqs, alloc, [[1], [2]], causal=False), 4)
    qo, kv, idx, lens = padded.indptrs()
    assert qo.tolist() == [0, 1, 2, 3, 4] and lens.tolist() == [71, 4, 1, 1]
    assert idx[kv[2]:].tolist() == [dm.DUMMY_PAGE] * 2
    alloc.release(seqs[0].pages)
    assert len(alloc.free) == 8 - 1 - 1
    with pytest.raises(RuntimeError, match="out of pages"):
        for _ in range(10):
            alloc.allocate()


def test_absorbed_model_matches_plain_attention_cpu(monkeypatch):
    """The absorbed path (q through W_UK, latent attention, out through W_UV) against
    non-absorbed MHA over the decompressed cache, prefill chunks and padded decode buckets."""
    monkeypatch.setattr(dm, "mla_wrapper", types.SimpleNamespace(BatchMLAPagedAttentionWrapper=_RefWrapper))
    monkeypatch.setattr(dm, "GraphDecoder", _EagerDecoder)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    args = argparse.Namespace(layers=1, decode_steps=6, chunk=32, pages=32, max_len=512)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(0, dm.VOCAB, (n,), generator=g).tolist() for n in (37, 70, 5)]
    model = dm.Model(args.layers, torch.device("cpu"))
    steps, got, _ = dm.run_wrapper_model(model, prompts, [6, 4, 2], args, torch.device("cpu"))
    want, _ = dm.run_reference_model(model, steps, args, torch.device("cpu"))
    assert sum(s.causal for s in steps) == 3 and len(steps) == 3 + 5
    for k, (a, b) in enumerate(zip(got, want)):
        err = dm.rel_l2(a, b)
        assert err < 0.02, f"step {k}: logits rel error {err}"
        assert err > 1e-6, "identical logits: is the reference compared with itself?"


def test_needs_cuda_message(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert dm.main([]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


@pytest.mark.gpu
def test_deepseek_mini_tutorial_small(capsys):
    rc = dm.main(["--layers", "2", "--decode-steps", "16", "--prompts", "37,300,5,129,64"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "decode tokens/s" in out and "OK" in out
