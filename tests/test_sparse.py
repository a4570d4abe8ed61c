"""Sparse (top-k) MLA: flash_mla_sparse_fwd and BatchSparseMLAWrapper (vLLM's cache-gather ops,
built with the sparse family: test_cache_ops.py).

CPU: the sparse reference against float64 math, argument errors, template rendering, the
ctypes mirrors, a compile of the kernels for sm_90a (marked `compile`). GPU (marked `gpu`):
the kernels against reference.sparse_mla_attention over random indices with duplicates, -1
holes, all -1 rows, topk_length, topk not a multiple of 64, heads 16/64/128, bf16/fp16,
NaN-poisoned outputs, split-KV, CUDA-graph capture + replay with new indices.
"""
from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch

from mla_wrapper import sparse_specs
from mla_wrapper.reference import rel_error, sparse_mla_attention

from test_wrapper import capture_graph

SM_SCALE = 1.0 / math.sqrt(192)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3}


def make_case(s_q, heads, topk, num_slots, dtype, seed=0, holes=0.1, dup=True, empty_rows=(),
              device="cuda"):
    """Random q, a flat [num_slots, 576] cache and indices [s_q, 1, topk] with -1 holes,
    duplicated ids and rows of all -1."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(s_q, heads, 576, generator=g).to(dtype)
    kv = (torch.randn(num_slots, 1, 576, generator=g) * 0.5).to(dtype)
    idx = torch.randint(0, num_slots, (s_q, topk), generator=g, dtype=torch.int32)
    if dup and topk > 1:   # every row repeats its first id somewhere
        idx[:, -1] = idx[:, 0]
    idx[torch.rand(s_q, topk, generator=g) < holes] = -1
    for r in empty_rows:
        idx[r] = -1
    return q.to(device), kv.to(device), idx[:, None, :].to(device)


def ref(q, kv, indices, topk_length=None, attn_sink=None, **scales):
    return sparse_mla_attention(q[..., :512], q[..., 512:], kv[:, 0, :512], kv[:, 0, 512:],
                                indices, SM_SCALE, topk_length=topk_length, attn_sink=attn_sink,
                                **scales)


def check_outputs(out, max_logits, lse, q, kv, indices, topk_length=None, attn_sink=None):
    ref_o, ref_m, ref_lse = ref(q, kv, indices, topk_length, attn_sink)
    err = rel_error(out, ref_o)
    assert err < TOL[out.dtype], f"out rel error {err}"
    assert rel_error(lse, ref_lse) < 1e-4, "lse"
    if max_logits is not None:
        assert rel_error(max_logits, ref_m) < 1e-4, "max_logits"


def check_lse_rows(lse, ref_lse):
    """lse against the reference where a row has a valid slot (within 2e-3), +inf where none."""
    finite = torch.isfinite(ref_lse)
    assert rel_error(lse[finite], ref_lse[finite]) < 2e-3, "lse"
    assert torch.isposinf(lse[~finite]).all(), "lse of a row without a valid slot"


# ------------------------------------------------------------------------------- CPU tests
def _slow_sparse(q, kv, idx, sm_scale, lens=None, sink=None):
    """float64 loops: the definition, written independently of the reference."""
    T, H, _ = q.shape
    out = torch.zeros(T, H, 512, dtype=torch.float64)
    mx = torch.full((T, H), -math.inf, dtype=torch.float64)
    lse = torch.full((T, H), math.inf, dtype=torch.float64)
    for t in range(T):
        ids = [int(i) for i in idx[t].reshape(-1)]
        if lens is not None:
            ids = ids[:int(lens[t])]
        ids = [i for i in ids if 0 <= i < kv.shape[0]]
        if not ids:
            continue
        k = kv[ids, 0].double()                              # [n, 576] (duplicates kept)
        for h in range(H):
            s = (k @ q[t, h].double()) * sm_scale
            m = float(s.max())
            total = float(torch.exp(s - m).sum())
            denom = total + (math.exp(float(sink[h]) - m) if sink is not None else 0.0)
            out[t, h] = (torch.exp(s - m)[:, None] * k[:, :512]).sum(0) / denom
            mx[t, h] = m
            lse[t, h] = m + math.log(total)
    return out, mx, lse


@pytest.mark.parametrize("use_lens,use_sink", [(False, False), (True, False), (True, True)])
def test_reference_against_float64(use_lens, use_sink):
    q, kv, idx = make_case(5, 3, 19, 40, torch.float32, seed=1, holes=0.2, empty_rows=(2,),
                           device="cpu")
    lens = torch.tensor([19, 0, 7, 1, 12], dtype=torch.int32) if use_lens else None
    sink = torch.randn(3) if use_sink else None
    got = ref(q, kv, idx, lens, sink)
    want = _slow_sparse(q, kv, idx, SM_SCALE, lens, sink)
    for g, w in zip(got, want):
        assert torch.equal(torch.isinf(g), torch.isinf(w.float()))
        assert torch.allclose(g.double()[torch.isfinite(w)], w[torch.isfinite(w)], atol=1e-5,
                              rtol=1e-5)
    assert torch.isinf(got[2][2]).all() and (got[2][2] > 0).all()   # empty row: lse = +inf
    assert torch.isneginf(got[1][2]).all() and (got[0][2] == 0).all()


def test_reference_dequantizes_an_fp8_cache_with_its_scales():
    q, kv, idx = make_case(3, 4, 40, 90, torch.bfloat16, device="cpu")
    q8 = quantize_cache(kv, 0.05, 0.4)
    deq = torch.cat([q8[..., :512].float() * 0.05, q8[..., 512:].float() * 0.4], -1)
    got = ref(q, q8, idx, ckv_scale=0.05, kpe_scale=0.4)
    want = ref(q, deq, idx)
    for g, w in zip(got, want):
        assert torch.allclose(g, w, rtol=1e-6, atol=1e-6)
    assert not torch.allclose(ref(q, q8, idx)[0], want[0], rtol=1e-2, atol=1e-2)


def test_reference_duplicates_count_per_occurrence():
    q, kv, _ = make_case(1, 2, 2, 4, torch.float32, device="cpu")
    twice = torch.tensor([[[1, 1, 2]]], dtype=torch.int32)
    once = torch.tensor([[[1, 2]]], dtype=torch.int32)
    lse2 = ref(q, kv, twice)[2]
    lse1 = ref(q, kv, once)[2]
    s1 = (q[0, :, :] @ kv[1, 0]) * SM_SCALE
    assert torch.allclose(torch.exp(lse2) - torch.exp(lse1), torch.exp(s1), rtol=1e-4)


def test_flash_mla_sparse_fwd_argument_errors():
    from mla_wrapper.sparse import flash_mla_sparse_fwd

    q = torch.zeros(2, 16, 576, dtype=torch.bfloat16)
    kv = torch.zeros(8, 1, 576, dtype=torch.bfloat16)
    idx = torch.zeros(2, 1, 4, dtype=torch.int32)
    with pytest.raises(ValueError, match="d_v"):
        flash_mla_sparse_fwd(q, kv, idx, 0.1, d_v=256)
    with pytest.raises(ValueError, match="q: expected last dim 576"):
        flash_mla_sparse_fwd(q[..., :512], kv, idx, 0.1)
    with pytest.raises(ValueError, match="indices: expected dtype int32"):
        flash_mla_sparse_fwd(q, kv, idx.long(), 0.1)
    with pytest.raises(ValueError, match=r"indices: expected \[2, 1, topk\]"):
        flash_mla_sparse_fwd(q, kv, idx[:1], 0.1)
    with pytest.raises(ValueError, match="kv: expected dtype bfloat16"):
        flash_mla_sparse_fwd(q, kv.half(), idx, 0.1)
    with pytest.raises(ValueError, match=r"kv: expected \[s_kv, 1, 576\]"):
        flash_mla_sparse_fwd(q, kv.expand(8, 2, 576), idx, 0.1)
    with pytest.raises(ValueError, match=r"kv: expected \[s_kv, 1, 656\] \(FlashMLA's fp8"):
        flash_mla_sparse_fwd(q, kv.view(torch.uint8)[..., :576], idx, 0.1)
    with pytest.raises(ValueError, match="attn_sink"):
        flash_mla_sparse_fwd(q, kv, idx, 0.1, attn_sink=torch.zeros(3))
    with pytest.raises(ValueError, match="CUDA"):
        flash_mla_sparse_fwd(q, kv, idx, 0.1)


def test_wrapper_errors_without_gpu():
    from mla_wrapper.sparse import BatchSparseMLAWrapper, cp_gather_cache

    with pytest.raises(ValueError, match="float_workspace_buffer: expected a CUDA tensor"):
        BatchSparseMLAWrapper(torch.empty(16, dtype=torch.uint8))
    from mla_wrapper import cache_ops   # (the cache ops, re-exported here: test_cache_ops.py)
    assert cp_gather_cache is cache_ops.cp_gather_cache


def test_plan_argument_errors():
    from mla_wrapper import sparse

    assert sparse._num_tokens(7) == 7
    assert sparse._num_tokens(torch.tensor([0, 3, 5], dtype=torch.int32)) == 5
    with pytest.raises(ValueError, match="qo_indptr"):
        sparse._num_tokens(-1)
    with pytest.raises(ValueError, match="topk"):
        sparse._check_int("topk", 32769, 1, sparse.MAX_TOPK)
    with pytest.raises(ValueError, match="topk_length"):
        sparse._host_lens(torch.zeros(3, dtype=torch.int32), 4)
    t = torch.zeros(10, 16, 576)
    assert sparse._flat_slots("ckv_cache", t[..., :512], 512) == (160, 576)
    assert sparse._flat_slots("ckv_cache", torch.zeros(7, 512), 512) == (7, 512)
    with pytest.raises(ValueError, match="page_size slots apart"):
        sparse._flat_slots("ckv_cache", t[::2, :, :512], 512)


@pytest.mark.parametrize("num_tokens,heads,topk", [(1, 128, 2048), (1, 16, 2048), (32, 128, 2048),
                                                  (5, 64, 77), (300, 128, 2048)])
def test_sparse_plan_splits_and_covers(num_tokens, heads, topk):
    """The dense planner on a sparse step: every (token, row tile) covers [0, topk) exactly
    once; B=1 decode is split across the top-k list; allow_split=False never splits."""
    from mla_wrapper.planner import CostModel, plan_arrays
    from mla_wrapper.sparse import plan_inputs
    from mla_wrapper.workspace import WorkspaceLayout

    layout = WorkspaceLayout.for_batch(num_tokens, num_tokens, heads, 132)
    for allow_split in (True, False):
        plan, res, _ = plan_arrays(*plan_inputs(num_tokens, topk), heads, 1, False, layout,
                                   CostModel(allow_split=allow_split))
        ri = plan.request_info
        assert (ri[:, 0] == range(num_tokens)).all() and (ri[:, 1] == 1).all()
        assert (ri[:, 3] == [t * topk for t in range(num_tokens)]).all()
        covered = {}
        for req, tile, k0, k1, _slot in plan.work_info[:, :5]:
            covered.setdefault((req, tile), []).append((k0, k1))
        tiles = -(-heads // 64)
        assert len(covered) == num_tokens * tiles
        for pieces in covered.values():
            pieces.sort()
            assert pieces[0][0] == 0 and pieces[-1][1] == topk
            assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))
        if not allow_split:
            assert res.num_merge_items == 0
        elif num_tokens == 1 and topk == 2048:
            assert res.num_merge_items == tiles and res.num_work_items >= 8


def test_template_renders_and_specs():
    from mla_wrapper.jit import render

    s = sparse_specs.spec("fp16", "sm_90a", config="64x2")
    assert s.family == "sparse" and "sparse" in s.header_dirs
    src = render(s)
    assert "using Element = __half;" in src and "KvConfig<64, 2>" in src
    assert "MLAW_EXPORT int mlaw_sparse_mla_run(" in src
    assert "MLAW_EXPORT int mlaw_gather_cache(" in render(sparse_specs.cache_ops_spec("sm_90a"))
    names = [x.family for x in sparse_specs.warmup_specs("sm_90a", ["bf16", "fp16"])]
    assert names == ["sparse"] * 4 + ["cache_ops"]    # sm80 and sm90 gather modes
    s90 = sparse_specs.spec("bf16", "sm_90a", kernel="sm90")
    src90 = render(s90)
    assert '#include "mla_wrapper/sm90/launcher.cuh"' in src90 and "KvConfig" not in src90
    assert "mlaw::sm90::run<Element, mlaw::sparse::SlotGather, KvElement>" in src90
    assert "using KvElement = Element;" in src90 and "sm90" in s90.header_dirs
    s8 = sparse_specs.spec("fp16", "sm_90a", kernel="sm90", kv_dtype=torch.float8_e4m3fn)
    assert s8.name.startswith("sparse_sm90_fp16_e4m3")
    assert "using KvElement = mlaw::sm90::KvE4m3;" in render(s8)
    with pytest.raises(ValueError, match="sm90 kernel .Hopper. only, not sm80"):
        sparse_specs.spec("bf16", "sm_90a", config="64x2", kv_dtype="fp8_e4m3")
    names = [x.name for x in sparse_specs.warmup_specs("sm_90a", ["bf16", "fp8_e4m3"])]
    assert names[-3].startswith("sparse_sm90_bf16_e4m3") and names[-1].startswith("cache_ops")
    ds = sparse_specs.spec("bf16", "sm_90a", kernel="sm90", kv_dtype="fp8_ds_mla")
    assert names[-2] == ds.name and ds.name.startswith("sparse_sm90_bf16_ds_mla")
    assert "using KvElement = mlaw::sm90::KvDsMla;" in render(ds)
    with pytest.raises(ValueError, match="fp8 rows .'fp8_ds_mla'. are read by the sm90"):
        sparse_specs.spec("bf16", "sm_90a", kv_dtype="fp8_ds_mla")
    with pytest.raises(ValueError, match="sm_90a"):
        sparse_specs.spec("bf16", "sm_80", kernel="sm90")
    with pytest.raises(ValueError, match="kernel"):
        sparse_specs.spec("bf16", "sm_90a", kernel="sm70")
    assert [x.name for x in sparse_specs.warmup_specs("sm_80", ["bf16"])][0].startswith("sparse_sm80")
    assert sparse_specs.warmup_specs("sm_75", ["bf16"]) == []


def test_ctypes_mirrors():
    import ctypes

    assert ctypes.sizeof(sparse_specs.MlaSparseArgsStruct) == 40
    assert ctypes.sizeof(sparse_specs.GatherCacheParamsStruct) == 7 * 8 + 8 * 8 + 4 * 4


def test_gather_l2_prefetch_policy(monkeypatch):
    from mla_wrapper.sparse import GATHER_L2_PREFETCH_ENV, gather_l2_prefetch

    monkeypatch.delenv(GATHER_L2_PREFETCH_ENV, raising=False)
    assert gather_l2_prefetch("NVIDIA H100 80GB HBM3", fp8=False)
    assert not gather_l2_prefetch("NVIDIA H200", fp8=False)
    assert gather_l2_prefetch("NVIDIA H200", fp8=True)
    monkeypatch.setenv(GATHER_L2_PREFETCH_ENV, "1")
    assert gather_l2_prefetch("NVIDIA H200", fp8=False)
    monkeypatch.setenv(GATHER_L2_PREFETCH_ENV, "0")
    assert not gather_l2_prefetch("NVIDIA H100 80GB HBM3", fp8=True)


def test_lazy_exports_do_not_import_torch():
    code = ("import sys, mla_wrapper; assert 'torch' not in sys.modules; "
            "names = {'BatchSparseMLAWrapper', 'flash_mla_sparse_fwd', 'cp_gather_cache', "
            "'flash_mla_with_kvcache', 'get_mla_metadata', "
            "'gather_and_maybe_dequant_cache', 'cp_gather_and_upconvert_fp8_kv_cache'}; "
            "assert names <= set(dir(mla_wrapper)); "
            "import mla_wrapper.sparse_specs; assert 'torch' not in sys.modules; "
            "assert callable(mla_wrapper.flash_mla_sparse_fwd)")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.compile
def test_compiles(tmp_path, monkeypatch):
    monkeypatch.setenv("MLA_WRAPPER_CACHE_DIR", str(tmp_path))
    from mla_wrapper.jit import build

    for spec in (sparse_specs.spec("bf16", "sm_90a", config="64x2"),
                 sparse_specs.spec("bf16", "sm_90a", kernel="sm90"),
                 sparse_specs.spec("bf16", "sm_90a", kernel="sm90", kv_dtype="fp8_ds_mla"),
                 sparse_specs.cache_ops_spec("sm_90a")):
        path = build(spec)
        assert path.is_file()
        log = (path.parent / "build.log").read_text().lower()
        assert "spill" not in log or "0 bytes spill" in log
        # wgmma serialized (C7510, C7512, C7514, C7515, C7518: every such note says so) or
        # waits injected by ptxas (C7517), in the sm90 gather mode
        assert "serialized" not in log and "injected" not in log, log


# ------------------------------------------------------------------------------- GPU tests
def replay(graph, inputs, out, lse):
    """Write each (captured buffer, new values) pair, poison out / lse with NaN, replay."""
    for dst, src in inputs:
        dst.copy_(src)
    out.fill_(float("nan"))
    lse.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()


@pytest.fixture
def workspace():
    return torch.empty(128 << 20, dtype=torch.uint8, device="cuda")


@pytest.fixture
def sparse_family(planned_backend, monkeypatch):
    """Runs the test on this planned family's gather mode (sm80, and sm90 on Hopper): the
    sparse wrapper follows the dense selection, which MLA_WRAPPER_SM90 opts into sm90."""
    monkeypatch.setenv("MLA_WRAPPER_SM90", "1" if planned_backend == "sm90" else "0")
    return planned_backend


@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name", ["bf16", "fp16"])
@pytest.mark.parametrize("heads", [16, 32, 64, 128])
@pytest.mark.parametrize("s_q,topk", [(1, 2048), (7, 100), (33, 1), (64, 130), (3, 4097)])
def test_flash_mla_sparse_fwd(dtype_name, heads, s_q, topk, sparse_family):
    from mla_wrapper import flash_mla_sparse_fwd

    dtype = DTYPES[dtype_name]
    q, kv, idx = make_case(s_q, heads, topk, 5000, dtype, seed=s_q + topk + heads,
                           empty_rows=(0,) if s_q > 2 else ())
    out, max_logits, lse = flash_mla_sparse_fwd(q, kv, idx, SM_SCALE)
    check_outputs(out, max_logits, lse, q, kv, idx)
    if s_q > 2:
        assert (out[0] == 0).all() and torch.isposinf(lse[0]).all()
        assert torch.isneginf(max_logits[0]).all()


@pytest.mark.gpu
@pytest.mark.parametrize("heads", [16, 128])
def test_flash_mla_sparse_fwd_topk_length_sink_and_range(heads, sparse_family):
    from mla_wrapper import flash_mla_sparse_fwd

    q, kv, idx = make_case(9, heads, 300, 700, torch.bfloat16, seed=5)
    idx[1, 0, 5] = 700          # out of range: skipped like -1
    idx[2, 0, 7] = -7
    lens = torch.tensor([300, 0, 1, 64, 65, 299, 128, 2, 1000], dtype=torch.int32, device="cuda")
    sink = torch.randn(heads, device="cuda")
    out, max_logits, lse = flash_mla_sparse_fwd(q, kv, idx, SM_SCALE, attn_sink=sink,
                                                topk_length=lens)
    check_outputs(out, max_logits, lse, q, kv, idx, lens, sink)


@pytest.mark.gpu
def test_flash_mla_sparse_fwd_large_topk_and_prefill(sparse_family):
    from mla_wrapper import flash_mla_sparse_fwd

    q, kv, idx = make_case(2, 16, 32768, 40000, torch.bfloat16, seed=8)
    check_outputs(*flash_mla_sparse_fwd(q, kv, idx, SM_SCALE), q, kv, idx)
    q, kv, idx = make_case(1024, 128, 512, 8192, torch.bfloat16, seed=9, holes=0.01)
    check_outputs(*flash_mla_sparse_fwd(q, kv, idx, SM_SCALE), q, kv, idx)
    q, kv, idx = make_case(4096, 16, 64, 8192, torch.float16, seed=10, empty_rows=(4095,))
    check_outputs(*flash_mla_sparse_fwd(q, kv, idx, SM_SCALE), q, kv, idx)


def _paged(kv, page_size):
    """The flat [S, 1, 576] cache as a [S / page_size, page_size, 576] paged one."""
    return kv.view(-1, page_size, 576)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name", ["bf16", "fp16"])
@pytest.mark.parametrize("heads", [16, 64, 128])
@pytest.mark.parametrize("num_tokens,topk", [(1, 2048), (4, 2048), (32, 256), (128, 77)])
@pytest.mark.parametrize("fused_cache", [True, False])
def test_wrapper_against_reference(workspace, poison, dtype_name, heads, num_tokens, topk,
                                   fused_cache, sparse_family):
    from mla_wrapper import BatchSparseMLAWrapper

    dtype = DTYPES[dtype_name]
    q, kv, idx = make_case(num_tokens, heads, topk, 64 * 300, dtype, seed=heads + topk,
                           empty_rows=(num_tokens - 1,) if num_tokens > 1 else ())
    cache = _paged(kv, 64)
    if fused_cache:
        ckv, kpe = cache[..., :512], cache[..., 512:]
    else:
        ckv, kpe = cache[..., :512].contiguous(), cache[..., 512:].contiguous()
    w = BatchSparseMLAWrapper(workspace)
    w.plan(num_tokens, topk, heads, SM_SCALE, dtype)
    if num_tokens == 1 and topk == 2048:   # B=1 decode is split across the top-k list
        assert w._impl.last_plan.num_merge_items > 0
    out = poison(torch.empty(num_tokens, heads, 512, dtype=dtype, device="cuda"))
    lse = poison(torch.empty(num_tokens, heads, dtype=torch.float32, device="cuda"))
    for layer in range(2):   # new indices every layer, one plan
        if layer:
            idx = idx.roll(1, dims=2).contiguous()
        w.run(q[..., :512], q[..., 512:], ckv, kpe, idx, out=out, lse=lse)
        check_outputs(out, None, lse, q, kv, idx)


@pytest.mark.gpu
@pytest.mark.parametrize("prefetch", ["0", "1"])
@pytest.mark.parametrize("heads", [64, 128])
def test_wrapper_gather_l2_prefetch_switch(workspace, poison, heads, prefetch, monkeypatch):
    """Both settings of the sm90 gather mode's L2 prefetch (MlaSparseArgs.l2_prefetch_rows, which
    the launcher sets per GPU and cache) give the reference's result: long lists, so that the
    prefetch of tile i + 2's rows runs."""
    from mla_wrapper import BatchSparseMLAWrapper
    from mla_wrapper.sparse import GATHER_L2_PREFETCH_ENV

    monkeypatch.setenv(GATHER_L2_PREFETCH_ENV, prefetch)
    q, kv, idx = make_case(48, heads, 2048, 64 * 300, torch.bfloat16, seed=heads + 7,
                           empty_rows=(47,))
    w = BatchSparseMLAWrapper(workspace)
    w.plan(48, 2048, heads, SM_SCALE, torch.bfloat16)
    assert w._impl.sparse_args.l2_prefetch_rows == int(prefetch)
    out = poison(torch.empty(48, heads, 512, dtype=torch.bfloat16, device="cuda"))
    lse = poison(torch.empty(48, heads, dtype=torch.float32, device="cuda"))
    w.run(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], idx, out=out, lse=lse)
    check_outputs(out, None, lse, q, kv, idx)


