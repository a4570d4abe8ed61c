"""Caches past 2^31 elements and 4 GiB: every kernel must address its pages in 64 bits.

A serving engine sizes each layer's pool to the memory it has left, so a model with few layers
on a large GPU (or a pool shared by layers) holds millions of tokens a layer: 3.8M tokens of a
16-bit cache are 4.4 GB, past both int32's element range and a 32-bit byte offset. A page id
times a page stride computed in 32 bits wraps there and reads another page (FlashInfer's MLA
kernels had this bug: flashinfer-ai/flashinfer PR 3136). Here each batch's pages lie beyond
4 GiB (the pool's last page among them) and below it; every other page of the pool holds NaN,
so a read of a wrong page shows in the output, which is compared with the reference on a
compact copy of the pages used. The pools are allocated once a module (~4.4 GB each).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import HAS_CUDA
from mla_wrapper.reference import rel_error
from test_sparse import check_outputs
from test_wrapper import FP8, SM_SCALE, TOL, check, new_wrapper, plan, scales, workspace  # noqa: F401

IS_HOPPER = HAS_CUDA and torch.cuda.get_device_capability()[0] == 9
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


def fill_pages(pages_view: torch.Tensor, ids: torch.Tensor, seed: int) -> None:
    """Fresh random values (randn x 0.5, or (randn x 2) as e4m3) in the pool's pages ``ids``."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    shape = (len(ids),) + tuple(pages_view.shape[1:])
    if pages_view.dtype == FP8:
        vals = (torch.randn(shape, generator=g, device="cuda") * 2).to(FP8).view(torch.uint8)
    else:
        vals = (torch.randn(shape, generator=g, device="cuda") * 0.5).to(pages_view.dtype)
    _raw(pages_view)[ids] = vals


def nan_pages(pages_view: torch.Tensor, ids: torch.Tensor) -> None:
    _raw(pages_view)[ids] = E4M3_NAN if pages_view.dtype == FP8 else float("nan")


