"""FP8 (e4m3) KV cache on the sm90 (Hopper) family: bf16 / fp16 queries over a
torch.float8_e4m3fn paged cache, with FlashInfer's keyword-only run(ckv_scale=, kpe_scale=)
(real value = quantized value x scale, default 1.0).

CPU tests: backend selection (why_not / resolve), the kernel spec and warmup specs, run()'s
signature (the e4m3 library's compile test is test_sm90_backend.py::test_compile_sm90_bf16).
GPU tests (Hopper only; they skip elsewhere, except the ones checking that other GPUs refuse an
fp8 cache) compare against reference.mla_attention on the dequantized cache (it takes the
scales), with NaN-poisoned outputs, through tests/test_wrapper.py's check.
"""
from __future__ import annotations

import inspect
import math
import re

import numpy as np
import pytest
import torch

from conftest import HAS_CUDA
from mla_wrapper import backends
from mla_wrapper.reference import mla_attention, rel_error
from test_wrapper import (FP8, LSE_ABS_TOL_FP8, SM_SCALE, TOL, capture_graph,  # noqa: F401
                          check, make_batch, new_wrapper, plan, plan_run_check, scales,
                          workspace)

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
IS_HOPPER = HAS_CUDA and torch.cuda.get_device_capability()[0] == 9
# Ragged kv lengths: empty, one token, around a 64-token tile, and long ones (3001: split into
# several work items, a partial last tile).
RAGGED = [0, 1, 63, 64, 65, 200, 1000, 3001]


def hopper(fn):
    """A GPU test that needs the sm90 family (a Hopper GPU): skipped elsewhere."""
    fn = pytest.mark.skipif(not IS_HOPPER, reason="the fp8 KV cache runs on the sm90 family "
                            "(a Hopper GPU) only")(fn)
    return pytest.mark.gpu(fn)


def _dev(major, minor, smem=232448):
    return backends.DeviceInfo((major, minor), smem)


def _problem(q=torch.bfloat16, kv=FP8, heads=128, page_size=64, qo_len=1, causal=False,
             cuda_graph=False):
    return backends.Problem(heads, page_size, q, kv, qo_len, causal, cuda_graph=cuda_graph)


# ------------------------------------------------------------------------------ CPU tests
def test_why_not_fp8_kv():
    """sm90 serves bf16 / fp16 queries over an e4m3 cache on Hopper; sm80 never serves an fp8
    cache (the reason says fp8); q in fp8 too, or an e5m2 cache, is refused."""
    hopper_dev, a100 = _dev(9, 0), _dev(8, 0, 166912)
    for q in (torch.bfloat16, torch.float16):
        p = _problem(q=q)
        assert backends.why_not("sm90", p, hopper_dev) is None, q
        assert backends.why_not("sm90", p, _dev(9, 5)) is None, q
        for dev in (hopper_dev, a100, _dev(8, 9, 101376)):
            reason = backends.why_not("sm80", p, dev)
            assert reason is not None and "fp8" in reason, (q, dev, reason)
        assert "sm90 needs a Hopper (SM90) GPU" in backends.why_not("sm90", p, a100)
    for heads, page_size, qo_len in ((1, 1, 1), (16, 64, 1), (128, 1, 4), (7, 48, 3),
                                     (64, 1024, 1), (32, 16, 4)):
        for graph in (False, True):
            p = _problem(heads=heads, page_size=page_size, qo_len=qo_len, causal=qo_len > 1,
                         cuda_graph=graph)
            assert backends.why_not("sm90", p, hopper_dev) is None, (heads, page_size, qo_len)
    assert "num_heads" in backends.why_not("sm90", _problem(heads=129), hopper_dev)
    # q must be bf16 / fp16: q and kv both e4m3 is not served
    assert backends.why_not("sm90", _problem(q=FP8, kv=FP8), hopper_dev) is not None
    assert backends.why_not("sm80", _problem(q=FP8, kv=FP8), hopper_dev) is not None
    # the only fp8 cache format is e4m3
    assert backends.why_not("sm90", _problem(kv=torch.float8_e5m2), hopper_dev) is not None
    # 16-bit problems are unchanged
    p16 = _problem(kv=torch.bfloat16)
    assert backends.why_not("sm90", p16, hopper_dev) is None
    assert backends.why_not("sm80", p16, hopper_dev) is None


def test_resolve_fp8_kv(monkeypatch):
    """auto / fa3 / sm90 give sm90 on Hopper; on any other GPU (and with sm80 asked for) an fp8
    cache raises ValueError saying fp8."""
    monkeypatch.setenv(backends.SM90_ENV, "1")
    p = _problem()
    mtp = _problem(heads=32, qo_len=4, causal=True)
    hopper_dev = _dev(9, 0)
    for prob in (p, mtp, _problem(q=torch.float16)):
        assert backends.resolve("auto", prob, hopper_dev) == "sm90"
        assert backends.resolve("fa3", prob, hopper_dev) == "sm90"
        assert backends.resolve("sm90", prob, hopper_dev) == "sm90"
    for backend in ("sm80", "fa2"):
        with pytest.raises(ValueError, match="fp8"):
            backends.resolve(backend, p, hopper_dev)
    for dev in (_dev(8, 0, 166912), _dev(8, 9, 101376), _dev(10, 0), _dev(12, 0, 101376)):
        for backend in ("auto", "fa3"):
            with pytest.raises(ValueError, match="fp8"):
                backends.resolve(backend, p, dev)
        with pytest.raises(ValueError, match="Hopper"):
            backends.resolve("sm90", p, dev)
    # sm90 left out of auto: nothing else serves an fp8 cache, and the error says both why's
    monkeypatch.setenv(backends.SM90_ENV, "0")
    with pytest.raises(ValueError, match=f"(?s)(fp8.*{backends.SM90_ENV}|{backends.SM90_ENV}.*fp8)"):
        backends.resolve("auto", p, hopper_dev)
    assert backends.resolve("sm90", p, hopper_dev) == "sm90"   # explicit: still served


def test_sm90_spec_fp8_kv():
    """The bf16-q / e4m3-KV library is its own spec (params name kv_dtype e4m3); the 16-bit
    specs are unchanged."""
    from mla_wrapper.backends import sm90

    s16 = sm90.spec(torch.bfloat16, "sm_90a")
    assert s16.params == (("dtype", "bf16"),)
    assert s16.name == "sm90_bf16_sm_90a"
    s8 = sm90.spec(torch.bfloat16, "sm_90a", kv_dtype=FP8)
    assert ("kv_dtype", "e4m3") in s8.params
    assert ("dtype", "bf16") in s8.params
    assert s8.name != s16.name
    assert (s8.family, s8.arch) == ("sm90", "sm_90a")
    assert sm90.RUN_EXPORT in [e.name for e in s8.exports]
    assert sm90.spec("bf16", "9.0a", kv_dtype=FP8) == s8
    h8 = sm90.spec(torch.float16, "sm_90a", kv_dtype=FP8)
    assert ("kv_dtype", "e4m3") in h8.params and ("dtype", "fp16") in h8.params
    assert len({h8.name, s8.name, s16.name, sm90.spec(torch.float16, "sm_90a").name}) == 4
    with pytest.raises(ValueError, match="arch must be sm_90a"):
        sm90.spec(torch.bfloat16, "sm_80", kv_dtype=FP8)