@pytest.mark.gpu
@pytest.mark.parametrize("heads", [16, 128])
def test_wrapper_topk_length(workspace, heads, sparse_family):
    from mla_wrapper import BatchSparseMLAWrapper

    q, kv, idx = make_case(6, heads, 2048, 9000, torch.bfloat16, seed=3)
    lens = torch.tensor([2048, 0, 1, 1000, 63, 2047], dtype=torch.int32)
    w = BatchSparseMLAWrapper(workspace)
    w.plan(6, 2048, heads, SM_SCALE, torch.bfloat16, topk_length=lens)
    out, lse = w.run(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], idx,
                     topk_length=lens.cuda(), return_lse=True)
    check_outputs(out, None, lse, q, kv, idx, lens.cuda())
    # planned without lengths (one plan per step), lengths only at run
    w.plan(6, 2048, heads, SM_SCALE, torch.bfloat16)
    out, lse = w.run(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], idx,
                     topk_length=lens.cuda(), return_lse=True)
    check_outputs(out, None, lse, q, kv, idx, lens.cuda())


@pytest.mark.gpu
def test_wrapper_run_errors(workspace):
    from mla_wrapper import BatchSparseMLAWrapper

    q, kv, idx = make_case(2, 16, 64, 100, torch.bfloat16)
    w = BatchSparseMLAWrapper(workspace)
    with pytest.raises(RuntimeError, match="plan"):
        w.run(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], idx)
    w.plan(2, 64, 16, SM_SCALE, torch.bfloat16)
    with pytest.raises(ValueError, match="indices"):
        w.run(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], idx[..., :32])
    with pytest.raises(ValueError, match="indices: rows must be"):
        w.run(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:],
              torch.cat([idx, idx], 2)[..., :64])
    with pytest.raises(ValueError, match="q_nope"):
        w.run(q[..., :512].half(), q[..., 512:], kv[..., :512], kv[..., 512:], idx)
    with pytest.raises(ValueError, match="topk"):
        w.plan(2, 0, 16, SM_SCALE, torch.bfloat16)
    with pytest.raises(ValueError, match="num_heads"):
        w.plan(2, 64, 129, SM_SCALE, torch.bfloat16)