def gather(pages_view: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The pool's pages ``ids`` as a new tensor of the pool's dtype."""
    return _raw(pages_view)[ids].view(pages_view.dtype)


def far_batch(pool, kv_lens, heads, page_size, dtype, seed):
    """test_wrapper.make_batch's dict over the pool viewed as [P, page_size, 576], the batch's
    pages from far_pages (filled with fresh values), plus 'ids' (the pages, a long CUDA
    tensor) and 'pages_view'."""
    rng = np.random.default_rng(seed)
    lens = torch.tensor(kv_lens, dtype=torch.int32)
    per_req = (lens + page_size - 1) // page_size
    kv_indptr = torch.zeros(len(kv_lens) + 1, dtype=torch.int32)
    kv_indptr[1:] = torch.cumsum(per_req, 0)
    pages_view = pool.view(pool.shape[0] // page_size, page_size, 576)
    page_bytes = page_size * 576 * pool.element_size()
    ids = torch.from_numpy(far_pages(pages_view.shape[0], page_bytes, int(kv_indptr[-1]),
                                     rng)).cuda()
    fill_pages(pages_view, ids, seed)
    g = torch.Generator(device="cuda").manual_seed(seed + 1)
    q = torch.randn(len(kv_lens), heads, 576, generator=g, device="cuda").to(dtype)
    return dict(qo_indptr=torch.arange(len(kv_lens) + 1, dtype=torch.int32), kv_indptr=kv_indptr,
                kv_indices=ids.to(torch.int32), kv_len=lens, q_nope=q[..., :512],
                q_pe=q[..., 512:], ckv=pages_view[..., :512], kpe=pages_view[..., 512:],
                heads=heads, page_size=page_size, dtype=dtype, ids=ids, pages_view=pages_view)


def compact(b):
    """Batch b with its pages copied to a small cache (in their order: indices 0..n-1), for the
    reference, which would otherwise widen a whole fp8 pool."""
    small = gather(b["pages_view"], b["ids"])
    return {**b, "ckv": small[..., :512], "kpe": small[..., 512:],
            "kv_indices": torch.arange(len(b["ids"]), dtype=torch.int32, device="cuda")}


def run_check(w, b, poison):
    plan(w, b, False)
    T, H = b["q_nope"].shape[:2]
    out = poison(torch.empty(T, H, 512, dtype=b["dtype"], device="cuda"))
    lse = poison(torch.empty(T, H, dtype=torch.float32, device="cuda"))
    w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], out=out, lse=lse, **scales(b))
    check(compact(b), out, lse, False)


LENS = [1, 65, 1000, 4097]


@pytest.mark.gpu
@pytest.mark.parametrize("page_size,heads", [(1, 16), (16, 64), (64, 128)])
def test_paged_cache_past_4gib(pool16, workspace, poison, page_size, heads, planned_backend):
    """The wrapper's kernels (sm80; sm90 by TMA boxes at pages 16 / 64, by cp.async at page 1)
    over pages past 4 GiB and 2^31 elements of a bf16 pool."""
    b = far_batch(pool16, LENS, heads, page_size, torch.bfloat16, seed=page_size + heads)
    try:
        run_check(new_wrapper(workspace, backend=planned_backend), b, poison)
    finally:
        nan_pages(b["pages_view"], b["ids"])


@pytest.mark.gpu
@pytest.mark.skipif(not IS_HOPPER, reason="an fp8 cache runs on the sm90 family (Hopper) only")
@pytest.mark.parametrize("page_size,heads,tall", [(1, 16, "1"), (64, 16, "1"), (64, 128, "1"),
                                                  (1, 32, "all"), (64, 32, "all")])
def test_fp8_cache_past_4gib(pool8, workspace, poison, monkeypatch, page_size, heads, tall):
    """sm90's e4m3 instances (narrow at 16 heads, the 64-row tiles at 128, tall at 32 with
    every batch tall) over pages past 4 GiB of an fp8 pool, with scales."""
    monkeypatch.setenv("MLA_WRAPPER_SM90_TALL", tall)
    b = far_batch(pool8, LENS, heads, page_size, torch.bfloat16, seed=7 * page_size + heads)
    b.update(ckv_scale=0.37, kpe_scale=1.9)
    try:
        run_check(new_wrapper(workspace, backend="sm90"), b, poison)
    finally:
        nan_pages(b["pages_view"], b["ids"])


@pytest.mark.gpu
@pytest.mark.parametrize("heads", [16, 128])
def test_cutlass_mla_decode_past_4gib(pool16, poison, heads, planned_backend, monkeypatch):
    """sgl-kernel's cutlass_mla_decode (its plan written on the GPU) over a page table whose
    pages lie past 4 GiB."""
    import mla_wrapper
    from mla_wrapper import backends, ops

    monkeypatch.setattr(ops, "_routed_family", lambda device: backends.family(planned_backend))
    page_size = 64
    b = far_batch(pool16, LENS, heads, page_size, torch.bfloat16, seed=heads + 3)
    try:
        max_blocks = max(-(-n // page_size) for n in LENS)
        table = torch.zeros(len(LENS), max_blocks, dtype=torch.int32)
        ids = b["kv_indices"].cpu()
        for r in range(len(LENS)):
            p0, p1 = int(b["kv_indptr"][r]), int(b["kv_indptr"][r + 1])
            table[r, : p1 - p0] = ids[p0:p1]
        n = mla_wrapper.cutlass_mla_get_workspace_size(max_blocks * page_size, len(LENS),
                                                       num_kv_splits=-1)
        ws = torch.empty(max(n, 1), dtype=torch.uint8, device="cuda")
        out = mla_wrapper.cutlass_mla_decode(b["q_nope"], b["q_pe"], b["pages_view"],
                                             b["kv_len"].cuda(), table.cuda(), ws, SM_SCALE, -1)
        c = compact(b)
        from mla_wrapper.reference import mla_attention

        ref, _ = mla_attention(c["q_nope"], c["q_pe"], c["ckv"], c["kpe"], c["qo_indptr"],
                               c["kv_indptr"], c["kv_indices"], c["kv_len"], page_size, False,
                               SM_SCALE)
        err = rel_error(out, ref)
        assert err < TOL[torch.bfloat16], f"out rel error {err}"
    finally:
        nan_pages(b["pages_view"], b["ids"])


@pytest.mark.gpu
def test_sparse_fwd_past_4gib(pool16, planned_backend, monkeypatch):
    """flash_mla_sparse_fwd (sm80's and sm90's gather modes) with slot ids past 4 GiB of a flat
    bf16 pool [s_kv, 1, 576]; -1 holes too."""
    from mla_wrapper import flash_mla_sparse_fwd

    monkeypatch.setenv("MLA_WRAPPER_SM90", "1" if planned_backend == "sm90" else "0")
    rng = np.random.default_rng(11)
    s_q, topk, heads = 3, 2048, 64
    slots = torch.from_numpy(far_pages(TOKENS_16, 1152, s_q * topk, rng)).cuda()
    rows = pool16.view(TOKENS_16, 1, 576)
    fill_pages(rows, slots, seed=11)
    try:
        idx = slots.to(torch.int32).view(s_q, 1, topk).clone()
        idx[:, :, ::17] = -1
        g = torch.Generator(device="cuda").manual_seed(12)
        q = torch.randn(s_q, heads, 576, generator=g, device="cuda").to(torch.bfloat16)
        out, max_logits, lse = flash_mla_sparse_fwd(q, rows, idx, SM_SCALE)
        # the reference on the slots used, renumbered (it reads slot 0 for a hole: NaN here)
        small = torch.arange(s_q * topk, dtype=torch.int32, device="cuda").view(s_q, 1, topk)
        small = torch.where(idx < 0, idx, small)
        check_outputs(out, max_logits, lse, q, gather(rows, slots), small)
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
    fill_pages(blocks, ids, seed=13)
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