def test_sm90_warmup_specs_fp8_kv():
    from mla_wrapper.backends import sm90
    from mla_wrapper.jit.registry import warmup_specs

    bf16 = sm90.spec(torch.bfloat16, "sm_90a")
    fp16 = sm90.spec(torch.float16, "sm_90a")
    fp8 = sm90.spec(torch.bfloat16, "sm_90a", kv_dtype=FP8)
    got = sm90.warmup_specs("sm_90a", ["bf16", "fp8_e4m3"])
    assert len(got) == 2 and set(got) == {bf16, fp8}, [s.name for s in got]
    assert sm90.warmup_specs("sm_90a", ["bf16", "fp16"]) == [bf16, fp16]
    assert {bf16, fp16, fp8} <= set(sm90.warmup_specs("sm_90a", ["bf16", "fp16", "fp8_e4m3"]))
    for arch in ("sm_90", "sm_80", "sm_100a", "host"):
        assert sm90.warmup_specs(arch, ["bf16", "fp8_e4m3"]) == [], arch
    # `python -m mla_wrapper warmup --arch sm_90a --dtype bf16,fp8_e4m3` builds it (the registry
    # hands every family the dtypes asked for)
    assert fp8 in warmup_specs(["sm_90a"], dtypes=["bf16", "fp8_e4m3"])
    assert fp8 not in warmup_specs(["sm_90a"], dtypes=["bf16", "fp16"], families=["sm90"])


def test_sm90_tall_rows_per_tile(monkeypatch):
    """sm90 plans decode batches of more requests than cluster pairs, or of 16 and more whose
    lengths give each of 132 CTAs at least 6 kv tiles or are not known (a CUDA-graph capacity;
    any decode batch with MLA_WRAPPER_SM90_TALL=all), over an e4m3 cache with 17-32 heads in
    32-row tiles (the tall instance, sm90/tall.cuh), everything else in 64-row ones;
    MLA_WRAPPER_SM90_TALL=0 turns the tall tiles off."""
    from mla_wrapper.backends import sm90

    big = dict(batch=67, num_ctas=132)
    monkeypatch.delenv(sm90.TALL_ENV, raising=False)   # (on by default)
    monkeypatch.delenv(sm90.NARROW_ENV, raising=False)
    assert sm90.TALL_ROWS == 32
    for kv in (FP8, "fp8_e4m3"):
        assert [sm90.rows_per_tile_for(h, kv, **big) for h in (1, 16, 17, 24, 32, 33, 64, 128)] \
            == [64, 16, 32, 32, 32, 64, 64, 64]
    # lengths not known (a CUDA-graph capacity): from 132 / 8 requests
    assert [sm90.rows_per_tile_for(32, FP8, batch=b, num_ctas=132) for b in (1, 8, 15, 16, 66)] \
        == [64, 64, 64, 32, 32]
    # ... unless the plan's lengths give each CTA at least 6 kv tiles, from 132 / 8 requests
    lens = {b: np.full(b, n, dtype=np.int32) for b, n in ((16, 4096), (15, 8192), (64, 1024))}
    assert sm90.rows_per_tile_for(32, FP8, batch=16, num_ctas=132, kv_lens=lens[16]) == 32
    assert sm90.rows_per_tile_for(32, FP8, batch=16, num_ctas=132, kv_lens=lens[16] // 4) == 64
    assert sm90.rows_per_tile_for(24, FP8, batch=64, num_ctas=132, kv_lens=lens[64]) == 32
    assert sm90.rows_per_tile_for(32, FP8, batch=64, num_ctas=132, kv_lens=lens[64] // 2) == 64
    assert sm90.rows_per_tile_for(32, FP8, batch=15, num_ctas=132, kv_lens=lens[15]) == 64
    assert sm90.rows_per_tile_for(32, FP8, batch=16, num_ctas=132, kv_lens=lens[16],
                                  decode=False) == 64
    monkeypatch.setenv(sm90.TALL_ENV, "all")   # every decode batch (cluster pairs too)
    assert [sm90.rows_per_tile_for(32, FP8, batch=b, num_ctas=132) for b in (1, 66, 67)] == \
        [32, 32, 32]
    assert sm90.rows_per_tile_for(32, FP8, batch=256, decode=False) == 64
    assert sm90.rows_per_tile_for(64, FP8, batch=1) == 64
    monkeypatch.delenv(sm90.TALL_ENV)
    assert sm90.rows_per_tile_for(32, FP8, batch=256, decode=False) == 64  # MTP: 64 rows
    assert sm90.rows_per_tile_for(32, torch.bfloat16, **big) == \
        sm90.rows_per_tile_for(32, **big) == 64
    monkeypatch.setenv(sm90.TALL_ENV, "0")
    assert sm90.rows_per_tile_for(32, FP8, **big) == 64


def test_sm90_tall_mtp_rows_per_tile(monkeypatch):
    """MTP batches over an e4m3 cache with at most 16 heads whose requests hold 17-32 rows
    (heads x the longest request's query tokens) take the tall instance's 32-row tiles under
    TP4 decode's batch rule, unless MLA_WRAPPER_SM90_TALL_MTP=0 or MLA_WRAPPER_SM90_TALL=0;
    other row counts, head counts and 16-bit caches keep 64-row tiles."""
    from mla_wrapper.backends import sm90

    monkeypatch.delenv(sm90.TALL_ENV, raising=False)
    monkeypatch.setenv(sm90.TALL_MTP_ENV, "1")
    rows = sm90.rows_per_tile_for
    big = dict(batch=67, num_ctas=132, decode=False)

    def qo(n, q, longest=None):   # qo_indptr of n requests of q tokens, the last of `longest`
        lens = np.full(n, q, dtype=np.int32)
        lens[-1] = longest or q
        return np.concatenate(([0], np.cumsum(lens))).astype(np.int32)

    assert [rows(h, FP8, qo_indptr=qo(67, q), **big) for h, q in
            ((16, 2), (8, 3), (8, 4), (12, 2), (9, 2), (8, 2), (16, 3), (4, 4), (17, 2),
             (32, 2))] == [32, 32, 32, 32, 32, 64, 64, 64, 64, 64]
    assert rows(16, FP8, qo_indptr=qo(67, 1, longest=2), **big) == 32   # the longest request
    assert rows(16, FP8, qo_indptr=qo(67, 2, longest=3), **big) == 64
    assert rows(16, torch.bfloat16, qo_indptr=qo(67, 2), **big) == 64
    lens = np.full(16, 4096, dtype=np.int32)   # TP4 decode's rule: 16 requests of long contexts
    assert rows(16, FP8, batch=16, num_ctas=132, decode=False, qo_indptr=qo(16, 2),
                kv_lens=lens) == 32
    assert rows(16, FP8, batch=16, num_ctas=132, decode=False, qo_indptr=qo(16, 2),
                kv_lens=lens // 8) == 64
    assert rows(16, FP8, batch=8, num_ctas=132, decode=False, qo_indptr=qo(8, 2)) == 64
    monkeypatch.setenv(sm90.TALL_ENV, "0")
    assert rows(16, FP8, qo_indptr=qo(67, 2), **big) == 64
    monkeypatch.delenv(sm90.TALL_ENV)
    monkeypatch.setenv(sm90.TALL_MTP_ENV, "0")
    assert rows(16, FP8, qo_indptr=qo(67, 2), **big) == 64


def test_sm90_narrow_rows_per_tile(monkeypatch):
    """sm90 plans decode batches over an e4m3 cache with 8 or 16 heads in 16-row tiles (the
    narrow instance without a wgmma path, sm90/work.cuh kNarrowPlans), unless their known
    lengths are so few tiles that the planner cuts one-tile pieces (at most num_ctas / 4 tiles
    in all, none past 1024 tokens); other head counts, MTP, 16-bit caches and
    MLA_WRAPPER_SM90_NARROW_PLANS=0 keep 64-row tiles."""
    from mla_wrapper.backends import sm90

    monkeypatch.delenv(sm90.NARROW_ENV, raising=False)   # (on by default)
    assert sm90.NARROW_ROWS == 16
    rows = sm90.rows_per_tile_for
    assert [rows(h, FP8, batch=1, num_ctas=132) for h in (1, 4, 7, 8, 12, 16, 17)] == \
        [64, 64, 64, 16, 64, 16, 64]
    lens = lambda b, n: np.full(b, n, dtype=np.int32)  # noqa: E731
    assert rows(16, FP8, batch=1, num_ctas=132, kv_lens=lens(1, 1024)) == 64   # one-tile pieces
    assert rows(16, FP8, batch=2, num_ctas=132, kv_lens=lens(2, 1024)) == 64
    assert rows(8, FP8, batch=33, num_ctas=132, kv_lens=lens(33, 64)) == 64
    assert rows(16, FP8, batch=1, num_ctas=132, kv_lens=lens(1, 1025)) == 16
    assert rows(16, FP8, batch=1, num_ctas=132, kv_lens=lens(1, 4096)) == 16
    assert rows(16, FP8, batch=3, num_ctas=132, kv_lens=lens(3, 1024)) == 16   # 48 tiles > 33
    assert rows(16, FP8, batch=1, num_ctas=132, kv_lens=lens(1, 0)) == 64
    assert rows(16, FP8, batch=64, num_ctas=132, kv_lens=lens(64, 1024)) == 16
    assert rows(16, FP8, batch=64, decode=False) == 64                         # MTP
    assert rows(16, torch.bfloat16, batch=64) == rows(16, batch=64) == 64
    monkeypatch.setenv(sm90.NARROW_ENV, "0")
    assert rows(16, FP8, batch=64) == 64


def test_planned_rows_per_tile_passes_lengths_eagerly_only():
    """PlannedKernel.rows_per_tile_for hands sm90's rule the plan's kv lengths in eager mode;
    a wrapper with a CUDA-graph capacity decides for its capacity without them, once (later
    plans keep its layout's tile size)."""
    from types import SimpleNamespace

    from mla_wrapper.backends import sm90
    from mla_wrapper.backends.planned import PlannedKernel

    def kernel(cap, layout=None):
        return SimpleNamespace(family=sm90, wrapper=SimpleNamespace(_graph_capacity=cap),
                               layout=layout, num_ctas=132)

    long16, short16 = np.full(16, 4096, dtype=np.int32), np.full(16, 1024, dtype=np.int32)
    rows = PlannedKernel.rows_per_tile_for
    assert rows(kernel(None), 16, 16, 32, FP8, long16) == 32
    assert rows(kernel(None), 16, 16, 32, FP8, short16) == 64
    assert rows(kernel(None), 16, 32, 32, FP8, long16) == 64      # MTP
    assert rows(kernel(8), 8, 8, 32, FP8, long16[:8] * 8) == 64    # graph: capacity 8, no lengths
    assert rows(kernel(16), 16, 16, 32, FP8, short16) == 32       # graph: capacity 16
    assert rows(kernel(80), 16, 16, 32, FP8, short16) == 32       # graph: capacity 80
    kept = SimpleNamespace(rows_per_tile=64)
    assert rows(kernel(80, kept), 80, 80, 32, FP8, long16) == 64  # the first plan's layout


def test_reference_dequantizes_an_fp8_cache_with_its_scales():
    """reference.mla_attention over an e4m3 cache with ckv_scale / kpe_scale equals it over the
    float32 values stored x scale (each scale on its own cache); without scales, stored x 1."""
    b = make_fp8_batch([37, 0, 130], 2, 4, 16, torch.bfloat16, seed=3, device="cpu")
    args = (b["qo_indptr"], b["kv_indptr"], b["kv_indices"], b["kv_len"], 16, True, SM_SCALE)
    o, l = mla_attention(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], *args, ckv_scale=0.37,
                         kpe_scale=1.9)
    o_ref, l_ref = mla_attention(b["q_nope"], b["q_pe"], b["ckv"].float() * 0.37,
                                 b["kpe"].float() * 1.9, *args)
    torch.testing.assert_close(o, o_ref, rtol=0, atol=0)
    torch.testing.assert_close(l, l_ref, rtol=0, atol=0)
    o1, _ = mla_attention(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], *args)
    o1_ref, _ = mla_attention(b["q_nope"], b["q_pe"], b["ckv"].float(), b["kpe"].float(), *args)
    torch.testing.assert_close(o1, o1_ref, rtol=0, atol=0)
    swapped, _ = mla_attention(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], *args, ckv_scale=1.9,
                               kpe_scale=0.37)
    assert not torch.allclose(swapped, o)