@pytest.mark.gpu
@pytest.mark.parametrize("heads", [16, 128])
@pytest.mark.parametrize("cap", [1, 8])
def test_wrapper_cuda_graph_replay(workspace, heads, cap, sparse_family):
    """Capture run() once; each step: re-plan, write new indices / lengths / q into the
    captured buffers, replay, compare with the reference."""
    from mla_wrapper import BatchSparseMLAWrapper

    topk, dev = 2048, "cuda"
    w = BatchSparseMLAWrapper(workspace, use_cuda_graph=True, max_num_tokens=cap)
    q = torch.zeros(cap, heads, 576, dtype=torch.bfloat16, device=dev)
    kv = torch.zeros(10000, 1, 576, dtype=torch.bfloat16, device=dev)
    idx = torch.zeros(cap, 1, topk, dtype=torch.int32, device=dev)
    lens = torch.full((cap,), topk, dtype=torch.int32, device=dev)
    out = torch.empty(cap, heads, 512, dtype=torch.bfloat16, device=dev)
    lse = torch.empty(cap, heads, dtype=torch.float32, device=dev)
    w.plan(cap, topk, heads, SM_SCALE, torch.bfloat16)
    args = (q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], idx)
    g, _ = capture_graph(lambda: w.run(*args, topk_length=lens, out=out, lse=lse))
    for seed in (1, 2, 3):
        q2, kv2, idx2 = make_case(cap, heads, topk, 10000, torch.bfloat16, seed=seed,
                                  empty_rows=(0,) if seed == 3 else ())
        lens2 = torch.randint(0, topk + 1, (cap,), dtype=torch.int32, device=dev)
        w.plan(cap, topk, heads, SM_SCALE, torch.bfloat16, topk_length=lens2.cpu())
        replay(g, [(q, q2), (kv, kv2), (idx, idx2), (lens, lens2)], out, lse)
        check_outputs(out, None, lse, q2, kv2, idx2, lens2)
    with pytest.raises(ValueError, match="capacity"):
        w.plan(cap + 1, topk, heads, SM_SCALE, torch.bfloat16)
    with pytest.raises(ValueError, match="fixed"):
        w.plan(cap, topk // 2, heads, SM_SCALE, torch.bfloat16)


# ------------------------------------------------------------- fp8 (e4m3) cache on sm90
IS_HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9
FP8 = torch.float8_e4m3fn


def check_fp8_outputs(out, lse, ref_o, ref_lse, empty_last: bool):
    """An fp8 cache's run() against the reference: no NaN (the outputs were poisoned), out
    within the dtype's tolerance, lse within 2e-3; with empty_last, the last row (all ids -1)
    has out = 0 and lse = +inf."""
    assert not torch.isnan(out).any() and not torch.isnan(lse).any()
    err = rel_error(out, ref_o)
    assert err < TOL[out.dtype], f"out rel error {err}"
    assert rel_error(lse, ref_lse) < 2e-3, "lse"
    if empty_last:
        assert (out[-1] == 0).all() and torch.isposinf(lse[-1]).all()


def quantize_cache(kv, ckv_scale, kpe_scale):
    """A flat [S, 1, 576] 16-bit cache as e4m3 (real value = stored x its part's scale)."""
    return torch.cat([(kv[..., :512].float() / ckv_scale).to(FP8),
                      (kv[..., 512:].float() / kpe_scale).to(FP8)], -1)


@pytest.mark.gpu
@pytest.mark.skipif(not IS_HOPPER, reason="an fp8 cache runs on the sm90 family (Hopper) only")
@pytest.mark.parametrize("dtype_name,heads,num_tokens,topk", [
    ("bf16", 16, 1, 2048), ("bf16", 128, 1, 2048), ("bf16", 64, 32, 256),
    ("fp16", 128, 4, 2048), ("bf16", 16, 128, 77), ("fp16", 32, 7, 4097)])
def test_wrapper_fp8_cache(workspace, poison, dtype_name, heads, num_tokens, topk, monkeypatch):
    """bf16 / fp16 queries over an e4m3 cache (ckv_scale / kpe_scale as the dense wrapper's):
    the sm90 gather mode against the reference on the dequantized cache, NaN-poisoned outputs,
    -1 holes, duplicates, an empty row, new indices each layer, a split B=1 list."""
    from mla_wrapper import BatchSparseMLAWrapper

    monkeypatch.setenv("MLA_WRAPPER_SM90", "1")
    dtype = DTYPES[dtype_name]
    q, kv, idx = make_case(num_tokens, heads, topk, 64 * 300, dtype, seed=heads + topk,
                           empty_rows=(num_tokens - 1,) if num_tokens > 1 else ())
    ckv_scale, kpe_scale = 0.0625, 0.3
    q8 = quantize_cache(kv, ckv_scale, kpe_scale)
    cache = _paged(q8, 64)
    w = BatchSparseMLAWrapper(workspace)
    w.plan(num_tokens, topk, heads, SM_SCALE, dtype, kv_data_type=FP8)
    out = poison(torch.empty(num_tokens, heads, 512, dtype=dtype, device="cuda"))
    lse = poison(torch.empty(num_tokens, heads, dtype=torch.float32, device="cuda"))
    for layer in range(2):
        if layer:
            idx = idx.roll(1, dims=2).contiguous()
        w.run(q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:], idx, out=out,
              lse=lse, ckv_scale=ckv_scale, kpe_scale=kpe_scale)
        ref_o, _, ref_lse = ref(q, q8, idx, ckv_scale=ckv_scale, kpe_scale=kpe_scale)
        check_fp8_outputs(out, lse, ref_o, ref_lse, empty_last=num_tokens > 1)
    # the scales are applied: without them the output is another one
    wrong = w.run(q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:], idx)
    assert rel_error(wrong, ref_o) > 0.1


