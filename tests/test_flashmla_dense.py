"""FlashMLA's dense decode call, flash_mla_with_kvcache without indices (ops.flash_mla_dense):
argument errors (CPU), and on the GPU the output and lse against the reference for each planned
family, the balanced plan written on the GPU (device_plan/balanced.cuh) against its invariants,
the scheduling metadata's reuse within a step, and CUDA-graph capture and replay."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from mla_wrapper import backends, flash_mla_with_kvcache, get_mla_metadata, ops
from mla_wrapper import workspace as ws_mod
from mla_wrapper.reference import mla_attention, rel_error
from test_cutlass_mla_api import make_inputs  # noqa: E402 (the suite's page-pool generator)

SCALE = 1.0 / math.sqrt(192)
TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3}


def make_case(lens, s_q, heads, page_size, dtype=torch.bfloat16, seed=0, max_blocks=None,
              device="cuda"):
    """FlashMLA's tensors over test_cutlass_mla_api's shuffled page pool: q [b, s_q, h, 576],
    k_cache [blocks, page, 1, 576], block_table, cache_seqlens; lens as a list."""
    x = make_inputs(lens, s_q * heads, page_size, dtype, max_blocks=max_blocks, seed=seed,
                    device=device)
    return dict(q=x["q"].view(len(lens), s_q, heads, 576), k_cache=x["cache"].unsqueeze(2),
                block_table=x["page_table"], cache_seqlens=x["seq_lens"], lens=list(lens),
                s_q=s_q, page_size=page_size)


def reference(x, causal):
    """(out [b, s_q, h, 512], lse [b, h, s_q] natural log, +inf where a row sees no key)."""
    q = x["q"].float()
    b, s_q, h, _ = q.shape
    table = x["block_table"]
    q3 = q.reshape(b * s_q, h, 576)
    cache = x["k_cache"][:, :, 0]
    out, lse2 = mla_attention(q3[..., :512], q3[..., 512:], cache[..., :512], cache[..., 512:],
                              torch.arange(b + 1) * s_q, torch.arange(b + 1) * table.shape[1],
                              table.reshape(-1), torch.tensor(x["lens"]), x["page_size"],
                              causal and s_q > 1, SCALE)
    lse = (lse2 * math.log(2.0)).view(b, s_q, h).transpose(1, 2)
    lse = torch.where(torch.isneginf(lse), torch.full_like(lse, math.inf), lse)
    return out.view(b, s_q, h, 512), lse


def check(out, lse, x, causal):
    ref_o, ref_lse = reference(x, causal)
    assert not torch.isnan(out).any() and not torch.isnan(lse).any()
    err = rel_error(out.float(), ref_o)
    assert err < TOL[out.dtype], f"out rel error {err}"
    finite = torch.isfinite(ref_lse)
    assert rel_error(lse[finite], ref_lse[finite]) < 2e-3, "lse"
    assert torch.isposinf(lse[~finite]).all(), "lse of a row that sees no key"
    assert (out.float()[~finite.transpose(1, 2)] == 0).all(), "out of a row that sees no key"


def call(x, sched=None, causal=False, out=None):
    return flash_mla_with_kvcache(x["q"], x["k_cache"], x["block_table"], x["cache_seqlens"],
                                  512, sched, None, SCALE, causal, out=out)


@pytest.fixture
def family(monkeypatch, planned_backend):
    """Run the dense call on the planned family under test (the GPU's own otherwise)."""
    monkeypatch.setattr(ops, "_routed_family", lambda device: backends.family(planned_backend))
    return planned_backend


# ------------------------------------------------------------------------------- CPU tests
def test_dense_argument_errors():
    sched, splits = get_mla_metadata(torch.zeros(2, dtype=torch.int32), 16, 1)
    assert splits is None and sched._dense is None
    q = torch.zeros(2, 1, 16, 576, dtype=torch.bfloat16)
    cache = torch.zeros(10, 64, 1, 576, dtype=torch.bfloat16)
    table = torch.zeros(2, 4, dtype=torch.int32)
    lens = torch.zeros(2, dtype=torch.int32)
    run = lambda **kw: flash_mla_with_kvcache(**{**dict(  # noqa: E731
        q=q, k_cache=cache, block_table=table, cache_seqlens=lens, head_dim_v=512,
        tile_scheduler_metadata=sched), **kw})
    with pytest.raises(ValueError, match="attn_sink: applies to sparse decode"):
        run(attn_sink=torch.zeros(16))
    with pytest.raises(ValueError, match="topk_length: applies to sparse decode"):
        run(topk_length=lens)
    with pytest.raises(ValueError, match="is_fp8_kvcache: dense decode reads a 16-bit cache"):
        run(is_fp8_kvcache=True)
    with pytest.raises(ValueError, match="head_dim_v: only 512"):
        run(head_dim_v=448)
    with pytest.raises(ValueError, match="q: expected dtype"):
        run(q=q.float())
    with pytest.raises(ValueError, match=r"q: expected \[b, s_q, h_q, 576\]"):
        run(q=torch.zeros(2, 1, 16, 512, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="q: h_q must be in 1..128"):
        run(q=torch.zeros(2, 1, 129, 576, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r"k_cache: expected \[num_blocks, page_block_size, 1, 576\]"):
        run(k_cache=torch.zeros(10, 64, 2, 576, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="k_cache: expected dtype"):
        run(k_cache=cache.half())
    with pytest.raises(ValueError, match="block_table: required"):
        run(block_table=None)
    with pytest.raises(ValueError, match="cache_seqlens: required"):
        run(cache_seqlens=None)
    with pytest.raises(ValueError, match="block_table: expected dtype"):
        run(block_table=table.long())
    with pytest.raises(ValueError, match=r"block_table: expected 2 rows"):
        run(block_table=torch.zeros(3, 4, dtype=torch.int32))
    with pytest.raises(ValueError, match="cache_seqlens: expected shape"):
        run(cache_seqlens=torch.zeros(3, dtype=torch.int32))
    with pytest.raises(ValueError, match="q: expected a CUDA tensor"):
        run()


@pytest.mark.parametrize("b, tiles, ctas", [(1, 1, 132), (64, 2, 132), (1500, 2, 132),
                                            (3, 200, 132), (7, 4, 148)])
def test_balanced_layout_capacities(b, tiles, ctas):
    """The workspace holds the plan's worst case: items T (B + groups) (and a record per CTA),
    cut requests' slots 2 groups T, merges B T, B + 1 int64 prefixes."""
    offsets, p_o, p_lse, total = ops._balanced_layout(b, tiles, ctas)
    group = tiles if tiles <= ctas else 1
    groups = ctas // group
    items = max(tiles * (b + groups), ctas)
    assert offsets["scratch"] - offsets["work_info"] >= ws_mod.WORK_FIELDS * items
    assert offsets["work_info"] - offsets["merge_info"] >= ws_mod.MERGE_FIELDS * b * tiles
    assert 4 * (offsets["scratch"] + 2 * (b + 1)) <= p_o and offsets["scratch"] % 2 == 0
    slots = min(items, 2 * groups * tiles)
    assert p_lse - p_o == slots * 64 * 512 * 4 and total - p_lse == slots * 64 * 4


# ------------------------------------------------------------------------------- GPU tests
def decode_plan(schedule, b, tiles, num_ctas):
    """The plan a DenseSchedule's workspace holds, as numpy arrays."""
    offsets, *_ = ops._balanced_layout(b, tiles, num_ctas)
    ws = schedule.workspace.cpu().numpy().view(np.int32)
    counts = ws[offsets["counts"]: offsets["counts"] + 4]
    indptr = ws[offsets["cta_work_indptr"]: offsets["cta_work_indptr"] + num_ctas + 1]
    work = ws[offsets["work_info"]: offsets["work_info"] + counts[0] * ws_mod.WORK_FIELDS]
    merges = ws[offsets["merge_info"]: offsets["merge_info"] + counts[1] * ws_mod.MERGE_FIELDS]
    return counts, indptr, work.reshape(-1, ws_mod.WORK_FIELDS), \
        merges.reshape(-1, ws_mod.MERGE_FIELDS)


@pytest.mark.gpu
@pytest.mark.parametrize("lens, s_q, heads", [
    ([4096] * 64, 1, 16),                     # sm90: a request per cluster pair, halves
    ([4000 + 3 * i for i in range(64)], 2, 16),   # the same with MTP rows (one row tile)
    ([1000] * 64, 1, 128),                    # uniform, a request per pair of CTAs: no cuts
    ([4096] * 128, 1, 128),                   # two requests a pair
    ([16384] * 64, 1, 128),                   # just past a share: kept whole
    ([1024], 1, 16),                          # one request over many CTAs
    ([5, 0, 70000, 1, 3000, 64, 65], 1, 16),  # ragged, empty, long
    ([0, 0, 0], 1, 64),                       # nothing to read
    (list(range(0, 1500 * 37, 37)), 1, 32),   # > one CTA's worth of requests (scan carries)
    ([100, 4000, 7], 2, 128),                 # MTP: four row tiles, causal limits
    ([3, 900, 64], 4, 16),                    # MTP in one row tile
    ([4096] * 16, 1, 128),                    # request-aligned pieces: four a request
    ([4096] * 16, 1, 16),                     # the same over 132 single-CTA groups
    ([3000 + 997 * i for i in range(8)], 1, 128),    # ragged, request-aligned
    ([70000, 5, 20000, 0], 1, 64),            # few long requests, an empty one
    ([2048] * 4, 1, 16),                      # aligned pieces of two tiles (one fill each)
    ([1024] * 256, 1, 16),                    # more requests than CTAs, uniform: none cut
    ([600 + (i % 7) for i in range(500)], 1, 128),   # near-uniform: boundaries at request ends
    ([(i * 7919) % 9000 for i in range(300)], 1, 16),  # ragged: the stream's cuts
])
def test_balanced_plan_invariants(lens, s_q, heads, planned_backend):
    """Each (request, row tile)'s visible kv range is covered once, in order, by its items; a
    CTA's items are consecutive; a request cut in n pieces has n consecutive slots per row
    tile and one merge item each; requests within a quarter share are never cut; no group
    runs more than a share and a quarter; where request-aligned pieces of X units fit (two
    fills <= X <= a share and a fill), each request is cut in ceil(kv tiles / (X - fill))
    near-equal pieces, one a group; with more requests than groups and every boundary moved
    to the nearer request end within a share and an eighth a group, no request is cut."""
    b, device = len(lens), torch.device("cuda")
    width = max(max(-(-L // 64) for L in lens), 1)   # (only the lengths and the table's width)
    seqlens = torch.tensor(lens, dtype=torch.int32, device=device)
    table = torch.zeros(b, width, dtype=torch.int32, device=device)
    fam = backends.family(planned_backend)   # (sm90 plans may hold cluster pairs)
    plan_mod, attn_mod = ops._device_plan_modules(fam, torch.bfloat16, device)
    causal = s_q > 1
    sched = ops._balanced_plan(plan_mod, fam, attn_mod, None, seqlens, table, b, s_q, heads,
                               causal, device)
    num_ctas = torch.cuda.get_device_properties(device).multi_processor_count
    tiles = -(-s_q * heads // 64)
    counts, indptr, work, merges = decode_plan(sched, b, tiles, num_ctas)
    assert counts[2] == b and indptr[0] == 0 and indptr[-1] == counts[0]
    assert (np.diff(indptr) >= 0).all()
    group = tiles if tiles <= num_ctas else 1
    pieces = {}
    for c in range(num_ctas):
        for w in work[indptr[c]: indptr[c + 1]]:
            r, t, k0, k1, slot = (int(v) for v in w[:5])
            assert tuple(w[5:]) == (r * s_q, s_q, lens[r], r * width)
            assert t % group == c % group, "a row tile on its group's CTA"
            pieces.setdefault((r, t), []).append((k0, k1, slot, c))
    assert len(pieces) == b * tiles
    merge_of = {(int(m[0]), int(m[1])): (int(m[2]), int(m[3])) for m in merges}
    assert len(merge_of) == len(merges)
    fixed = 1 + -(-2 * min(s_q * heads, 64) // 64)
    groups = num_ctas // group
    cap = max(-(-sum(fixed + -(-L // 64) for L in lens) // groups), 1)
    for (r, t), ps in pieces.items():
        L = lens[r]
        last_row = min((t + 1) * 64, s_q * heads) - 1
        vis = min(max(L - s_q + last_row // heads + 1, 0), L) if causal else L
        ps.sort(key=lambda p: p[0])
        assert ps[0][0] == 0 and ps[-1][1] == vis
        assert all(a[1] == b_[0] for a, b_ in zip(ps, ps[1:])), "pieces tile the range"
        assert all(p[0] % 64 == 0 for p in ps)
        if any(p[2] < -1 for p in ps):   # a cluster pair: halves on CTAs 2k, 2k + 1, no merge
            assert planned_backend == "sm90" and len(ps) == 2 and (r, t) not in merge_of
            (_, _, s0, c0), (_, _, s1, c1) = ps
            assert (s0, s1) == (-2, -3) and c0 % 2 == 0 and c1 == c0 + 1
            assert indptr[c0 + 1] - indptr[c0] == 1 and indptr[c1 + 1] - indptr[c1] == 1
        elif len(ps) == 1:
            assert ps[0][2] == -1 and (r, t) not in merge_of
        else:
            first, n = merge_of[(r, t)]
            assert n == len(ps) and sorted(p[2] for p in ps) == list(range(first, first + n))
        if fixed + -(-L // 64) <= 2 * (cap // 8) and ps[0][2] >= -1:
            assert len(ps) == 1, f"request {r} ({L} tokens) cut though within a quarter share"
    pairs = planned_backend == "sm90" and tiles == 1 and 2 * b <= num_ctas and \
        min(-(-L // 64) for L in lens) >= 4 and \
        fixed + (max(-(-L // 64) for L in lens) + 1) // 2 <= cap + cap // 8
    assert pairs == all(int(w[4]) < -1 for w in work), "cluster pairs exactly where they fit"
    kv_tiles = [-(-L // 64) for L in lens]
    one_each = b <= groups and fixed + max(kv_tiles) <= cap + cap // 8
    split = lambda x: [-(-k // (x - fixed)) if k else 1 for k in kv_tiles]  # noqa: E731
    fit = [x for x in range(2 * fixed, cap + fixed + 1) if sum(split(x)) <= groups]
    if not pairs and not one_each and b <= groups and fit:   # request-aligned pieces
        n = split(fit[0])
        for (r, t), ps in pieces.items():
            assert len(ps) == n[r], f"request {r}: {len(ps)} pieces, expected {n[r]}"
            if not causal:
                sizes = [-(-(p[1] - p[0]) // 64) for p in ps]
                assert max(sizes) - min(sizes) <= 1 and max(sizes) <= fit[0] - fixed, sizes
        assert max(np.diff(indptr)) <= tiles // group, "one piece a group"
    if b > groups:   # boundaries at the nearer request ends where no group then passes cap + 1/8
        ends = np.cumsum([0] + [fixed + k for k in kv_tiles])
        bound = [0]
        for g in range(1, groups):
            x = min(g * cap, int(ends[-1]))
            r = int(np.searchsorted(ends, x, side="right")) - 1
            bound.append(x if x >= ends[-1] else
                         int(ends[r]) if x - ends[r] <= ends[r + 1] - x else int(ends[r + 1]))
        bound.append(int(ends[-1]))
        if max(np.diff(bound)) <= cap + cap // 8:
            assert len(merges) == 0 and all(len(ps) == 1 for ps in pieces.values()), "uncut"
    # a group runs at most cap + cap / 4 units (its pieces' kv tiles and fixed units)
    for c in range(0, num_ctas, group):
        units = sum(-(-(int(w[3]) - int(w[2])) // 64) + fixed
                    for w in work[indptr[c]: indptr[c + 1]] if int(w[1]) == c % group)
        assert units <= cap + 2 * (cap // 8) + 2 * fixed, f"CTA {c}: {units} units, share {cap}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("heads", [16, 64, 128])
@pytest.mark.parametrize("page_size", [1, 64])
def test_dense_decode_matches_reference(dtype, heads, page_size, family, poison):
    lens = [1, 0, 64, 65, 1000, 4097, 333, 2]
    x = make_case(lens, 1, heads, page_size, dtype, seed=heads + page_size)
    out = poison(torch.empty(len(lens), 1, heads, 512, dtype=dtype, device="cuda"))
    sched, _ = get_mla_metadata()
    o, lse = call(x, sched, out=out)
    assert o is out and lse.shape == (len(lens), heads, 1) and lse.is_contiguous()
    check(o, lse, x, False)


@pytest.mark.gpu
@pytest.mark.parametrize("s_q, heads", [(2, 16), (2, 128), (4, 32), (3, 64)])
def test_dense_decode_mtp_causal(s_q, heads, family, poison):
    """s_q > 1 with causal (query i sees keys [0, L - s_q + i]) and without; lengths shorter
    than s_q leave the first queries' rows empty (out 0, lse +inf)."""
    lens = [1, 700, 64, 2, 5000]
    x = make_case(lens, s_q, heads, 64, seed=s_q * heads)
    for causal in (True, False):
        out = poison(torch.empty(len(lens), s_q, heads, 512, dtype=torch.bfloat16, device="cuda"))
        o, lse = call(x, None, causal=causal, out=out)
        assert lse.shape == (len(lens), heads, s_q)
        check(o, lse, x, causal)


@pytest.mark.gpu
@pytest.mark.parametrize("heads, s_q", [(16, 1), (64, 1), (16, 2)])
def test_dense_decode_cluster_pairs(heads, s_q, family, poison):
    """Batches that fill the GPU with near-equal requests of one row tile: on sm90 each runs on
    a cluster pair, halves merged on chip (the plan holds only pair slots); the output and lse
    against the reference either way."""
    lens = [4096 - 5 * i for i in range(64)]   # (half of the CTAs' pairs' worth, near-equal)
    x = make_case(lens, s_q, heads, 64, seed=heads + s_q)
    out = poison(torch.empty(len(lens), s_q, heads, 512, dtype=torch.bfloat16, device="cuda"))
    sched, _ = get_mla_metadata()
    o, lse = call(x, sched, causal=s_q > 1, out=out)
    check(o, lse, x, s_q > 1)
    if family == "sm90":
        num_ctas = torch.cuda.get_device_properties(0).multi_processor_count
        counts, indptr, work, merges = decode_plan(sched._dense, len(lens), 1, num_ctas)
        assert counts[0] == 2 * len(lens) and counts[1] == 0
        assert (work[:, 4] < -1).all()


@pytest.mark.gpu
def test_dense_schedule_reused_within_a_step(family):
    """The step's later calls (other layers: new q and cache, same lengths and page table)
    reuse the plan its first call wrote; a new metadata object plans again, and so does a call
    with other lengths tensors."""
    x = make_case([3000, 17, 800, 64 * 40 + 1], 1, 128, 64, seed=1)
    sched, _ = get_mla_metadata()
    o1, lse1 = call(x, sched)
    first = sched._dense
    pdl = 1 if backends.pdl_enabled() else 0
    # (the first call's attention waits for the plan kernel before reading the plan: mode 2)
    assert first.args.enable_pdl == 2 * pdl
    check(o1, lse1, x, False)
    y = make_case(x["lens"], 1, 128, 64, seed=2, max_blocks=x["block_table"].shape[1])
    y["block_table"], y["cache_seqlens"] = x["block_table"], x["cache_seqlens"]
    o2, lse2 = call(y, sched)
    assert sched._dense is first, "the step's plan is reused"
    assert first.args.enable_pdl == pdl   # (the plan was written by an earlier kernel)
    check(o2, lse2, y, False)
    other = dict(x, cache_seqlens=x["cache_seqlens"].clone())
    call(other, sched)
    assert sched._dense is not first, "other lengths tensors plan again"


@pytest.mark.gpu
def test_dense_decode_cuda_graph(family):
    """Captured with the metadata's first call inside the capture (its plan kernel is part of
    the graph) and with no metadata: replays follow new lengths, page tables, q and cache."""
    b, heads, max_blocks = 5, 128, 90
    x = make_case([700, 20, 4000, 1, 0], 1, heads, 64, seed=3, max_blocks=max_blocks)
    out = torch.empty(b, 1, heads, 512, dtype=torch.bfloat16, device="cuda")
    call(x, None, out=out)   # (builds the libraries outside the capture)
    torch.cuda.synchronize()
    for with_meta in (True, False):
        sched = get_mla_metadata()[0] if with_meta else None
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            _, lse = call(x, sched, out=out)
        for seed, lens in ((4, [5000, 1, 0, 64, 5700]), (5, [3, 3000, 2500, 5100, 9])):
            y = make_case(lens, 1, heads, 64, seed=seed, max_blocks=max_blocks)
            for k in ("q", "block_table", "cache_seqlens"):
                x[k].copy_(y[k])
            x["k_cache"][: y["k_cache"].shape[0]].copy_(y["k_cache"])
            out.fill_(float("nan"))
            lse.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            check(out, lse, dict(x, lens=lens), False)