def test_run_takes_keyword_only_scales():
    """FlashInfer's names, keyword-only, default None (= 1.0)."""
    from mla_wrapper import BatchMLAPagedAttentionWrapper

    params = inspect.signature(BatchMLAPagedAttentionWrapper.run).parameters
    for name in ("ckv_scale", "kpe_scale"):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert params[name].default is None, name


def _fp8_values(shape, values, g):
    """An e4m3 tensor (CPU): 'randn': (randn x 2) rounded to e4m3 (never all zeros);
    'full': every e4m3 code but NaN drawn uniformly (subnormals up to +-448)."""
    if values == "randn":
        return (torch.randn(shape, generator=g) * 2).to(FP8)
    codes = torch.randint(0, 256, shape, generator=g, dtype=torch.int32).to(torch.uint8)
    codes[(codes & 0x7F) == 0x7F] = 0x01     # 0x7f / 0xff are e4m3's NaNs
    return codes.view(FP8)


def make_fp8_batch(kv_lens, qo_len, heads, page_size, dtype, layout="fused", seed=0,
                   ckv_scale=None, kpe_scale=None, values="randn", device="cuda"):
    """test_wrapper.make_batch's inputs (pages of every request scattered over the cache) over
    an e4m3 cache instead of its 16-bit one. layout: 'fused' (views of one [P, page_size, 576] buffer), 'separate' (two contiguous
    tensors) or 'padded' (views of a [P, page_size + 1, 640] buffer whose padding holds e4m3
    NaNs: a read outside the rows shows). Scales None: run() gets no scale (1.0)."""
    b = make_batch(kv_lens, qo_len, heads, page_size, dtype, seed=seed, device=device)
    g = torch.Generator().manual_seed(seed + 1)
    num_pages = b["ckv"].shape[0]
    cache = _fp8_values((num_pages, page_size, 576), values, g).to(device)
    if layout == "fused":
        ckv, kpe = cache[..., :512], cache[..., 512:]
    elif layout == "separate":
        ckv, kpe = cache[..., :512].contiguous(), cache[..., 512:].contiguous()
    elif layout == "padded":
        buf = torch.full((num_pages, page_size + 1, 640), 0x7F, dtype=torch.uint8,
                         device=device).view(FP8)
        buf[:, :page_size, :576] = cache
        ckv, kpe = buf[:, :page_size, :512], buf[:, :page_size, 512:576]
    else:
        raise ValueError(layout)
    b.update(ckv=ckv, kpe=kpe, ckv_scale=ckv_scale, kpe_scale=kpe_scale)
    return b