@pytest.mark.gpu
@pytest.mark.skipif(not IS_HOPPER, reason="an fp8 cache runs on the sm90 family (Hopper) only")
def test_wrapper_fp8_errors(workspace, monkeypatch):
    from mla_wrapper import BatchSparseMLAWrapper

    q, kv, idx = make_case(2, 16, 64, 128, torch.bfloat16)
    q8 = quantize_cache(kv, 1.0, 1.0)
    w = BatchSparseMLAWrapper(workspace)
    w.plan(2, 64, 16, SM_SCALE, torch.bfloat16, kv_data_type=FP8)
    with pytest.raises(ValueError, match="ckv_cache: expected dtype float8_e4m3fn"):
        w.run(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], idx)
    with pytest.raises(ValueError, match="ckv_scale: expected a finite scale > 0"):
        w.run(q[..., :512], q[..., 512:], q8[..., :512], q8[..., 512:], idx, ckv_scale=0.0)
    odd = torch.empty(128, 1, 584, dtype=FP8, device="cuda")[..., :576]   # 584-byte slots
    with pytest.raises(ValueError, match="ckv_cache: an fp8 cache's slots must be 16-byte"):
        w.run(q[..., :512], q[..., 512:], odd[..., :512], odd[..., 512:], idx)
    w.plan(2, 64, 16, SM_SCALE, torch.bfloat16)
    with pytest.raises(ValueError, match="ckv_scale: applies to an fp8 cache only"):
        w.run(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], idx, ckv_scale=2.0)
    with pytest.raises(ValueError, match="q_data_type / kv_data_type"):
        w.plan(2, 64, 16, SM_SCALE, torch.bfloat16, kv_data_type=torch.float16)
    monkeypatch.setenv("MLA_WRAPPER_SM90", "0")        # the sm80 family reads no fp8 cache
    w80 = BatchSparseMLAWrapper(workspace)
    with pytest.raises(ValueError, match="kv_data_type: an fp8 .e4m3. cache is read by the sm90"):
        w80.plan(2, 64, 16, SM_SCALE, torch.bfloat16, kv_data_type=FP8)


