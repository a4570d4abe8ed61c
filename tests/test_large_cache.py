"""Caches past 2^31 elements and 4 GiB: every kernel must address its pages in 64 bits.

A serving engine sizes each layer's pool to the memory it has left, so a model with few layers
on a large GPU (or a pool shared by layers) holds millions of tokens a layer: 3.8M tokens of a
16-bit cache are 4.4 GB, past both int32's element range and a 32-bit byte offset. A page id
times a page stride computed in 32 bits wraps there and reads another page (FlashInfer's MLA
kernels had this bug: flashinfer-ai/flashinfer PR 3136). Here each batch's pages lie beyond
4 GiB (the pool's last page among them) and below it; every other page of the pool holds NaN,
so a read of a wrong page shows in the output. Each batch is made by the suite's own
generators (test_wrapper.make_batch, test_fp8_kv.make_fp8_batch, test_sparse.make_case) and
its pages copied into the pool: the reference runs on the batch as made. The pools are
allocated once a module (~4.4 GB each).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from test_fp8_kv import IS_HOPPER, make_fp8_batch
from test_sparse import check_outputs, make_case
from test_wrapper import (FP8, SM_SCALE, check, make_batch, new_wrapper, plan, scales,  # noqa: F401
                          workspace)

FOUR_GIB = 1 << 32
TOKENS_16 = 59392 * 64      # 3,801,088 tokens x 1152 bytes: 4.38 GB, 2.19e9 elements
TOKENS_FP8 = 118784 * 64    # 7,602,176 tokens x 576 bytes: 4.38 GB
E4M3_NAN = 0x7F


def _room_for(nbytes: int) -> None:
    """Skip where the GPU has not nbytes (plus 2 GB for the test's other tensors) free."""
    free = torch.cuda.mem_get_info()[0]
    if free < nbytes + (2 << 30):
        pytest.skip(f"needs {(nbytes + (2 << 30)) / 1e9:.1f} GB of free GPU memory, "
                    f"{free / 1e9:.1f} GB free")


@pytest.fixture(scope="module")
def pool16():
    """[TOKENS_16, 576] bf16, all NaN (a test writes its pages and NaN them again after)."""
    _room_for(TOKENS_16 * 576 * 2)
    buf = torch.full((TOKENS_16, 576), float("nan"), dtype=torch.bfloat16, device="cuda")
    yield buf
    del buf
    torch.cuda.empty_cache()


@pytest.fixture(scope="module")
def pool8():
    """[TOKENS_FP8, 576] float8_e4m3fn, all NaN."""
    _room_for(TOKENS_FP8 * 576)
    buf = torch.full((TOKENS_FP8, 576), E4M3_NAN, dtype=torch.uint8, device="cuda").view(FP8)
    yield buf
    del buf
    torch.cuda.empty_cache()


def far_pages(num_pages: int, page_bytes: int, count: int, rng) -> np.ndarray:
    """count distinct page ids in random order: the pool's last page, about half of the rest
    past the first 4 GiB, the others below it."""
    first_far = -(-FOUR_GIB // page_bytes)
    assert first_far < num_pages - count, "the pool must reach well past 4 GiB"
    n_far = count // 2
    far = rng.choice(np.arange(first_far, num_pages - 1), size=n_far, replace=False)
    near = rng.choice(first_far, size=count - n_far - 1, replace=False)
    ids = np.concatenate([[num_pages - 1], far, near]).astype(np.int64)
    rng.shuffle(ids)
    return ids


def _raw(t: torch.Tensor) -> torch.Tensor:
    """An e4m3 tensor as its bytes (indexing copies them as they are); others as they are."""
    return t.view(torch.uint8) if t.dtype == FP8 else t


def nan_pages(pages_view: torch.Tensor, ids: torch.Tensor) -> None:
    _raw(pages_view)[ids] = E4M3_NAN if pages_view.dtype == FP8 else float("nan")


def far_batch(pool, kv_lens, heads, page_size, seed, **fp8_scales):
    """A batch of test_wrapper.make_batch (over the pool's dtype: test_fp8_kv.make_fp8_batch
    with ``fp8_scales`` for an fp8 pool) moved into the pool viewed as [P, page_size, 576]: its
    pages copied to far_pages' ids. Returns (small, big, ids, pages_view): the batch as made
    (the reference's), the same batch over the pool, the pool pages it took (a long CUDA
    tensor) and the view."""
    if pool.dtype == FP8:
        small = make_fp8_batch(kv_lens, 1, heads, page_size, torch.bfloat16, seed=seed,
                               **fp8_scales)
    else:
        small = make_batch(kv_lens, 1, heads, page_size, pool.dtype, seed=seed)
    pages_view = pool.view(pool.shape[0] // page_size, page_size, 576)
    page_bytes = page_size * 576 * pool.element_size()
    count = int(small["kv_indptr"][-1])
    ids = torch.from_numpy(far_pages(pages_view.shape[0], page_bytes, count,
                                     np.random.default_rng(seed))).cuda()
    cache = torch.cat([_raw(small["ckv"]), _raw(small["kpe"])], dim=-1)  # [pages, page_size, 576]
    _raw(pages_view)[ids] = cache[small["kv_indices"][:count].long()]
    big = {**small, "ckv": pages_view[..., :512], "kpe": pages_view[..., 512:],
           "kv_indices": ids.to(torch.int32)}
    return small, big, ids, pages_view


def run_check(w, pool, kv_lens, heads, page_size, seed, poison, **fp8_scales):
    """plan and run far_batch's batch over the pool (NaN-poisoned outputs), compare with the
    reference on the batch as made, and NaN the pool's pages again."""
    small, b, ids, pages_view = far_batch(pool, kv_lens, heads, page_size, seed, **fp8_scales)
    try:
        plan(w, b, False)
        T, H = b["q_nope"].shape[:2]
        out = poison(torch.empty(T, H, 512, dtype=b["dtype"], device="cuda"))
        lse = poison(torch.empty(T, H, dtype=torch.float32, device="cuda"))
        w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], out=out, lse=lse, **scales(b))
        check(small, out, lse, False)
    finally:
        nan_pages(pages_view, ids)


LENS = [1, 65, 1000, 4097]


@pytest.mark.gpu
@pytest.mark.parametrize("page_size,heads", [(1, 16), (16, 64), (64, 128)])
def test_paged_cache_past_4gib(pool16, workspace, poison, page_size, heads, planned_backend):
    """The wrapper's kernels (sm80; sm90 by TMA boxes at pages 16 / 64, by cp.async at page 1)
    over pages past 4 GiB and 2^31 elements of a bf16 pool."""
    run_check(new_wrapper(workspace, backend=planned_backend), pool16, LENS, heads, page_size,
              page_size + heads, poison)


@pytest.mark.gpu
@pytest.mark.skipif(not IS_HOPPER, reason="an fp8 cache runs on the sm90 family (Hopper) only")
@pytest.mark.parametrize("page_size,heads,tall", [(1, 16, "1"), (64, 16, "1"), (64, 128, "1"),
                                                  (1, 32, "all"), (64, 32, "all")])
def test_fp8_cache_past_4gib(pool8, workspace, poison, monkeypatch, page_size, heads, tall):
    """sm90's e4m3 instances (narrow at 16 heads, the 64-row tiles at 128, tall at 32 with
    every batch tall) over pages past 4 GiB of an fp8 pool, with scales."""
    monkeypatch.setenv("MLA_WRAPPER_SM90_TALL", tall)
    run_check(new_wrapper(workspace, backend="sm90"), pool8, LENS, heads, page_size,
              7 * page_size + heads, poison, ckv_scale=0.37, kpe_scale=1.9)


@pytest.mark.gpu
@pytest.mark.parametrize("heads", [16, 128])
def test_cutlass_mla_decode_past_4gib(pool16, poison, heads, planned_backend, monkeypatch):
    """sgl-kernel's cutlass_mla_decode (its plan written on the GPU) over a page table whose
    pages lie past 4 GiB."""
    import mla_wrapper
    from mla_wrapper import backends, ops

    monkeypatch.setattr(ops, "_routed_family", lambda device: backends.family(planned_backend))
    monkeypatch.setattr(ops, "_ROUTED_LAST", {})   # (no call set up on another family reused)
    page_size = 64
    small, b, ids, pages_view = far_batch(pool16, LENS, heads, page_size, seed=heads + 3)
    try:
        max_blocks = max(-(-n // page_size) for n in LENS)
        table = torch.zeros(len(LENS), max_blocks, dtype=torch.int32)
        far = b["kv_indices"].cpu()
        for r in range(len(LENS)):
            p0, p1 = int(b["kv_indptr"][r]), int(b["kv_indptr"][r + 1])
            table[r, : p1 - p0] = far[p0:p1]
        n = mla_wrapper.cutlass_mla_get_workspace_size(max_blocks * page_size, len(LENS),
                                                       num_kv_splits=-1)
        ws = torch.empty(max(n, 1), dtype=torch.uint8, device="cuda")
        out = mla_wrapper.cutlass_mla_decode(b["q_nope"], b["q_pe"], pages_view,
                                             b["kv_len"].cuda(), table.cuda(), ws, SM_SCALE, -1)
        check(small, out, None, False)
    finally:
        nan_pages(pages_view, ids)


@pytest.mark.gpu
def test_sparse_fwd_past_4gib(pool16, planned_backend, monkeypatch):
    """flash_mla_sparse_fwd (sm80's and sm90's gather modes) with slot ids past 4 GiB of a flat
    bf16 pool [s_kv, 1, 576]; -1 holes too."""
    from mla_wrapper import flash_mla_sparse_fwd

    monkeypatch.setenv("MLA_WRAPPER_SM90", "1" if planned_backend == "sm90" else "0")
    num_slots = 5000
    q, kv, idx = make_case(3, 64, 2048, num_slots, torch.bfloat16, seed=11)
    slots = torch.from_numpy(far_pages(TOKENS_16, 1152, num_slots,
                                       np.random.default_rng(11))).cuda()
    rows = pool16.view(TOKENS_16, 1, 576)
    rows[slots] = kv
    try:
        far_idx = torch.where(idx < 0, idx, slots[idx.clamp(min=0).long()].to(torch.int32))
        out, max_logits, lse = flash_mla_sparse_fwd(q, rows, far_idx, SM_SCALE)
        check_outputs(out, max_logits, lse, q, kv, idx)   # the reference on the case as made
    finally:
        nan_pages(rows, slots)


@pytest.mark.gpu
def test_cp_gather_cache_past_4gib(pool16):
    """vLLM's cp_gather_cache from blocks past 4 GiB: dst rows equal the source rows exactly."""
    from mla_wrapper import cache_ops

    block = 64
    blocks = pool16.view(TOKENS_16 // block, block, 576)
    rng = np.random.default_rng(13)
    ids = torch.from_numpy(far_pages(blocks.shape[0], block * 1152, 40, rng)).cuda()
    g = torch.Generator(device="cuda").manual_seed(13)
    blocks[ids] = torch.randn(len(ids), block, 576, generator=g, device="cuda").to(torch.bfloat16)
    try:
        lens = [1000, 1, 1280]   # 16 + 1 + 20 blocks
        table = torch.zeros(3, 20, dtype=torch.int32)
        table[0, :16], table[1, :1], table[2, :20] = (ids[:16].cpu(), ids[16:17].cpu(),
                                                      ids[17:37].cpu())
        cu = torch.tensor([0, 1000, 1001, 2281], dtype=torch.int32, device="cuda")
        dst = torch.full((2281, 576), float("nan"), dtype=torch.bfloat16, device="cuda")
        cache_ops.cp_gather_cache(blocks, dst, table.cuda(), cu, 3)
        want = torch.cat([blocks[ids[:16]].reshape(-1, 576)[:1000],
                          blocks[ids[16:17]].reshape(-1, 576)[:1],
                          blocks[ids[17:37]].reshape(-1, 576)[:1280]])
        assert torch.equal(dst.view(torch.int16), want.view(torch.int16))
    finally:
        nan_pages(blocks, ids)