def scale_query_heads(b, factors):
    """Multiplies head h of batch b's query (latent and rope columns) by factors[h % len]."""
    heads = b["q_nope"].shape[1]
    f = torch.tensor(factors, device=b["q_nope"].device).repeat(heads)[:heads]
    f = f[None, :, None].to(b["dtype"])
    b["q_nope"].mul_(f)
    b["q_pe"].mul_(f)


# -------------------------------------------------------------------------------- GPU grid
@hopper
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("page_size", [1, 16, 32, 64, 128])
@pytest.mark.parametrize("heads", [16, 128])
def test_fp8_grid(workspace, poison, dtype, page_size, heads):
    """Ragged decode batches (kv_len 0, 1, 63-65, 200, 1000, 3001) on every page size; half the
    cases with scales 0.37 / 1.9 (ckv / kpe), half with the defaults; fused and separate
    caches alternate."""
    k = [1, 16, 32, 64, 128].index(page_size) + (heads == 128) + (dtype == "fp16")
    scaled = k % 2 == 0
    b = make_fp8_batch(RAGGED, 1, heads, page_size, DTYPES[dtype],
                       layout="fused" if (k // 2) % 2 == 0 else "separate",
                       seed=heads * 1000 + page_size * 10 + len(dtype),
                       ckv_scale=0.37 if scaled else None, kpe_scale=1.9 if scaled else None)
    plan_run_check(new_wrapper(workspace, backend="sm90"), b, False, poison)


@hopper
@pytest.mark.parametrize("heads,qo_len,page_size,dtype,layout", [
    (32, 4, 64, "bf16", "fused"), (32, 4, 16, "fp16", "separate"), (128, 2, 1, "bf16", "fused")])
def test_fp8_mtp_causal(workspace, poison, heads, qo_len, page_size, dtype, layout):
    """MTP (qo_len > 1, causal) over the ragged lengths (requests shorter than qo_len too)."""
    b = make_fp8_batch(RAGGED, qo_len, heads, page_size, DTYPES[dtype], layout=layout,
                       seed=heads + qo_len + page_size, ckv_scale=0.37, kpe_scale=1.9)
    plan_run_check(new_wrapper(workspace, backend="sm90"), b, True, poison)


@hopper
@pytest.mark.parametrize("heads,qo_len", [(1, 1), (7, 3), (100, 1)])
def test_fp8_odd_head_counts(workspace, poison, heads, qo_len):
    """Heads that are not a multiple of the 64-row tile (a tile's rows span query tokens)."""
    b = make_fp8_batch([5, 300, 0, 1999], qo_len, heads, 16, torch.bfloat16, seed=heads,
                       ckv_scale=0.37, kpe_scale=1.9)
    plan_run_check(new_wrapper(workspace, backend="sm90"), b, qo_len > 1, poison)


@hopper
@pytest.mark.parametrize("ckv_scale,kpe_scale", [
    (None, None), (0.37, None), (None, 1.9), (0.5, 0.5), (3.0, 0.125)])
def test_fp8_scales(workspace, poison, ckv_scale, kpe_scale):
    """Each scale applies to its own cache only (one given, the other default; equal; far
    apart), whether or not it is a power of two."""
    b = make_fp8_batch([700, 64, 1, 2500], 1, 16, 64, torch.bfloat16, seed=17,
                       ckv_scale=ckv_scale, kpe_scale=kpe_scale)
    plan_run_check(new_wrapper(workspace, backend="sm90"), b, False, poison)


@hopper
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_fp8_query_rows_far_apart_in_magnitude(workspace, poison, dtype):
    """An fp8 cache's GEMMs run in f16, each query row converted times its own power of two:
    heads scaled by 2^16 (bf16; fp16 2^13), 2^-12, 1 and 2^6 in every 64-row tile, the rope
    columns times kpe_scale / ckv_scale = 256 (values past f16's range without the row scales:
    bf16 rows up to ~3e5, rope products up to ~1e7), scales that keep the scores moderate."""
    b = make_fp8_batch([700, 64, 1, 2500], 1, 128, 64, DTYPES[dtype], seed=23,
                       ckv_scale=2.0 ** -14, kpe_scale=2.0 ** -6)
    big = 2.0 ** 16 if dtype == "bf16" else 2.0 ** 13
    scale_query_heads(b, [big, 2.0 ** -12, 1.0, 2.0 ** 6])
    # (the inputs do leave f16's range: the rope times the ratio always, bf16 latent rows too)
    assert float(b["q_pe"].abs().max()) * 2.0 ** 8 > 65504
    assert dtype != "bf16" or float(b["q_nope"].abs().max()) > 65504
    plan_run_check(new_wrapper(workspace, backend="sm90"), b, False, poison)


@hopper
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("factor", [2.0 ** 12, 2.0 ** -3, 2.0 ** -5])
def test_fp8_query_rows_near_the_unscaled_paths_bounds(workspace, poison, dtype, factor):
    """q_to_f16 takes a tile's rows as they are when each consumer thread's largest |value| of
    each of its rows lies in [2^-4, 2^15), else each row times a power of two: every head
    scaled by 2^12 (a thread's largest values ~2^13.5: as they are, near the top), 2^-3
    (~2^-1.5: as they are, values below 2^-17 rounded) or 2^-5 (~2^-3.5, but nearly every tile
    has a thread below 2^-4: the powers of two), the cache scaled by 1 / factor (equal scales:
    the rope times 1) to keep the scores moderate."""
    b = make_fp8_batch([700, 64, 1, 2500], 1, 128, 64, DTYPES[dtype], seed=29,
                       ckv_scale=0.37 / factor, kpe_scale=0.37 / factor)
    scale_query_heads(b, [factor])
    plan_run_check(new_wrapper(workspace, backend="sm90"), b, False, poison)


@hopper
@pytest.mark.parametrize("heads,qo_len,num_reqs,dtype", [
    (1, 1, 3, "bf16"), (2, 1, 3, "fp16"), (3, 1, 3, "bf16"), (4, 1, 2, "bf16"),
    (5, 1, 3, "fp16"), (1, 4, 2, "bf16"), (9, 1, 3, "bf16"), (8, 3, 2, "fp16"),
    (17, 1, 2, "bf16"), (32, 1, 3, "fp16"), (33, 1, 2, "bf16"), (16, 1, 300, "bf16"),
    (8, 1, 3, "bf16"), (8, 2, 3, "fp16"), (16, 1, 3, "fp16"), (16, 2, 3, "bf16"),
    (32, 1, 300, "fp16")])
def test_fp8_few_query_rows(workspace, poison, heads, qo_len, num_reqs, dtype):
    """Tiles of 1-33 valid rows (q_to_f16 converts only the valid rows; row maxima meet across
    the two consumer warpgroups), query rows 2^-10 to 2^12 apart (fp16: 2^9) and rope columns
    times kpe / ckv = 3, so that a row scaled by another row's power of two would show (the
    largest rows' scores have a standard deviation of ~4: not one-hot); 300 requests: CTAs of
    several items (the early-Q instance at 32 heads, the narrow one at 16). 8 and 16 heads run
    the narrow instance (mma.sync over rows 0-15 for items of >= 2 tiles, reading the e4m3 bytes
    as they land, each row's scale read back from the other rows' threads): 8 or 16 valid rows
    on it, causal MTP rows of 8 heads x 2 tokens on it, and 16 x 2 (32 rows) on its wgmma
    path."""
    lens = ([1, 700, 64, 2500] * 75)[:num_reqs]
    b = make_fp8_batch(lens, qo_len, heads, 64, DTYPES[dtype], seed=heads * 10 + qo_len,
                       ckv_scale=2.0 ** -12, kpe_scale=3 * 2.0 ** -12)
    big = 2.0 ** 12 if dtype == "bf16" else 2.0 ** 9
    scale_query_heads(b, [big, 2.0 ** -10, 1.0, 2.0 ** 5])
    plan_run_check(new_wrapper(workspace, backend="sm90"), b, qo_len > 1, poison)


@hopper
@pytest.mark.parametrize("heads,page_size,lens,dtype", [
    (32, 64, RAGGED * 9, "bf16"), (32, 1, RAGGED * 9, "fp16"), (24, 64, RAGGED * 9, "bf16"),
    (17, 32, RAGGED * 9, "fp16"), (32, 64, [1024] * 67, "bf16"),
    (32, 64, [700, 64, 2500, 1] * 75, "bf16"), (32, 128, [30000] + [5] * 70, "fp16"),
    (32, 64, [4096] * 64, "bf16"), (24, 16, [30000], "fp16"),
    (32, 1, [4096] * 3, "bf16")])
def test_fp8_tall_instance(workspace, poison, monkeypatch, heads, page_size, lens, dtype):
    """Decode batches over an e4m3 cache with 17-32 heads (MLA_WRAPPER_SM90_TALL=all: at every
    batch size) run in 32-row tiles on the tall instance (both GEMMs transposed, sm90/tall.cuh): ragged lengths, 67 equal requests (no
    cluster pair), CTAs of several items, a long request split into pieces (partial slots of 32
    rows, merged by the combine), batches of at most half the CTAs' requests cut into cluster
    pairs merged on chip (64 requests: pairs writing out; one or three requests: pairs of their
    pieces writing partial slots), Q by cp.async (24 and 17 heads: no Q maps; rows past the valid ones
    masked), query rows far apart in magnitude. The same
    wrapper then plans MTP rows of those requests (64-row tiles: another layout), the decode
    batch again (the tall layout kept), and the decode batch with MLA_WRAPPER_SM90_TALL=0
    (64-row plans)."""
    from mla_wrapper import planner
    from mla_wrapper.backends import sm90

    monkeypatch.setenv(sm90.TALL_ENV, "all")   # (every batch size: cluster pairs too)
    kw = dict(seed=heads * 100 + page_size + len(lens), ckv_scale=2.0 ** -12,
              kpe_scale=3 * 2.0 ** -12)
    b = make_fp8_batch(lens, 1, heads, page_size, DTYPES[dtype], **kw)
    mtp = make_fp8_batch(lens, 2, heads, page_size, DTYPES[dtype], **kw)
    big = 2.0 ** 12 if dtype == "bf16" else 2.0 ** 9
    for x in (b, mtp):
        scale_query_heads(x, [big, 2.0 ** -10, 1.0, 2.0 ** 5])
    w = new_wrapper(workspace, backend="sm90")
    plan_run_check(w, b, False, poison)
    assert w._impl.layout.rows_per_tile == sm90.TALL_ROWS
    tall_layout = w._impl.layout
    d, _, _ = planner.plan_arrays(b["qo_indptr"].numpy(), b["kv_indptr"].numpy(),
                                  b["kv_len"].numpy(), heads, page_size, False, tall_layout,
                                  w._impl._planner_cost())
    pairs = d.work_info[:, 4] <= -2   # cluster pairs' halves (plan.h mlaw_pair_slot)
    if tall_layout.num_ctas == 132 and len(lens) in (1, 3, 64):   # (these plans on 132 SMs)
        assert np.all(pairs)   # (merged on chip: tall_pair_exchange)
        assert np.all(d.work_info[:, 4] < -3) == (len(lens) < 64)   # writing partial slots
    if lens[0] == 30000:
        assert w._impl.last_plan.num_merge_items > 0   # pieces merged by the combine
    plan_run_check(w, mtp, True, poison)
    assert w._impl.layout.rows_per_tile == sm90.ROWS_PER_TILE
    plan_run_check(w, b, False, poison)
    assert w._impl.layout is tall_layout
    monkeypatch.setenv(sm90.TALL_ENV, "0")
    plan_run_check(w, b, False, poison)
    assert w._impl.layout.rows_per_tile == sm90.ROWS_PER_TILE


@hopper
@pytest.mark.parametrize("heads,qo_len,page_size,lens,dtype", [
    (16, 2, 64, RAGGED * 9, "bf16"), (16, 2, 1, RAGGED * 9, "fp16"), (8, 4, 64, RAGGED * 9, "bf16"),
    (8, 3, 16, RAGGED * 9, "fp16"), (16, 2, 64, [4096] * 64, "bf16"),
    (16, 2, 128, [30000] + [5] * 70, "fp16"), (16, 2, 64, [4096] * 3, "bf16"),
    (12, 2, 32, [700, 64, 2500, 1] * 75, "bf16"), (16, 2, 64, [1, 2, 3] * 40, "fp16")])
def test_fp8_tall_mtp(workspace, poison, monkeypatch, heads, qo_len, page_size, lens, dtype):
    """Causal MTP rows over an e4m3 cache with at most 16 heads whose requests' rows fill more
    than 16 and at most 32 rows (16 x 2, 12 x 2, 8 x 3-4) run on the tall instance, each
    request's rows one 32-row item with per-row causal limits (MLA_WRAPPER_SM90_TALL_MTP=1,
    MLA_WRAPPER_SM90_TALL=all: at every batch size): ragged lengths (requests shorter than
    their query tokens too), pages of 1-128 tokens, cluster pairs (64 and 3 requests), a long
    request split into pieces merged by the combine, query heads far apart in magnitude; then
    the decode batch of the same requests on the wrapper (16-row plans at 8 and 16 heads)."""
    from mla_wrapper.backends import sm90

    monkeypatch.setenv(sm90.TALL_ENV, "all")
    monkeypatch.setenv(sm90.TALL_MTP_ENV, "1")
    kw = dict(seed=heads * 100 + qo_len * 10 + page_size + len(lens), ckv_scale=2.0 ** -12,
              kpe_scale=3 * 2.0 ** -12)
    mtp = make_fp8_batch(lens, qo_len, heads, page_size, DTYPES[dtype], **kw)
    # (large query heads against a small cache scale, as test_fp8_tall_instance: the scores,
    # and so the lse, stay where its absolute tolerance applies)
    scale_query_heads(mtp, [2.0 ** 12 if dtype == "bf16" else 2.0 ** 9, 2.0 ** -10, 1.0, 2.0 ** 5])
    w = new_wrapper(workspace, backend="sm90")
    plan_run_check(w, mtp, True, poison)
    assert w._impl.layout.rows_per_tile == sm90.TALL_ROWS
    if lens[0] == 30000:
        assert w._impl.last_plan.num_merge_items > 0   # pieces merged by the combine
    b = make_fp8_batch(lens, 1, heads, page_size, DTYPES[dtype], **kw)
    plan_run_check(w, b, False, poison)
    assert w._impl.layout.rows_per_tile == (sm90.NARROW_ROWS if heads in (8, 16)
                                            else sm90.ROWS_PER_TILE)


@hopper
@pytest.mark.parametrize("heads,dtype,factor", [
    (32, "bf16", 1.0), (32, "fp16", 1.0), (24, "fp16", 2.0 ** -3), (17, "bf16", 2.0 ** 12)])
def test_fp8_tall_query_rows_as_they_are(workspace, poison, monkeypatch, heads, dtype, factor):
    """The tall instance's Q conversion on its fast path (q_to_f16: every row's values as they
    are, an f16 query's latent columns too, since the tall instance permutes each row's columns
    within each 16 for its register-widened score GEMM, sm90/tall.cuh issue_scores_t): heads
    times 1, 2^-3 (values below 2^-17 rounded) or 2^12 (near the path's top), the cache scaled
    by 1 / factor."""
    from mla_wrapper.backends import sm90

    monkeypatch.setenv(sm90.TALL_ENV, "all")
    b = make_fp8_batch([700, 64, 1, 2500], 1, heads, 64, DTYPES[dtype], seed=heads + 31,
                       ckv_scale=0.37 / factor, kpe_scale=0.37 / factor)
    scale_query_heads(b, [factor])
    w = new_wrapper(workspace, backend="sm90")
    plan_run_check(w, b, False, poison)
    assert w._impl.layout.rows_per_tile == sm90.TALL_ROWS


@hopper
@pytest.mark.parametrize("heads,qo_len,dtype,scaled,plans", [
    (16, 1, "bf16", False, ""), (16, 1, "fp16", True, ""), (8, 1, "fp16", False, ""),
    (16, 1, "bf16", True, "0"), (8, 1, "fp16", False, "0"), (8, 2, "bf16", True, ""),
    (16, 2, "bf16", True, "")])
def test_fp8_narrow_instance(workspace, poison, monkeypatch, heads, qo_len, dtype, scaled,
                             plans):
    """8 and 16 heads run the e4m3 kernel's narrow instances, whose items run on mma.sync over
    rows 0-15, reading the e4m3 bytes as they land (long requests: items of many tiles, their
    last ones by cp.async). Decode: 16-row plans on the instance without a wgmma path (every
    item narrow: one-tile items and empty requests too); with MLA_WRAPPER_SM90_NARROW_PLANS=0
    64-row plans, whose one-tile items take its wgmma path over widened tiles. MTP (64-row
    plans): causal rows (8 x 2) on the narrow path, 32-row tiles (16 x 2) on the wgmma path.
    With `scaled`, query rows 2^-10 to 2^12 apart (fp16: 2^9), so that each row needs its own
    power of two, which the narrow path reads back for rows 0-15."""
    from mla_wrapper.backends import sm90

    monkeypatch.setenv(sm90.NARROW_ENV, plans)   # ("": the default)
    b = make_fp8_batch([9000, 4500, 600, 0, 1], qo_len, heads, 64, DTYPES[dtype],
                       seed=heads * 7 + qo_len, ckv_scale=2.0 ** -12 if scaled else 0.37,
                       kpe_scale=3 * 2.0 ** -12 if scaled else 1.9)
    if scaled:
        big = 2.0 ** 12 if dtype == "bf16" else 2.0 ** 9
        scale_query_heads(b, [big, 2.0 ** -10, 1.0, 2.0 ** 5])
    w = new_wrapper(workspace, backend="sm90")
    plan_run_check(w, b, qo_len > 1, poison)
    narrow_plans = qo_len == 1 and plans == ""
    assert w._impl.layout.rows_per_tile == (sm90.NARROW_ROWS if narrow_plans else
                                            sm90.ROWS_PER_TILE)


def replay_fp8_replans(workspace, heads, cap, batches, seed, after_replay):
    """A use_cuda_graph=True sm90 wrapper of capacity `cap` over one e4m3 cache (page 64, scales
    0.37 / 1.9): each batch of `batches` ((kv lengths, qo_len), non-causal) planned, its query
    and cache copied into the captured buffers, run() captured once (at the first), replayed into
    NaN-poisoned out / lse and checked against the reference; then after_replay(wrapper, batch)."""
    dev, ps = "cuda", 64
    max_pages = max(sum((L + ps - 1) // ps for L in lens) for lens, _ in batches) + 3
    bufs = dict(qo_indptr=torch.zeros(cap + 1, dtype=torch.int32, device=dev),
                kv_indptr=torch.zeros(cap + 1, dtype=torch.int32, device=dev),
                kv_indices=torch.zeros(max_pages, dtype=torch.int32, device=dev),
                kv_len_arr=torch.zeros(cap, dtype=torch.int32, device=dev))
    w = new_wrapper(workspace, use_cuda_graph=True, backend="sm90", **bufs)
    q = torch.empty(cap, heads, 576, dtype=torch.bfloat16, device=dev)
    cache = torch.zeros(max_pages, ps, 576, dtype=FP8, device=dev)
    out = torch.empty(cap, heads, 512, dtype=torch.bfloat16, device=dev)
    lse = torch.empty(cap, heads, dtype=torch.float32, device=dev)
    ckv, kpe = cache[..., :512], cache[..., 512:]
    kw = dict(ckv_scale=0.37, kpe_scale=1.9)
    graph = None
    for i, (lens, qo_len) in enumerate(batches):
        b = make_fp8_batch(lens, qo_len, heads, ps, torch.bfloat16, seed=seed + i + heads, **kw)
        plan(w, b, False)
        q[..., :512].copy_(b["q_nope"])
        q[..., 512:].copy_(b["q_pe"])
        n = b["ckv"].shape[0]
        ckv[:n].copy_(b["ckv"])
        kpe[:n].copy_(b["kpe"])
        if graph is None:
            graph, _ = capture_graph(lambda: w.run(q[..., :512], q[..., 512:], ckv, kpe,
                                                   out=out, lse=lse, **kw))
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        check(dict(b, q_nope=q[..., :512], q_pe=q[..., 512:], ckv=ckv, kpe=kpe), out, lse,
              False)
        after_replay(w, b)


@hopper
@pytest.mark.parametrize("heads", [8, 16])
def test_fp8_narrow_plans_take_mtp_rows_in_a_cuda_graph(workspace, heads):
    """A use_cuda_graph=True wrapper first planned for decode keeps its 16-row plans (the
    captured launch is the narrow instance without a wgmma path): re-planned for the same query
    tokens as MTP rows (2 + 2, 1 + 3, 4 tokens a request; non-causal: the graph's), each
    request's rows go in items of at most 16 rows, all narrow; replayed into NaN-poisoned out /
    lse and checked."""
    from mla_wrapper.backends import sm90

    batches = [([3000, 700, 1, 2500], 1), ([5000, 64], [2, 2]), ([65, 4000], [1, 3]),
               ([2049], [4]), ([1, 9000, 0, 300], 1)]

    def after_replay(w, b):
        assert b["q_nope"].shape[0] == 4
        assert w._impl.layout.rows_per_tile == sm90.NARROW_ROWS

    replay_fp8_replans(workspace, heads, 4, batches, 300, after_replay)


@hopper
@pytest.mark.parametrize("heads,first_qo", [(16, 2), (8, 4)])
def test_fp8_tall_mtp_plans_in_a_cuda_graph(workspace, heads, first_qo):
    """A use_cuda_graph=True wrapper of 16 requests first planned for MTP rows of 32 rows a
    request (16 x 2, 8 x 4) takes the tall instance's 32-row plans (lengths not known at a
    capacity of num_ctas / 8) and keeps them: re-planned for decode (16 or 8 rows an item), and
    for requests of 2-4 query tokens (items of at most 32 rows: a request of 64 or 48 rows in two),
    each replayed into NaN-poisoned out / lse and checked."""
    from mla_wrapper.backends import sm90

    n = 16 // first_qo
    batches = [(([3000, 700, 1, 2500, 64, 65, 4000, 9] * 2)[:n], first_qo),
               ([1, 9000, 0, 300, 65, 2049, 700, 64, 5, 1000, 3, 640, 129, 4096, 2, 77], 1),
               ([5000, 300, 2049, 1, 7], [4, 3, 4, 2, 3])]

    def after_replay(w, b):
        assert w._impl.layout.rows_per_tile == sm90.TALL_ROWS

    replay_fp8_replans(workspace, heads, 16, batches, 400, after_replay)


@hopper
@pytest.mark.parametrize("heads,dtype,factor,kpe_ratio", [
    (16, "bf16", 2.0 ** 12, 1.0), (16, "fp16", 2.0 ** 12, 1.0), (16, "bf16", 2.0 ** -3, 1.0),
    (8, "fp16", 2.0 ** -3, 1.0), (16, "bf16", 2.0 ** -5, 1.0), (16, "fp16", 2.0 ** -5, 1.0),
    (16, "bf16", 1.0, 2.0 ** 14), (8, "bf16", 1.0, 2.0 ** 20)])
def test_fp8_narrow_query_rows_near_the_unscaled_paths_bounds(workspace, poison, heads, dtype,
                                                             factor, kpe_ratio):
    """The narrow instance's items (<= 16 heads, >= 2 kv tiles) near q_to_f16's fast-path bounds
    (each consumer thread's largest |value| of each of its rows, the rope's times kpe_scale /
    ckv_scale, in [2^-4, 2^15): rows as they are; else each row times a power of two, which
    the narrow path reads back for rows 0-15): every head times 2^12 (as they are, near the
    top), 2^-3 (as they are, values below 2^-17 rounded), 2^-5 (nearly every item has a thread
    below 2^-4: the powers of two); or the rope columns times kpe / ckv = 2^14 / 2^20 (past
    f16's range: the powers of two; the latent's scores then small, and the outputs, which
    ckv_scale scales, too small for fp16: bf16 queries only). Items of many tiles, one tile
    (the wgmma path) and none."""
    b = make_fp8_batch([9000, 4500, 600, 0, 1], 1, heads, 64, DTYPES[dtype],
                       seed=heads + int(math.log2(factor * kpe_ratio)) + 40,
                       ckv_scale=0.37 / factor / kpe_ratio, kpe_scale=0.37 / factor)
    scale_query_heads(b, [factor])
    plan_run_check(new_wrapper(workspace, backend="sm90"), b, False, poison)


@hopper
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_fp8_every_code(workspace, poison, dtype):
    """Every e4m3 code but NaN (subnormals, +-0, up to +-448) in the cache, scaled down so that
    the scores stay in a softmax's useful range: the widening to 16 bits is exact for each."""
    b = make_fp8_batch([1000, 333, 2048], 1, 64, 64, DTYPES[dtype], values="full", seed=5)
    rms = float(torch.cat([b["ckv"].float().flatten(), b["kpe"].float().flatten()])
                .pow(2).mean().sqrt())
    scale = 2.0 / (rms * math.sqrt(576) * SM_SCALE)     # score std ~2
    b["ckv_scale"], b["kpe_scale"] = scale, 2 * scale
    plan_run_check(new_wrapper(workspace, backend="sm90"), b, False, poison)


@hopper
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("page_size", [64, 1])
def test_fp8_nan_codes_propagate(workspace, poison, dtype, page_size):
    """An e4m3 NaN code (0x7f / 0xff) reads as NaN, so a corrupted cache shows in the output
    (a bit-move widening would read it as +-480: logs/sm90_s42_2026-11-28 fast_widen.patch).
    Request 0 holds one in the latent (a column both scores and values read), request 1 one in
    the rope columns: every output value of those requests is NaN (their lse came out finite
    on an H200, runs 3-4 there, and reference.py's rows are zeros: neither is pinned here);
    request 2's rows match the reference."""
    b = make_fp8_batch([700, 300, 900], 1, 16, page_size, DTYPES[dtype], seed=31,
                       ckv_scale=0.37, kpe_scale=1.9)
    indptr = b["kv_indptr"].tolist()
    pages = b["kv_indices"].cpu()

    def put_nan(cache, req, token, col, code):
        page = int(pages[indptr[req] + token // page_size])
        cache.view(torch.uint8)[page, token % page_size, col] = code

    put_nan(b["ckv"], 0, 5, 100, 0x7F)
    put_nan(b["kpe"], 1, 250, 40, 0xFF)
    w = new_wrapper(workspace, backend="sm90")
    plan(w, b, False)
    H = b["heads"]
    out = poison(torch.empty(3, H, 512, dtype=b["dtype"], device="cuda"))
    lse = poison(torch.empty(3, H, dtype=torch.float32, device="cuda"))
    w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], out=out, lse=lse, **scales(b))
    assert torch.isnan(out[:2]).all()
    ref_o, ref_lse = mla_attention(
        b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], b["qo_indptr"], b["kv_indptr"],
        b["kv_indices"], b["kv_len"], page_size, False, SM_SCALE, **scales(b))
    assert not torch.isnan(out[2]).any() and not torch.isnan(lse[2]).any()
    assert rel_error(out[2], ref_o[2]) < TOL[b["dtype"]]
    assert (lse[2].double() - ref_lse[2].to(lse.device).double()).abs().max() < LSE_ABS_TOL_FP8


@hopper
@pytest.mark.parametrize("layout,page_size", [("fused", 64), ("separate", 64), ("padded", 64),
                                              ("padded", 16), ("padded", 1)])
def test_fp8_cache_layouts(workspace, poison, layout, page_size):
    """ckv / kpe as views of one [P, page, 576] e4m3 buffer, as separate tensors, and as views of
    a padded [P, page + 1, 640] buffer (token and page strides past the rows, multiples of 16
    bytes; NaN padding shows a read outside them)."""
    b = make_fp8_batch([3001, 65, 0, 64, 1], 1, 128, page_size, torch.bfloat16, layout=layout,
                       seed=page_size + len(layout), ckv_scale=0.37, kpe_scale=1.9)
    plan_run_check(new_wrapper(workspace, backend="sm90"), b, False, poison)


@hopper
@pytest.mark.parametrize("backend", ["auto", "fa3"])
def test_fp8_auto_and_fa3_pick_sm90(workspace, poison, monkeypatch, backend):
    monkeypatch.setenv(backends.SM90_ENV, "1")
    b = make_fp8_batch([300, 77, 1500], 1, 16, 64, torch.float16, seed=9, ckv_scale=0.37,
                       kpe_scale=1.9)
    w = new_wrapper(workspace, backend=backend)
    plan_run_check(w, b, False, poison)
    assert w._impl.name == "sm90"


@hopper
def test_fp8_and_16bit_plans_on_one_wrapper(workspace, poison):
    """One wrapper re-planned 16-bit -> e4m3 -> 16-bit -> e4m3 (fp16 q) runs the library each
    plan asks for."""
    w = new_wrapper(workspace, backend="sm90")
    b16 = make_batch([700, 0, 2000], 1, 16, 64, torch.bfloat16, seed=21)
    b8 = make_fp8_batch([700, 0, 2000], 1, 16, 64, torch.bfloat16, seed=22, ckv_scale=0.37,
                        kpe_scale=1.9)
    h8 = make_fp8_batch([50, 3000], 1, 16, 64, torch.float16, seed=23, ckv_scale=1.9,
                        kpe_scale=0.37)
    plan_run_check(w, b16, False, poison)
    plan_run_check(w, b8, False, poison)
    plan_run_check(w, b16, False, poison)
    plan_run_check(w, h8, False, poison)


@hopper
@pytest.mark.parametrize("heads,cap,tall_env", [(16, 4, ""), (32, 4, ""), (128, 4, ""),
                                                (32, 16, ""), (32, 80, ""), (32, 8, "all")])
def test_fp8_cuda_graph_replans(workspace, monkeypatch, heads, cap, tall_env):
    """A use_cuda_graph=True wrapper: run() over an e4m3 cache with scales captured once, then
    re-planned at the same batch size with other lengths (split and not, empty requests) and
    new cache / query values, replayed into NaN-poisoned out / lse and checked. 32 heads: the
    tall instance's 32-row plans with a capacity of 16 or 80 (kept by every re-plan, short
    batches too) and, with MLA_WRAPPER_SM90_TALL=all, of 8 (cluster pairs); 16 heads: the
    narrow plans (16-row tiles) whatever the lengths."""
    from mla_wrapper.backends import sm90

    monkeypatch.setenv(sm90.TALL_ENV, tall_env)   # ("": the default)
    batches = [[700, 5, 3000, 0], [30, 4097, 1, 64], [2000] * 4, [0, 0, 1, 0], [65, 63, 1, 9000]]

    def after_replay(w, b):
        rows = sm90.rows_per_tile_for(heads, FP8, batch=cap, num_ctas=w._impl.layout.num_ctas)
        tall = heads == 32 and (cap >= 16 or tall_env == "all")
        assert rows == (sm90.TALL_ROWS if tall else sm90.NARROW_ROWS if heads == 16 else
                        sm90.ROWS_PER_TILE)
        assert w._impl.layout.rows_per_tile == rows

    replay_fp8_replans(workspace, heads, cap, [(lens * (cap // 4), 1) for lens in batches], 100,
                       after_replay)


# ------------------------------------------------------------------------------ GPU errors
@hopper
def test_fp8_run_errors(workspace, poison):
    """Scales that are not finite numbers > 0, caches / out of the wrong dtype: ValueError
    naming the argument, and the wrapper still runs afterwards."""
    b = make_fp8_batch([10, 300], 1, 16, 16, torch.bfloat16, seed=31, ckv_scale=0.37,
                       kpe_scale=1.9)
    w = new_wrapper(workspace, backend="sm90")
    plan(w, b, False)
    args = (b["q_nope"], b["q_pe"], b["ckv"], b["kpe"])
    for bad in (0.0, -1.0, float("nan"), float("inf"), -0.0):
        for name in ("ckv_scale", "kpe_scale"):
            with pytest.raises(ValueError, match=name):
                w.run(*args, **{name: bad})
    ckv16 = torch.zeros(b["ckv"].shape, dtype=torch.bfloat16, device="cuda")
    kpe16 = torch.zeros(b["kpe"].shape, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(ValueError, match="ckv_cache"):
        w.run(b["q_nope"], b["q_pe"], ckv16, kpe16)
    with pytest.raises(ValueError, match="ckv_cache"):
        w.run(b["q_nope"], b["q_pe"], ckv16, b["kpe"])
    with pytest.raises(ValueError, match="kpe_cache"):
        w.run(b["q_nope"], b["q_pe"], b["ckv"], kpe16)
    with pytest.raises(ValueError, match="q_nope"):   # q stays bf16 / fp16
        w.run(b["q_nope"].to(FP8), b["q_pe"], b["ckv"], b["kpe"])
    T = b["q_nope"].shape[0]
    with pytest.raises(ValueError, match="out"):      # out has q's dtype
        w.run(*args, out=torch.empty(T, 16, 512, dtype=FP8, device="cuda"))
    plan_run_check(w, b, False, poison)


@hopper
def test_fp8_q_is_refused_at_plan(workspace):
    b = make_fp8_batch([10], 1, 16, 16, torch.bfloat16, seed=32)
    w = new_wrapper(workspace, backend="sm90")
    with pytest.raises(ValueError):
        w.plan(b["qo_indptr"], b["kv_indptr"], b["kv_indices"], b["kv_len"], 16, 512, 64, 16,
               False, SM_SCALE, FP8, FP8)


@hopper
def test_fp8_cache_strides_must_be_16_byte_multiples(workspace, poison):
    """An e4m3 cache whose token stride (584 bytes) is a multiple of 8 elements, as 16-bit
    caches need, but not of 16 bytes: refused by name before any launch, and the wrapper runs
    a valid cache afterwards."""
    b = make_fp8_batch([300, 64], 1, 16, 16, torch.bfloat16, seed=33, ckv_scale=0.37,
                       kpe_scale=1.9)
    P = b["ckv"].shape[0]
    buf = torch.zeros(P, 16, 584, dtype=torch.uint8, device="cuda").view(FP8)
    buf[..., :512] = b["ckv"]
    buf[..., 512:576] = b["kpe"]
    w = new_wrapper(workspace, backend="sm90")
    plan(w, b, False)
    with pytest.raises((ValueError, RuntimeError), match="stride"):
        w.run(b["q_nope"], b["q_pe"], buf[..., :512], buf[..., 512:576], **scales(b))
    torch.cuda.synchronize()
    plan_run_check(w, b, False, poison)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["sm80", "fa2"])
def test_sm80_refuses_fp8_kv(workspace, backend):
    b = make_fp8_batch([10], 1, 16, 16, torch.bfloat16, seed=34)
    with pytest.raises(ValueError, match="fp8"):
        plan(new_wrapper(workspace, backend=backend), b, False)


@pytest.mark.gpu
def test_fp8_kv_needs_hopper(workspace):
    """auto / fa3 on a GPU other than Hopper: no backend serves an fp8 cache."""
    if IS_HOPPER:
        pytest.skip("Hopper serves an fp8 cache (the other tests)")
    b = make_fp8_batch([10], 1, 16, 16, torch.bfloat16, seed=35)
    for backend in ("auto", "fa3"):
        with pytest.raises(ValueError, match="fp8"):
            plan(new_wrapper(workspace, backend=backend), b, False)


@pytest.mark.gpu
def test_scales_need_an_fp8_cache(workspace, planned_backend):
    """ckv_scale / kpe_scale with a 16-bit cache: ValueError naming the argument (even 1.0)."""
    b = make_batch([10, 300], 1, 16, 16, torch.bfloat16, seed=36)
    w = new_wrapper(workspace, backend=planned_backend)
    w.plan(b["qo_indptr"], b["kv_indptr"], b["kv_indices"], b["kv_len"], 16, 512, 64, 16, False,
           SM_SCALE, torch.bfloat16, torch.bfloat16)
    args = (b["q_nope"], b["q_pe"], b["ckv"], b["kpe"])
    for name, value in (("ckv_scale", 0.5), ("kpe_scale", 2.0), ("ckv_scale", 1.0)):
        with pytest.raises(ValueError, match=name):
            w.run(*args, **{name: value})