# ------------------------------------------------- FlashMLA's fp8 rows ("fp8_ds_mla") on sm90
def ds_mla_case(num_tokens, heads, topk, num_slots, dtype, seed, magnitude=1.0):
    """make_case's q and indices over a cache of FlashMLA's fp8 rows [slots, 656] (uint8):
    latent rows of varied size (x magnitude), bf16 rope; also the values the rows hold,
    [slots, 1, 576] float32 (reference.ds_mla_unpack)."""
    from mla_wrapper.reference import ds_mla_pack, ds_mla_unpack

    q, _, idx = make_case(num_tokens, heads, topk, num_slots, dtype, seed=seed,
                          empty_rows=(num_tokens - 1,) if num_tokens > 1 else ())
    g = torch.Generator().manual_seed(seed + 1)
    size = torch.logspace(-1.5, 0.5, num_slots)[torch.randperm(num_slots, generator=g)]
    latent = torch.randn(num_slots, 512, generator=g) * size[:, None] * magnitude
    rope = (torch.randn(num_slots, 64, generator=g) * magnitude).to(torch.bfloat16)
    rows = ds_mla_pack(latent, rope)
    lat, rp = ds_mla_unpack(rows)
    return q, rows.cuda(), torch.cat([lat, rp], -1)[:, None].cuda(), idx


