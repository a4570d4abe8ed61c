"""sgl-kernel's cutlass_mla_decode / cutlass_mla_get_workspace_size: routed to a planned family
(sm90 on Hopper, sm80 elsewhere; the GPU tests run each family the GPU has) on non-SM100 GPUs,
argument validation and workspace arithmetic (CPU tests)."""
from __future__ import annotations

import math

import pytest
import torch

import mla_wrapper
from mla_wrapper import backends, kernels, ops
from mla_wrapper import workspace as ws_mod
from mla_wrapper.backends import cutlass
from mla_wrapper.reference import mla_attention, rel_error

SM_SCALE = 1.0 / math.sqrt(192)
TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3}


def make_inputs(lens, heads, page_size, dtype, max_blocks=None, seed=0, device="cuda"):
    g = torch.Generator().manual_seed(seed)
    B = len(lens)
    need = [-(-L // page_size) for L in lens]
    max_blocks = max_blocks or max(max(need), 1)
    num_blocks = B * max_blocks + 5
    perm = torch.randperm(num_blocks, generator=g).to(torch.int32)
    page_table = perm[: B * max_blocks].reshape(B, max_blocks)
    cache = (torch.randn(num_blocks, page_size, 576, generator=g) * 0.5).to(dtype).to(device)
    q = torch.randn(B, heads, 576, generator=g).to(dtype).to(device)
    seq_lens = torch.tensor(lens, dtype=torch.int32)
    return dict(q=q, q_nope=q[..., :512], q_pe=q[..., 512:], cache=cache, seq_lens=seq_lens.to(device),
                page_table=page_table.to(device), lens=seq_lens, page_size=page_size,
                max_blocks=max_blocks)


def reference(x):
    B, max_blocks = x["page_table"].shape
    kv_indptr = torch.arange(B + 1, dtype=torch.int32) * max_blocks
    out, _ = mla_attention(x["q_nope"], x["q_pe"], x["cache"][..., :512], x["cache"][..., 512:],
                           torch.arange(B + 1, dtype=torch.int32), kv_indptr,
                           x["page_table"].reshape(-1), x["lens"], x["page_size"], False, SM_SCALE)
    return out


@pytest.fixture
def routed_to(monkeypatch, planned_backend):
    """Route cutlass_mla_decode to the planned family under test (the GPU's default otherwise)."""
    monkeypatch.setattr(ops, "_routed_family", lambda device: backends.family(planned_backend))
    monkeypatch.setattr(ops, "_ROUTED_LAST", {})   # (no call set up on another family reused)
    return planned_backend


def workspace_for(x, splits):
    B = x["q_nope"].shape[0]
    n = mla_wrapper.cutlass_mla_get_workspace_size(x["max_blocks"] * x["page_size"], B,
                                                   num_kv_splits=splits)
    return torch.empty(max(n, 1), dtype=torch.uint8, device="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("page_size", [1, 16, 64, 128])
@pytest.mark.parametrize("heads", [16, 32, 64, 128])
def test_routed_matches_reference(dtype, page_size, heads, routed_to):
    lens = [1, 0, 64, 65, 1000, 4097, 333]
    x = make_inputs(lens, heads, page_size, dtype, seed=heads + page_size)
    for splits in (1, 4, -1):
        out = mla_wrapper.cutlass_mla_decode(x["q_nope"], x["q_pe"], x["cache"], x["seq_lens"],
                                             x["page_table"], workspace_for(x, splits), SM_SCALE,
                                             splits)
        assert not torch.isnan(out).any()
        err = rel_error(out, reference(x))
        assert err < TOL[dtype], f"splits={splits}: rel error {err}"
        assert (out[1] == 0).all()


@pytest.mark.gpu
@pytest.mark.parametrize("heads", [16, 128])
def test_routed_repeat_calls(heads, routed_to):
    """A call with the previous call's layout reuses its checked set-up (a step's later layers)
    and follows the new q / cache / page-table tensors and the lengths' new values; another
    lengths tensor or workspace sets up again."""
    lens = [700, 1, 0, 3000, 64]
    x = make_inputs(lens, heads, 64, torch.bfloat16, max_blocks=60, seed=11)
    ws = workspace_for(x, -1)
    call = lambda y, seq_lens, w: mla_wrapper.cutlass_mla_decode(  # noqa: E731
        y["q_nope"], y["q_pe"], y["cache"], seq_lens, y["page_table"], w, SM_SCALE, -1)
    assert rel_error(call(x, x["seq_lens"], ws), reference(x)) < 1e-2
    entry = ops._ROUTED_LAST[torch.cuda.current_device()]
    for seed, new_lens in ((12, lens), (13, [5, 3800, 1, 2000, 0])):
        y = make_inputs(new_lens, heads, 64, torch.bfloat16, max_blocks=60, seed=seed)
        x["seq_lens"].copy_(y["seq_lens"])   # (same tensor, new values: the plan follows them)
        out = call(y, x["seq_lens"], ws)
        assert ops._ROUTED_LAST[torch.cuda.current_device()] is entry
        assert not torch.isnan(out).any() and rel_error(out, reference(y)) < 1e-2
    other = y["seq_lens"].clone()
    out = call(y, other, ws)
    assert ops._ROUTED_LAST[torch.cuda.current_device()] is not entry
    assert rel_error(out, reference(y)) < 1e-2


@pytest.mark.gpu
@pytest.mark.parametrize("heads", [16, 128])
@pytest.mark.parametrize("L, max_blocks", [(1000, 16), (5000, 2048), (0, 2048), (64, 2048)])
def test_routed_one_request(L, max_blocks, heads, routed_to):
    """A batch of one request gets the uniform plan, split over the CTAs in whole kv tiles (a
    page table far wider than the request: most splits empty, skipped by the merge)."""
    x = make_inputs([L], heads, 64, torch.bfloat16, max_blocks=max_blocks, seed=L + heads)
    ws = workspace_for(x, -1)
    out = mla_wrapper.cutlass_mla_decode(x["q_nope"], x["q_pe"], x["cache"], x["seq_lens"],
                                         x["page_table"], ws, SM_SCALE, -1)
    entry = ops._ROUTED_LAST[torch.cuda.current_device()]
    assert entry.plan_export == kernels.DEVICE_PLAN
    # the pieces: each row tile's kv range covered once, in pieces of whole kv tiles; on sm90
    # at least min(ceil(L / 16), two tiles) long (but a request's last)
    words = ws[: ws.numel() // 4 * 4].view(torch.int32).cpu()
    at = lambda ptr: (ptr - ws.data_ptr()) // 4  # noqa: E731
    n = int(words[at(entry.plan.counts)])
    work = words[at(entry.plan.work_info):][: n * ws_mod.WORK_FIELDS].view(n, ws_mod.WORK_FIELDS)
    tiles = -(-heads // 64)
    kv = work[:, 3] - work[:, 2]
    assert int(kv.sum()) == L * tiles and (work[kv > 0, 2] % 64 == 0).all()
    floor = min(-(-L // 16), 128 if routed_to == "sm90" else 64)
    assert (kv[(kv > 0) & (work[:, 3] < L)] >= floor).all(), kv.tolist()
    assert not torch.isnan(out).any()
    if L == 0:
        assert (out == 0).all()
    else:
        assert rel_error(out, reference(x)) < 1e-2


@pytest.mark.gpu
@pytest.mark.parametrize("heads", [16, 128])
def test_routed_plan_kept(heads, routed_to):
    """The balanced plan's memo: a call with the lengths the workspace's plan was made from
    keeps that plan (its kept count goes up), new lengths plan again, and so does a workspace
    whose plan records were overwritten (the checksum), each output against the reference."""
    lens = [700, 1, 0, 3000, 64, 2500]
    x = make_inputs(lens, heads, 64, torch.bfloat16, max_blocks=60, seed=21)
    ws = workspace_for(x, -1).zero_()   # (no memo left in it by an earlier test)
    fam = backends.family(routed_to)
    num_ctas = torch.cuda.get_device_properties(0).multi_processor_count * fam.CTAS_PER_SM
    offsets = ops._balanced_layout(len(lens), -(-heads // 64), num_ctas)[0]
    words = ws.view(torch.int32)
    kept = lambda: int(words[offsets["memo"] + 16])  # noqa: E731  (balanced.cuh kMemoKept)

    def check(expect_kept):
        out = mla_wrapper.cutlass_mla_decode(x["q_nope"], x["q_pe"], x["cache"], x["seq_lens"],
                                             x["page_table"], ws, SM_SCALE, -1)
        assert not torch.isnan(out).any() and rel_error(out, reference(x)) < 1e-2
        assert kept() == expect_kept

    check(0)                  # planned and remembered
    check(1)                  # same lengths: kept
    check(2)
    x["seq_lens"][1] = 1800   # new lengths (in place): planned again
    x["lens"][1] = 1800
    check(0)
    check(1)
    n = 9 * len(lens)         # a user's bytes over the plan's first work records
    words[offsets["work_info"]:offsets["work_info"] + n] = 7
    check(0)
    check(1)


@pytest.mark.gpu
@pytest.mark.parametrize("pdl", ["0", "1"])
def test_routed_attention_waits_for_its_plan(pdl, routed_to, monkeypatch):
    """With programmatic dependent launch on (MLA_WRAPPER_PDL unset or 1) the routed call's
    attention starts while its plan kernel runs and waits for it before reading the plan
    (MlaRunArgs::enable_pdl 2); off, an ordinary launch (0). Back-to-back calls whose lengths
    change in place (a new plan each call, overwriting the one the previous call's attention
    read) all match the reference."""
    monkeypatch.setenv(backends.PDL_ENV, pdl)
    x = make_inputs([900, 3, 2100, 64, 0, 1500], 128, 64, torch.bfloat16, max_blocks=40, seed=31)
    ws = workspace_for(x, -1)
    outs, refs = [], []
    for seed, lens in ((32, [5, 2500, 1, 700, 2000, 0]), (33, [2555, 9, 1200, 0, 64, 2400]),
                       (34, [1, 1, 2559, 3, 1024, 77])):
        y = make_inputs(lens, 128, 64, torch.bfloat16, max_blocks=40, seed=seed)
        x["seq_lens"].copy_(y["seq_lens"])
        outs.append(mla_wrapper.cutlass_mla_decode(y["q_nope"], y["q_pe"], y["cache"],
                                                   x["seq_lens"], y["page_table"], ws, SM_SCALE,
                                                   -1).clone())
        refs.append(reference(y))
    want = 2 if pdl == "1" else 0
    assert ops._ROUTED_LAST[torch.cuda.current_device()].args.enable_pdl == want
    for out, ref in zip(outs, refs):
        assert not torch.isnan(out).any() and rel_error(out, ref) < 1e-2


@pytest.mark.gpu
def test_routed_cuda_graph_replay(routed_to):
    x = make_inputs([700, 20, 4000, 1], 16, 64, torch.bfloat16, max_blocks=80, seed=5)
    ws = workspace_for(x, -1)
    args = (x["q_nope"], x["q_pe"], x["cache"], x["seq_lens"], x["page_table"], ws, SM_SCALE, -1)
    mla_wrapper.cutlass_mla_decode(*args)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = mla_wrapper.cutlass_mla_decode(*args)
    for seed, lens in ((6, [5000, 1, 0, 64]), (7, [3, 3000, 2500, 5100])):
        y = make_inputs(lens, 16, 64, torch.bfloat16, max_blocks=80, seed=seed)
        x["seq_lens"].copy_(y["seq_lens"])
        x["page_table"].copy_(y["page_table"])
        x["cache"][: y["cache"].shape[0]].copy_(y["cache"])
        x["q_nope"].copy_(y["q_nope"])
        x["q_pe"].copy_(y["q_pe"])
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        y = dict(y, cache=x["cache"], page_table=x["page_table"])
        assert rel_error(out, reference(y)) < 1e-2


@pytest.mark.gpu
@pytest.mark.parametrize("heads", [16, 128])
def test_routed_workspace_too_small_falls_back_or_raises(heads, routed_to, monkeypatch):
    """A workspace below cutlass_mla_get_workspace_size's size (hand-sized for the uniform
    plan) gets the uniform split plan, with the splits that fit; below even one split's plan
    it raises, naming the size."""
    x = make_inputs([4000, 10, 1, 2500], heads, 64, torch.bfloat16, seed=9)
    call = lambda ws, splits: mla_wrapper.cutlass_mla_decode(  # noqa: E731
        x["q_nope"], x["q_pe"], x["cache"], x["seq_lens"], x["page_table"], ws, SM_SCALE, splits)
    ws = torch.empty(64, dtype=torch.uint8, device="cuda")
    with pytest.raises(ValueError, match="workspace: needs \\d+ bytes"):
        call(ws, 8)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    fam = backends.family(routed_to)
    num_ctas = sms * fam.CTAS_PER_SM
    assert ops._routed_layout(4, heads, 8, num_ctas)[3] < ops._balanced_layout(
        4, -(-heads // 64), num_ctas)[3]
    seen = []
    real = ops._uniform_plan_args
    monkeypatch.setattr(ops, "_uniform_plan_args", lambda *a: seen.append(a[8]) or real(*a))
    # sized for the uniform plan's 2 splits but asked for 8: runs with the splits that fit
    for splits, size in ((8, ops._routed_layout(4, heads, 2, num_ctas)[3]), (1, None)):
        ws = torch.empty(size, dtype=torch.uint8, device="cuda") if size else workspace_for(x, 1)
        out = call(ws, splits)
        assert not torch.isnan(out).any() and rel_error(out, reference(x)) < 1e-2
    assert seen == [8]   # (the second call's workspace held the balanced plan)


def test_workspace_size_without_gpu_covers_both_paths():
    for L, B, sms, splits in ((1, 1, 132, 1), (4096, 8, 132, -1), (131072, 1, 148, -1),
                              (65536, 64, 132, 4), (128, 256, 148, 64)):
        n = ops.cutlass_mla_get_workspace_size(L, B, sms, splits) if not torch.cuda.is_available() \
            else None
        if n is None:
            continue
        assert n >= cutlass.get_workspace_size(L, B, sms, splits)
        for tiles in (1, 2):   # the balanced plan at 1-64 and 65-128 heads
            assert n >= ops._balanced_layout(B, tiles, sms)[3]


@pytest.mark.parametrize("B, H, splits", [(1, 16, 1), (1, 128, 1), (2, 128, 4), (64, 128, 1),
                                           (256, 16, 2)])
def test_routed_layout_holds_a_record_per_cta(B, H, splits):
    """The sm90 kernel reads work_info record blockIdx.x before cta_work_indptr (its first-item
    guess): the routed plan's work_info must hold num_ctas records even when the plan has fewer
    items, without taking that room from the partials."""
    num_ctas = 132
    offsets, p_o, p_lse, total = ops._routed_layout(B, H, splits, num_ctas)
    from mla_wrapper import workspace as ws_mod

    assert 4 * (offsets["work_info"] + ws_mod.WORK_FIELDS * num_ctas) <= p_o
    tiles = B * -(-H // 64)
    slots = tiles * splits if splits > 1 else 0
    assert p_lse - p_o == slots * 64 * 512 * 4 and total - p_lse == slots * 64 * 4


def test_workspace_size_validation():
    with pytest.raises(ValueError, match="max_seq_len"):
        ops.cutlass_mla_get_workspace_size(0, 1, 132)
    with pytest.raises(ValueError, match="num_batches"):
        ops.cutlass_mla_get_workspace_size(10, 0, 132)
    with pytest.raises(ValueError, match="num_kv_splits"):
        ops.cutlass_mla_get_workspace_size(10, 1, 132, 300)


def test_routed_split_choice():
    assert ops._routed_num_splits(4096, 1, 132, 1) == 1
    assert ops._routed_num_splits(4096, 1, 132, 7) == 7
    auto = ops._routed_num_splits(4096, 1, 132, -1, num_heads=16)
    assert 1 < auto <= 4096 // 256
    assert ops._routed_num_splits(100, 1, 132, -1) == 1
    assert ops._routed_num_splits(65536, 256, 132, -1) == 1
    # one request (the routed path's uniform plan, splits of whole kv tiles)
    assert ops._routed_num_splits(1024, 1, 132, -1, 16, min_split=64) == 16
    assert ops._routed_num_splits(131072, 1, 132, -1, 16, min_split=64) == 132
    assert ops._routed_num_splits(131072, 1, 132, -1, 128, min_split=64) == 66


def test_decode_validation_on_cpu():
    x = make_inputs([10, 20], 16, 16, torch.bfloat16, device="cpu")
    ws = torch.empty(1024, dtype=torch.uint8)
    call = lambda **kw: mla_wrapper.cutlass_mla_decode(**{**dict(  # noqa: E731
        q_nope=x["q_nope"], q_pe=x["q_pe"], kv_c_and_k_pe_cache=x["cache"],
        seq_lens=x["seq_lens"], page_table=x["page_table"], workspace=ws, sm_scale=SM_SCALE), **kw})
    with pytest.raises(ValueError, match="q_nope.*dtype"):
        call(q_nope=x["q_nope"].float())
    with pytest.raises(ValueError, match="q_nope: head dim must be 512"):
        call(q_nope=torch.zeros(2, 16, 256, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="q_pe.*shape"):
        call(q_pe=x["q_pe"][:, :8])
    with pytest.raises(ValueError, match="power of two"):
        call(kv_c_and_k_pe_cache=torch.zeros(4, 24, 576, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="576"):
        call(kv_c_and_k_pe_cache=torch.zeros(4, 16, 512, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="seq_lens.*int32"):
        call(seq_lens=x["seq_lens"].long())
    with pytest.raises(ValueError, match="page_table.*int32"):
        call(page_table=x["page_table"].long())
    with pytest.raises(ValueError, match="workspace.*CUDA"):
        call()