@pytest.mark.gpu
@pytest.mark.skipif(not IS_HOPPER, reason="FlashMLA's fp8 rows run on the sm90 family only")
@pytest.mark.parametrize("dtype_name,heads,num_tokens,topk,magnitude", [
    ("bf16", 16, 1, 2048, 1.0), ("bf16", 128, 1, 2048, 1.0), ("bf16", 64, 32, 256, 1.0),
    ("bf16", 128, 4, 2048, 1e-3), ("fp16", 128, 4, 2048, 1.0), ("bf16", 16, 128, 77, 1.0),
    ("fp16", 32, 7, 4097, 1e-3), ("bf16", 128, 64, 2048, 30.0)])
def test_wrapper_ds_mla(workspace, poison, dtype_name, heads, num_tokens, topk, magnitude,
                        monkeypatch):
    """bf16 / fp16 queries over FlashMLA's fp8 rows: the sm90 gather mode against the reference
    on the values the rows hold, NaN-poisoned outputs, -1 holes, duplicates, an empty row, new
    indices each layer, a split B=1 list, the cache in FlashMLA's 4-d shape and flat; magnitude
    1e-3 puts every scale under 2^-14 (the two-factor path of the widening)."""
    from mla_wrapper import BatchSparseMLAWrapper

    monkeypatch.setenv("MLA_WRAPPER_SM90", "1")
    dtype = DTYPES[dtype_name]
    q, rows, values, idx = ds_mla_case(num_tokens, heads, topk, 64 * 300, dtype,
                                       seed=heads + topk, magnitude=magnitude)
    w = BatchSparseMLAWrapper(workspace)
    w.plan(num_tokens, topk, heads, SM_SCALE, dtype, kv_data_type="fp8_ds_mla")
    out = poison(torch.empty(num_tokens, heads, 512, dtype=dtype, device="cuda"))
    lse = poison(torch.empty(num_tokens, heads, dtype=torch.float32, device="cuda"))
    for layer, cache in enumerate((rows.view(300, 64, 1, 656), rows)):
        if layer:
            idx = idx.roll(1, dims=2).contiguous()
        w.run(q[..., :512], q[..., 512:], cache, None, idx, out=out, lse=lse)
        ref_o, _, ref_lse = ref(q, values, idx)
        check_fp8_outputs(out, lse, ref_o, ref_lse, empty_last=num_tokens > 1)


@pytest.mark.gpu
@pytest.mark.skipif(not IS_HOPPER, reason="FlashMLA's fp8 rows run on the sm90 family only")
def test_wrapper_ds_mla_cuda_graph_replay(workspace, monkeypatch):
    """FlashMLA's rows from a CUDA graph: capture run() once; each step re-plans (other
    topk_length bounds), writes new q / rows / indices / lengths into the captured buffers,
    replays, compares with the reference on the values the rows hold."""
    from mla_wrapper import BatchSparseMLAWrapper

    monkeypatch.setenv("MLA_WRAPPER_SM90", "1")
    cap, heads, topk, slots = 24, 64, 1024, 64 * 100
    w = BatchSparseMLAWrapper(workspace, use_cuda_graph=True, max_num_tokens=cap)
    q = torch.zeros(cap, heads, 576, dtype=torch.bfloat16, device="cuda")
    rows = torch.zeros(100, 64, 1, 656, dtype=torch.uint8, device="cuda")
    idx = torch.zeros(cap, 1, topk, dtype=torch.int32, device="cuda")
    lens = torch.full((cap,), topk, dtype=torch.int32, device="cuda")
    out = torch.empty(cap, heads, 512, dtype=torch.bfloat16, device="cuda")
    lse = torch.empty(cap, heads, dtype=torch.float32, device="cuda")
    w.plan(cap, topk, heads, SM_SCALE, torch.bfloat16, kv_data_type="fp8_ds_mla")
    g, _ = capture_graph(lambda: w.run(q[..., :512], q[..., 512:], rows, None, idx,
                                       topk_length=lens, out=out, lse=lse))
    for seed in (1, 2):
        q2, rows2, values2, idx2 = ds_mla_case(cap, heads, topk, slots, torch.bfloat16, seed)
        lens2 = torch.randint(0, topk + 1, (cap,), dtype=torch.int32, device="cuda")
        w.plan(cap, topk, heads, SM_SCALE, torch.bfloat16, kv_data_type="fp8_ds_mla",
               topk_length=lens2.cpu())
        replay(g, [(q, q2), (rows, rows2.view(rows.shape)), (idx, idx2), (lens, lens2)], out, lse)
        ref_o, _, ref_lse = ref(q2, values2, idx2, lens2)
        assert rel_error(out, ref_o) < TOL[torch.bfloat16]
        check_lse_rows(lse, ref_lse)


@pytest.mark.gpu
@pytest.mark.skipif(not IS_HOPPER, reason="FlashMLA's fp8 rows run on the sm90 family only")
def test_wrapper_ds_mla_errors(workspace, monkeypatch):
    from mla_wrapper import BatchSparseMLAWrapper

    monkeypatch.setenv("MLA_WRAPPER_SM90", "1")
    q, rows, values, idx = ds_mla_case(2, 16, 64, 128, torch.bfloat16, seed=0)
    w = BatchSparseMLAWrapper(workspace)
    w.plan(2, 64, 16, SM_SCALE, torch.bfloat16, kv_data_type="fp8_ds_mla")
    qn, qp = q[..., :512], q[..., 512:]
    with pytest.raises(ValueError, match="kpe_cache: FlashMLA's fp8 rows .* hold the rope"):
        w.run(qn, qp, rows, rows, idx)
    with pytest.raises(ValueError, match="ckv_cache: expected dtype"):
        w.run(qn, qp, values.to(torch.bfloat16), None, idx)
    with pytest.raises(ValueError, match=r"ckv_cache: FlashMLA's fp8 rows are \[num_pages"):
        w.run(qn, qp, rows[:, :576], None, idx)
    odd = torch.empty(128, 664, dtype=torch.uint8, device="cuda")[:, 4:660]
    with pytest.raises(ValueError, match="ckv_cache: FlashMLA's fp8 rows must be 16-byte"):
        w.run(qn, qp, odd, None, idx)
    with pytest.raises(ValueError, match="ckv_scale: FlashMLA's fp8 rows hold their own"):
        w.run(qn, qp, rows, None, idx, ckv_scale=2.0)
    # after the errors, a valid call still runs (the scales stay 1)
    out = w.run(qn, qp, rows, None, idx)
    assert rel_error(out, ref(q, values, idx)[0]) < TOL[torch.bfloat16]
    with pytest.raises(ValueError, match="q_data_type / kv_data_type"):
        w.plan(2, 64, 16, SM_SCALE, torch.bfloat16, kv_data_type="fp8")
    monkeypatch.setenv("MLA_WRAPPER_SM90", "0")        # the sm80 family reads no fp8 rows
    w80 = BatchSparseMLAWrapper(workspace)
    with pytest.raises(ValueError, match="kv_data_type: FlashMLA's fp8 rows"):
        w80.plan(2, 64, 16, SM_SCALE, torch.bfloat16, kv_data_type="fp8_ds_mla")


# --------------------------------------- flash_mla_with_kvcache (FlashMLA's sparse decode call)
def test_flash_mla_with_kvcache_argument_errors():
    from mla_wrapper import flash_mla_with_kvcache, get_mla_metadata
    from mla_wrapper.sparse import FlashMLASchedMeta

    sched, splits = get_mla_metadata(torch.zeros(2), 64, 1, is_fp8_kvcache=True, topk=2048)
    assert isinstance(sched, FlashMLASchedMeta) and splits is None
    q = torch.zeros(1, 1, 16, 576, dtype=torch.bfloat16)
    idx = torch.zeros(1, 1, 64, dtype=torch.int32)
    call = lambda **kw: flash_mla_with_kvcache(q, q, None, None, 512, sched, **kw)  # noqa: E731
    with pytest.raises(ValueError, match="extra_k_cache: DeepSeek V4"):
        call(indices=idx, extra_k_cache=q)
    with pytest.raises(ValueError, match="causal: must be False"):
        call(indices=idx, causal=True)
    with pytest.raises(ValueError, match="head_dim_v: only 512"):
        flash_mla_with_kvcache(q, q, None, None, 448, sched, indices=idx)
    with pytest.raises(ValueError, match="k_cache: expected dtype uint8 or float8_e4m3fn"):
        flash_mla_with_kvcache(q, q, None, None, 512, sched, is_fp8_kvcache=True, indices=idx)


def flashmla_case(b, s_q, heads, topk, fp8, seed, slots=64 * 200):
    """FlashMLA's shapes over make_case / ds_mla_case: q [b, s_q, h, 576], k_cache [blocks, 64,
    1, 656 or 576], indices [b, s_q, topk]; also the flat q, the values the cache holds
    [slots, 1, 576] and the flat indices, for the reference."""
    T = b * s_q
    if fp8:
        q, rows, values, idx = ds_mla_case(T, heads, topk, slots, torch.bfloat16, seed)
        cache = rows.view(slots // 64, 64, 1, 656)
    else:
        q, values, idx = make_case(T, heads, topk, slots, torch.bfloat16, seed=seed,
                                   empty_rows=(T - 1,) if T > 1 else ())
        cache = values.view(slots // 64, 64, 1, 576)
    return q.view(b, s_q, heads, 576), cache, idx.view(b, s_q, topk), q, values, idx


@pytest.mark.gpu
@pytest.mark.parametrize("b,s_q,heads,topk", [(4, 1, 16, 2048), (3, 2, 64, 300),
                                              (1, 1, 128, 2048), (5, 1, 128, 64),
                                              (2, 4, 16, 640)])
@pytest.mark.parametrize("fp8", [True, False])
def test_flash_mla_with_kvcache(b, s_q, heads, topk, fp8, sparse_family, poison):
    """Against the reference: out [b, s_q, h, 512] (NaN-poisoned out= given), lse [b, h, s_q],
    topk_length per token or per request, attn_sink, an empty last row; fp8: FlashMLA's rows
    (sm90 only), else a bf16 cache (both gather modes)."""
    from mla_wrapper import flash_mla_with_kvcache, get_mla_metadata

    if fp8 and sparse_family != "sm90":
        pytest.skip("FlashMLA's fp8 rows are read by the sm90 family only")
    q4, cache, idx3, q, values, idx = flashmla_case(b, s_q, heads, topk, fp8, seed=b + heads)
    T = b * s_q
    g = torch.Generator().manual_seed(T)
    lens_b = torch.randint(1, topk + 1, (b,), generator=g, dtype=torch.int32).cuda()
    lens = lens_b.repeat_interleave(s_q)
    sink = torch.randn(heads, generator=g).cuda()
    sched, splits = get_mla_metadata()
    out = poison(torch.empty(b, s_q, heads, 512, dtype=torch.bfloat16, device="cuda"))
    for topk_length, attn_sink in ((None, None), (lens, None), (lens_b, sink)):
        o, lse = flash_mla_with_kvcache(q4, cache, None, None, 512, sched, splits, SM_SCALE,
                                        is_fp8_kvcache=fp8, indices=idx3,
                                        topk_length=topk_length, attn_sink=attn_sink, out=out)
        assert o is out and lse.shape == (b, heads, s_q) and lse.is_contiguous()
        ref_lens = None if topk_length is None else lens
        ref_o, _, ref_lse = ref(q, values, idx, ref_lens, attn_sink=attn_sink)
        assert not torch.isnan(o).any()
        assert rel_error(o.view(T, heads, 512), ref_o) < TOL[torch.bfloat16]
        lse_rows = lse.transpose(1, 2).reshape(T, heads)
        check_lse_rows(lse_rows, ref_lse)
        if T > 1:   # the last token's ids are all -1
            assert (o.view(T, heads, 512)[-1] == 0).all()


@pytest.mark.gpu
@pytest.mark.parametrize("s_q", [1, 2])
def test_flash_mla_with_kvcache_cuda_graph(s_q, sparse_family):
    """A warm-up call makes the shape's plan; the captured call replays with new q / indices
    (lse [b, h, s_q] written in place by the kernels); a shape whose first call is inside a
    capture raises, naming the warm-up."""
    from mla_wrapper import flash_mla_with_kvcache

    b, heads, topk = 6, 64, 512
    T = b * s_q
    q4, cache, idx3, *_ = flashmla_case(b, s_q, heads, topk, False, seed=0)
    out = torch.empty(b, s_q, heads, 512, dtype=torch.bfloat16, device="cuda")
    call = lambda: flash_mla_with_kvcache(q4, cache, None, None, 512, None,  # noqa: E731
                                          softmax_scale=SM_SCALE, indices=idx3, out=out)
    graph, (_, lse) = capture_graph(call)
    assert lse.shape == (b, heads, s_q)
    for seed in (1, 2):
        q4n, cachen, idx3n, q, values, idx = flashmla_case(b, s_q, heads, topk, False, seed=seed)
        replay(graph, [(q4, q4n), (cache, cachen), (idx3, idx3n)], out, lse)
        ref_o, _, ref_lse = ref(q, values, idx)
        assert rel_error(out.view(T, heads, 512), ref_o) < TOL[torch.bfloat16]
        check_lse_rows(lse.transpose(1, 2).reshape(T, heads), ref_lse)
    q_new = q4[:5].clone()
    with pytest.raises(RuntimeError, match="inside a CUDA-graph capture; call it once"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            flash_mla_with_kvcache(q_new, cache, None, None, 512, None, softmax_scale=SM_SCALE,
                                   indices=idx3[:5].clone())


@pytest.mark.gpu
@pytest.mark.skipif(not IS_HOPPER, reason="FlashMLA's fp8 rows run on the sm90 family only")
@pytest.mark.parametrize("heads,s_q,topk", [(128, 64, 2048), (16, 37, 300)])
def test_flash_mla_sparse_fwd_ds_mla(heads, s_q, topk, monkeypatch):
    """flash_mla_sparse_fwd straight over FlashMLA's fp8 rows (no upconvert): out, max_logits
    and lse against the reference on the values the rows hold, with topk_length and a sink."""
    from mla_wrapper import flash_mla_sparse_fwd

    monkeypatch.setenv("MLA_WRAPPER_SM90", "1")
    q, rows, values, idx = ds_mla_case(s_q, heads, topk, 64 * 300, torch.bfloat16, seed=s_q)
    g = torch.Generator().manual_seed(heads)
    lens = torch.randint(0, topk + 1, (s_q,), generator=g, dtype=torch.int32).cuda()
    sink = torch.randn(heads, generator=g).cuda()
    for kv in (rows[:, None, :], rows.view(torch.float8_e4m3fn)[:, None, :]):
        out, max_logits, lse = flash_mla_sparse_fwd(q, kv, idx, SM_SCALE, topk_length=lens,
                                                    attn_sink=sink)
        ref_o, ref_m, ref_lse = ref(q, values, idx, lens, attn_sink=sink)
        assert not torch.isnan(out).any()
        assert rel_error(out, ref_o) < TOL[torch.bfloat16]
        check_lse_rows(lse, ref_lse)
        finite = torch.isfinite(ref_lse)
        assert torch.isneginf(max_logits[~finite]).all()
        assert rel_error(max_logits[finite], ref_m[finite]) < 2e-3
