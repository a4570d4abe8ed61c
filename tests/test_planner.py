"""The split-KV planner (CPU): invariants on random batches, balance, bounds, validation.

Builds the host-only planner library with nvcc once (marked `compile`; no GPU needed). Every
plan is checked by an independent NumPy re-derivation (check_plan): coverage of every
(query row, visible kv token) exactly once per tile by interval arithmetic, outputs always
written, merge list consistent with the partial slots, capacities respected (nothing written
past them), the balance bound, and the planner's own statistics.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from mla_wrapper import planner
from mla_wrapper.planner import CostModel, Planner, plan_arrays
from mla_wrapper.workspace import WORK_FIELDS, WorkspaceLayout, row_tiles_bound

pytestmark = pytest.mark.compile

SENTINEL = -7


def make_batch(kv_lens, qo_lens=1, page_size=64, extra_pages=0, rng=None):
    kv = np.asarray(kv_lens, dtype=np.int64)
    B = kv.shape[0]
    q = np.broadcast_to(np.asarray(qo_lens, dtype=np.int64), (B,))
    qo_indptr = np.zeros(B + 1, np.int32)
    qo_indptr[1:] = np.cumsum(q)
    pages = (kv + page_size - 1) // page_size
    if extra_pages and rng is not None:
        pages = pages + rng.integers(0, extra_pages + 1, B)
    kv_indptr = np.zeros(B + 1, np.int32)
    kv_indptr[1:] = np.cumsum(pages)
    return qo_indptr, kv_indptr, kv.astype(np.int32)


def layout_for(qo_indptr, num_heads, num_ctas, rows_per_tile=64, kv_tile=64, slack=0):
    q = np.diff(qo_indptr.astype(np.int64))
    tiles = int(np.sum(-(-(q * num_heads) // rows_per_tile)))
    return WorkspaceLayout(max_batch=len(q) + slack, max_row_tiles=tiles + slack,
                           num_ctas=num_ctas, rows_per_tile=rows_per_tile, kv_tile=kv_tile)


def expected_tiles(qo_indptr, kv_len, H, R, causal):
    """(request, tile index, rows, visible kv length) of every row tile, by brute force over
    the tile's rows (max over rows of the row's visible length)."""
    out = []
    q = np.diff(qo_indptr.astype(np.int64))
    for r in range(len(kv_len)):
        rows = int(q[r]) * H
        L = int(kv_len[r])
        for t in range(-(-rows // R)):
            row_ids = np.arange(t * R, min((t + 1) * R, rows))
            tok = row_ids // H
            vis = np.clip(L - q[r] + tok + 1, 0, L) if causal else np.full(tok.shape, L)
            out.append((r, t, len(row_ids), int(vis.max())))
    return out


def merge_pairs(w, ind, cost):
    """Work items with each cluster pair (plan.h mlaw_pair_slot: slot -2 - (2 (s + 1) + high),
    s = -1: the pair writes out, else its partial slot) checked and replaced by the one piece it
    merges. Returns (items, CTA of each item (a pair: its low half's), number of pairs)."""
    C = len(ind) - 1
    n_items = np.diff(ind)
    cta_of = np.repeat(np.arange(C), n_items)
    keep, out, pairs = [], [], 0
    i = 0
    while i < len(w):
        if w[i, 4] >= -1:
            keep.append(w[i].copy())
            out.append(cta_of[i])
            i += 1
            continue
        assert cost.pair_merge, "pair slots only in plans made with pair_merge"
        code = -2 - int(w[i, 4])
        assert code % 2 == 0, "a pair starts with its low half"
        assert i + 1 < len(w) and -2 - int(w[i + 1, 4]) == code + 1, "then its high half"
        c = cta_of[i]
        assert c % 2 == 0 and cta_of[i + 1] == c + 1, "the halves run on CTAs 2k, 2k + 1"
        assert n_items[c] == n_items[c + 1] == 1, "each half is its CTA's only item"
        assert (w[i, 0], w[i, 1]) == (w[i + 1, 0], w[i + 1, 1]), "one tile"
        assert w[i, 3] == w[i + 1, 2] and w[i, 2] < w[i, 3] and w[i + 1, 2] < w[i + 1, 3]
        assert w[i, 3] % 64 == 0, "cut at a kv tile"
        merged = w[i].copy()
        merged[3] = w[i + 1, 3]
        merged[4] = code // 2 - 1
        keep.append(merged)
        out.append(c)
        pairs += 1
        i += 2
    return np.array(keep, dtype=np.int64).reshape(-1, 5), np.array(out, dtype=np.int64), pairs


def check_plan(d, res, buf, qo_indptr, kv_indptr, kv_len, H, causal, layout, cost, min_chunk):
    """Independent checks of one plan; returns per-CTA costs."""
    B = len(kv_len)
    C, R, K = layout.num_ctas, layout.rows_per_tile, layout.kv_tile
    q = np.diff(qo_indptr.astype(np.int64))
    nw, nm = int(d.counts[0]), int(d.counts[1])
    assert list(d.counts) == [nw, nm, B, int(q.sum()) * H]
    assert nw == res.num_work_items and nm == res.num_merge_items
    assert res.copy_bytes == (layout.work_info_offset + nw * WORK_FIELDS) * 4

    # capacities, and nothing written past what is used
    assert nw <= layout.max_work_items and nm <= layout.max_merge_items
    assert res.num_partial_slots <= layout.max_partial_slots
    assert np.all(buf[layout.work_info_offset + nw * WORK_FIELDS:] == SENTINEL)
    # (a pair-merged tile's merge item was written, then dropped: the list shrank by one)
    n_pairs = int(np.sum(d.work_info[:, 4] == -2))
    assert np.all(buf[layout.merge_info_offset + (nm + n_pairs) * 4: layout.work_info_offset]
                  == SENTINEL)
    assert np.all(buf[layout.request_info_offset + B * 4: layout.merge_info_offset] == SENTINEL)
    assert np.all(buf[layout.cta_work_indptr_offset + C + 1: layout.request_info_offset] == SENTINEL)

    # request_info, and its copy in every work item (plan.h kWorkQoStart..kWorkPageStart)
    ri = d.request_info
    assert np.array_equal(ri[:, 0], qo_indptr[:-1]) and np.array_equal(ri[:, 1], q)
    assert np.array_equal(ri[:, 2], kv_len) and np.array_equal(ri[:, 3], kv_indptr[:-1])
    assert d.work_info.shape == (nw, WORK_FIELDS)
    assert np.array_equal(d.work_info[:, 5:], ri[d.work_info[:, 0]])

    # per-CTA ranges
    ind = d.cta_work_indptr
    assert ind.shape == (C + 1,) and ind[0] == 0 and ind[-1] == nw and np.all(np.diff(ind) >= 0)

    # every row tile, covered exactly once by pieces partitioning its visible range
    tiles = expected_tiles(qo_indptr, kv_len, H, R, causal)
    assert res.num_row_tiles == len(tiles)
    w, cta, pairs = merge_pairs(d.work_info[:, :5].astype(np.int64), ind, cost)
    order = np.lexsort((w[:, 2], w[:, 1], w[:, 0]))
    ws = w[order]
    key = ws[:, 0] * (1 << 32) + ws[:, 1]
    exp_key = np.array([r * (1 << 32) + t for r, t, _, _ in tiles], dtype=np.int64)
    uniq, first, counts = np.unique(key, return_index=True, return_counts=True)
    assert np.array_equal(uniq, exp_key), "every row tile gets work, and only real tiles do"
    exp_len = np.array([v for _, _, _, v in tiles], dtype=np.int64)
    exp_rows = np.array([n for _, _, n, _ in tiles], dtype=np.int64)
    last = first + counts - 1
    assert np.all(ws[first, 2] == 0), "pieces start at kv 0"
    assert np.all(ws[last, 3] == exp_len), "pieces end at the tile's visible length"
    same = key[1:] == key[:-1]
    assert np.all(ws[1:, 2][same] == ws[:-1, 3][same]), "pieces are contiguous, no gap/overlap"
    assert np.all(ws[:, 3] >= ws[:, 2])
    split_tile = np.repeat(counts > 1, counts)
    assert np.all(ws[split_tile, 3] - ws[split_tile, 2] >= min_chunk), "pieces >= min_chunk"
    cuts = ws[1:, 2][same]
    assert np.all(cuts % K == 0), "cuts at multiples of kv_tile"
    # direct write iff the tile is not split (a cluster pair counts as the piece it merges)
    assert np.all(ws[~split_tile, 4] == -1)
    assert np.all(ws[split_tile, 4] >= 0)

    # merge list: one per split tile, slots consecutive in kv order, disjoint, in capacity
    m = d.merge_info.astype(np.int64)
    assert nm == int(np.sum(counts > 1))
    if nm:
        mkey = m[:, 0] * (1 << 32) + m[:, 1]
        assert len(np.unique(mkey)) == nm
        assert np.array_equal(np.sort(mkey), uniq[counts > 1])
        pos = {int(k): i for i, k in enumerate(uniq)}
        for (mr, mt, first_slot, n), mk in zip(m, mkey):
            i = pos[int(mk)]
            assert counts[i] == n
            slots = ws[first[i]: first[i] + n, 4]
            assert np.array_equal(slots, np.arange(first_slot, first_slot + n))
        all_slots = ws[split_tile, 4]
        assert len(np.unique(all_slots)) == len(all_slots)
        # (a tile that pair_merges took left its two slots unused)
        assert len(all_slots) == res.num_partial_slots or (pairs and len(all_slots) < res.num_partial_slots)
        assert all_slots.max() < layout.max_partial_slots
    else:
        assert res.num_partial_slots == 0 or pairs

    # per-CTA cost from the cost model, recomputed
    tile_idx = np.searchsorted(uniq, w[:, 0] * (1 << 32) + w[:, 1])
    rows = exp_rows[tile_idx]
    split_w = np.isin(w[:, 0] * (1 << 32) + w[:, 1], uniq[counts > 1])
    item_cost = (w[:, 3] - w[:, 2]) + cost.fixed + cost.fixed_per_row * rows \
        + np.where(split_w, cost.split_per_row * rows, 0)
    loads = np.bincount(cta, weights=item_cost, minlength=C)
    if not pairs:  # (the statistics are those of the plan before its pairs were made)
        assert int(loads.max()) == res.max_cta_cost
        assert int(loads.sum()) == res.total_cost

    # the proven bound
    whole = exp_len + cost.fixed + cost.fixed_per_row * exp_rows
    w0 = int(whole.sum())
    assert res.lower_bound == -(-w0 // C)
    fmax = cost.fixed + cost.fixed_per_row * R
    smax = cost.split_per_row * R
    if cost.allow_split:
        bound = -(-(w0 + (C - 1) * (fmax + 2 * smax)) // C) + fmax + smax + 2 * min_chunk + K \
            + cost.merge_launch
    else:
        bound = -(-w0 // C) + int(whole.max(initial=0))
    assert res.max_cta_cost <= bound
    return loads


def expected_min_chunk(cost, qo_indptr, kv_len, H, num_ctas, R, K):
    """The shortest piece the planner uses for this batch (planner.h, before its sweep)."""
    min_chunk = max(K, -(-cost.min_chunk // K) * K)
    lmax = int(np.max(kv_len)) if len(kv_len) else 0
    q = np.diff(np.asarray(qo_indptr, np.int64))
    kv = np.asarray(kv_len, np.int64)
    units = int(np.sum(np.where((q > 0) & (kv > 0), -(-(q * H) // R) * -(-kv // K), 0)))
    cap = -(-lmax // cost.min_chunk_div) if cost.min_chunk_div > 0 else None
    if cost.fine_split_div > 0 and units <= num_ctas // cost.fine_split_div:  # a small batch
        return max(K, -(-(cap or 1) // K) * K)
    if cost.min_chunk_sqrt > 0:  # the length-dependent shortest piece
        want = math.ceil(cost.min_chunk_sqrt * math.sqrt(lmax))
        want = min(want, cap) if cap is not None else want
        min_chunk = max(min_chunk, -(-max(want, 1) // K) * K)
    return min_chunk


def run_and_check(qo_indptr, kv_indptr, kv_len, H, causal, num_ctas=132, R=64, K=64,
                  cost=None, page_size=64, layout=None):
    layout = layout or layout_for(qo_indptr, H, num_ctas, R, K)
    cost = cost or planner.DEFAULT_COST
    # a guard zone past the layout's end must stay untouched too
    buf = np.full(layout.int_workspace_elems + 256, SENTINEL, np.int32)
    res = Planner(layout, H, page_size, causal, cost).plan(qo_indptr, kv_indptr, kv_len, buf)
    d = planner.decode(layout, buf)
    min_chunk = expected_min_chunk(cost, qo_indptr, kv_len, H, num_ctas, R, K)
    loads = check_plan(d, res, buf, qo_indptr, kv_indptr, kv_len, H, causal, layout, cost,
                       min_chunk)
    return d, res, loads


# ------------------------------------------------------------------------------ cases
LENGTH_KINDS = ("zeros", "ones", "small", "random", "nonmult", "equal", "skewed", "mixed0")


def lengths(kind, B, rng):
    if kind == "zeros":
        return np.zeros(B, np.int64)
    if kind == "ones":
        return np.ones(B, np.int64)
    if kind == "small":
        return rng.integers(0, 300, B)
    if kind == "random":
        return rng.integers(1, 8193, B)
    if kind == "nonmult":
        return rng.integers(1, 200, B) * 64 + rng.integers(1, 64, B)
    if kind == "equal":
        return np.full(B, int(rng.integers(1, 20000)))
    if kind == "skewed":
        kv = rng.integers(1, 2049, B)
        kv[rng.integers(0, B)] = 131072
        return kv
    if kind == "mixed0":
        kv = rng.integers(0, 5000, B)
        kv[rng.random(B) < 0.3] = 0
        return kv
    raise AssertionError(kind)


@pytest.mark.parametrize("seed", range(40))
def test_random_batches(seed):
    rng = np.random.default_rng(seed)
    B = int(rng.choice([1, 2, 3, 7, 32, 100, 128, 257, 512]))
    H = int(rng.choice([16, 32, 64, 128]))
    causal = bool(rng.integers(0, 2))
    qo = rng.integers(1, 5, B) if rng.random() < 0.5 else int(rng.integers(1, 5))
    kind = LENGTH_KINDS[seed % len(LENGTH_KINDS)]
    kv = lengths(kind, B, rng)
    num_ctas = int(rng.choice([1, 2, 8, 132, 264]))
    page_size = int(rng.choice([1, 16, 64]))
    qo_indptr, kv_indptr, kv_len = make_batch(kv, qo, page_size, extra_pages=2, rng=rng)
    run_and_check(qo_indptr, kv_indptr, kv_len, H, causal, num_ctas, page_size=page_size)


@pytest.mark.parametrize("B", [1, 2048])
@pytest.mark.parametrize("H", [16, 128])
def test_batch_extremes(B, H):
    rng = np.random.default_rng(B + H)
    qo_indptr, kv_indptr, kv_len = make_batch(rng.integers(0, 8193, B))
    run_and_check(qo_indptr, kv_indptr, kv_len, H, False)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("qo_len", [1, 4])
def test_one_million_tokens(causal, qo_len):
    qo_indptr, kv_indptr, kv_len = make_batch([1 << 20], qo_len)
    d, res, loads = run_and_check(qo_indptr, kv_indptr, kv_len, 128, causal)
    assert res.num_merge_items == 2 * qo_len  # every tile split across the GPU
    assert loads.max() <= 1.02 * loads.mean()


@pytest.mark.parametrize("R,K", [(64, 64), (32, 32), (128, 64), (64, 48), (16, 16)])
def test_tile_shapes(R, K):
    rng = np.random.default_rng(R * 1000 + K)
    for causal in (False, True):
        qo_indptr, kv_indptr, kv_len = make_batch(rng.integers(0, 9000, 50), rng.integers(1, 5, 50))
        run_and_check(qo_indptr, kv_indptr, kv_len, 64, causal, 132, R, K)


def test_causal_rows_that_see_nothing():
    # qo_len > kv_len: the first queries see no token; the tile still gets an item
    qo_indptr, kv_indptr, kv_len = make_batch([0, 2, 3, 1000], [4, 4, 4, 4])
    d, res, _ = run_and_check(qo_indptr, kv_indptr, kv_len, 16, True)
    tiles = {(int(r), int(t)): (int(s), int(e)) for r, t, s, e, _ in d.work_info[:, :5]}
    assert tiles[(0, 0)] == (0, 0) and tiles[(1, 0)] == (0, 2)


def test_brute_force_coverage_small():
    """Per (row, token) counting on small batches: each visible pair exactly once."""
    rng = np.random.default_rng(7)
    for _ in range(30):
        B, H = int(rng.integers(1, 6)), int(rng.choice([16, 32, 128]))
        causal = bool(rng.integers(0, 2))
        q = rng.integers(1, 4, B)
        qo_indptr, kv_indptr, kv_len = make_batch(rng.integers(0, 1500, B), q)
        d, _, _ = run_and_check(qo_indptr, kv_indptr, kv_len, H, causal, int(rng.choice([4, 16, 132])))
        for r in range(B):
            L, rows = int(kv_len[r]), int(q[r]) * H
            seen = np.zeros((rows, max(L, 1)), np.int32)
            for _, t, s, e, _ in d.work_info[d.work_info[:, 0] == r][:, :5]:
                for row in range(t * 64, min((t + 1) * 64, rows)):
                    i = row // H
                    lim = min(max(L - int(q[r]) + i + 1, 0), L) if causal else L
                    seen[row, s:min(e, lim)] += 1
            for row in range(rows):
                i = row // H
                lim = min(max(L - int(q[r]) + i + 1, 0), L) if causal else L
                assert np.all(seen[row, :lim] == 1) and np.all(seen[row, lim:] == 0)


# --------------------------------------------------------------------------- balance
@pytest.mark.parametrize("H", [16, 32, 64, 128])
def test_skewed_batch_balanced(H):
    """One 128k request among 127 short ones: every CTA within a few percent of the mean."""
    rng = np.random.default_rng(H)
    kv = np.r_[131072, rng.integers(1, 4097, 127)]
    rng.shuffle(kv)
    qo_indptr, kv_indptr, kv_len = make_batch(kv)
    d, res, loads = run_and_check(qo_indptr, kv_indptr, kv_len, H, False)
    assert loads.max() <= 1.05 * loads.mean(), (loads.max(), loads.mean())
    assert res.num_merge_items > 0


@pytest.mark.parametrize("H,B,L", [(16, 128, 4096), (128, 128, 4096), (128, 264, 4096),
                                   (64, 132, 1000), (16, 528, 2000), (32, 600, 777)])
def test_no_split_when_batch_fills_gpu(H, B, L):
    qo_indptr, kv_indptr, kv_len = make_batch([L] * B)
    d, res, loads = run_and_check(qo_indptr, kv_indptr, kv_len, H, False)
    assert res.num_merge_items == 0 and res.num_partial_slots == 0
    assert np.all(d.work_info[:, 4] == -1)


@pytest.mark.parametrize("H,qo,B,kinds,causal", [
    (128, 1, 128, "equal", False), (128, 1, 200, "random", False), (128, 2, 96, "random", False),
    (64, 4, 300, "skewed", False), (128, 1, 64, "random", False), (128, 1, 1, "equal", False),
    (128, 2, 20, "random", False),
    # the two row tiles of each query token (H=128) when a request's tiles differ or its
    # 8 tiles do not divide the 132 CTAs
    (128, 2, 48, "random", True), (128, 4, 30, "random", False), (128, 4, 40, "skewed", True),
    (128, "varlen", 50, "random", False), (128, "varlen", 50, "random", True)])
def test_row_tiles_of_a_request_run_in_lockstep(H, qo, B, kinds, causal):
    # Groups of G alike row tiles: all of a request's qo * H / 64 tiles when they are equal and
    # G divides the 132 CTAs, else the H / 64 tiles of each query token. The planner gives CTAs
    # G v .. G v + G - 1 the same (request, kv range) sequence, tile g of the group each, so the
    # G tiles read the same KV at the same time (L2 serves the repeats instead of DRAM); with
    # fewer tiles than CTAs too (a ragged B=64 at H=128 is cut and a CTA runs several pieces
    # one after another).
    rng = np.random.default_rng(B)
    kv = lengths(kinds, B, rng)
    if qo == "varlen":
        qo = rng.integers(1, 5, B)
        kv = np.maximum(kv, qo)
        G = H // 64
    else:
        kv = np.maximum(kv, qo) if causal else kv
        G = qo * H // 64 if not causal and 132 % (qo * H // 64) == 0 else H // 64
    qo_indptr, kv_indptr, kv_len = make_batch(kv, qo)
    d, res, _ = run_and_check(qo_indptr, kv_indptr, kv_len, H, causal)
    ind, w = d.cta_work_indptr, d.work_info
    assert res.num_work_items > 0
    for v in range(132 // G):
        items = [w[ind[v * G + g]: ind[v * G + g + 1]] for g in range(G)]
        assert np.all(items[0][:, 1] % G == 0)
        for g in range(G):
            assert np.array_equal(items[g][:, [0, 2, 3]], items[0][:, [0, 2, 3]])
            assert np.array_equal(items[g][:, 1], items[0][:, 1] + g)


def test_small_batch_is_split():
    # B=1, kv 8192 on 132 CTAs: split into min_chunk-sized pieces, not one CTA doing all
    qo_indptr, kv_indptr, kv_len = make_batch([8192])
    d, res, loads = run_and_check(qo_indptr, kv_indptr, kv_len, 16, False)
    assert res.num_work_items == 8192 // planner.DEFAULT_COST.min_chunk
    assert res.num_merge_items == 1


def test_min_chunk_respected_and_no_tiny_splits():
    # a request too short to cut into two min_chunk pieces is never split
    qo_indptr, kv_indptr, kv_len = make_batch([2 * planner.DEFAULT_COST.min_chunk - 1])
    d, res, _ = run_and_check(qo_indptr, kv_indptr, kv_len, 16, False)
    assert res.num_work_items == 1 and res.num_merge_items == 0
    cost = CostModel(min_chunk=1024)
    qo_indptr, kv_indptr, kv_len = make_batch([5000])
    d, res, _ = run_and_check(qo_indptr, kv_indptr, kv_len, 16, False, cost=cost)
    assert 2 <= res.num_work_items <= 4


def test_min_chunk_sqrt_scales_pieces_with_length():
    # B=1: pieces of 4 x sqrt(L) tokens (rounded up to the kv tile): 128 at L=1024, 256 at
    # L=4096, 512 at L=16384; the invariants hold with that shortest piece (run_and_check)
    cost = CostModel(min_chunk_sqrt=4)
    for length, piece in ((1024, 128), (4096, 256), (16384, 512), (2500, 256)):
        qo_indptr, kv_indptr, kv_len = make_batch([length])
        d, res, _ = run_and_check(qo_indptr, kv_indptr, kv_len, 16, False, cost=cost)
        ws = d.work_info[: res.num_work_items]
        assert res.num_work_items == -(-length // piece) or \
            np.all(ws[:-1, 3] - ws[:-1, 2] >= piece), (length, res.num_work_items)
        assert np.all(ws[:, 3] - ws[:, 2] >= min(piece, length)), length
        assert res.num_work_items <= -(-length // piece)


@pytest.mark.parametrize("kinds", LENGTH_KINDS)
def test_min_chunk_sqrt_invariants(kinds):
    rng = np.random.default_rng(7)
    kv = lengths(kinds, 24, rng)
    qo_indptr, kv_indptr, kv_len = make_batch(kv)
    run_and_check(qo_indptr, kv_indptr, kv_len, 128, False, cost=CostModel(min_chunk_sqrt=4))
    run_and_check(qo_indptr, kv_indptr, kv_len, 16, True, cost=CostModel(min_chunk_sqrt=9))


SM90_LIKE = CostModel(min_chunk_sqrt=4, min_chunk_div=16, fine_split_div=4)


@pytest.mark.parametrize("H,B,L,piece", [
    (128, 1, 1024, 64),   # 32 kv tiles in all <= 132 / 4: one-tile pieces
    (16, 1, 512, 64),
    (16, 1, 2048, 128),   # small too, but pieces of L / 16
    (128, 2, 1024, 128),  # 64 tiles: min_chunk's floor and the square root (capped at L / 16)
    (64, 4, 2048, 128),   # 4 x sqrt(2048) -> 192, capped at 2048 / 16
    (16, 1, 4096, 256),   # 64 tiles: 4 x sqrt(4096)
    (16, 1, 16384, 512),  # the square root under the cap (1024)
])
def test_small_batches_and_the_piece_cap(H, B, L, piece):
    """fine_split_div / min_chunk_div (the sm90 family's cost): every piece of a cut tile is at
    least `piece` tokens, and the pieces of a lone request are exactly that long (but its last)."""
    qo_indptr, kv_indptr, kv_len = make_batch([L] * B)
    d, res, _ = run_and_check(qo_indptr, kv_indptr, kv_len, H, False, cost=SM90_LIKE)
    ws = d.work_info[: res.num_work_items]
    cut = ws[ws[:, 3] - ws[:, 2] < L]
    assert len(cut) > 0, "the batch is cut"
    assert np.all(cut[:, 3] - cut[:, 2] >= piece)
    if B == 1 and len(cut) == res.num_work_items:
        assert np.min(cut[:, 3] - cut[:, 2]) == piece, (H, L)


@pytest.mark.parametrize("H, B, L", [(128, 1, 1024), (16, 1, 1024), (16, 1, 4096),
                                     (128, 1, 65536), (16, 64, 4096), (16, 64, 1024)])
def test_one_item_ctas_put_their_item_at_their_index(H, B, L):
    """The sm90 kernel reads record c as CTA c's first item before cta_work_indptr[c] arrives
    (sm90/work.cuh CtaStart): plans of one item per busy CTA (B=1's pieces, cluster-pair
    batches) must place CTA c's item at index c, or the guess never holds."""
    from mla_wrapper.backends import sm90

    qo_indptr, kv_indptr, kv_len = make_batch([L] * B)
    d, res, _ = run_and_check(qo_indptr, kv_indptr, kv_len, H, False, cost=sm90.planner_cost())
    ind = d.cta_work_indptr
    busy = np.flatnonzero(np.diff(ind) > 0)
    assert np.all(np.diff(ind)[busy] == 1), "one item per busy CTA"
    assert np.array_equal(ind[busy], busy)


@pytest.mark.parametrize("kinds", LENGTH_KINDS)
def test_small_batch_rules_keep_the_invariants(kinds):
    rng = np.random.default_rng(11)
    for B, H in ((1, 128), (3, 16), (24, 64)):
        kv = lengths(kinds, B, rng)
        qo_indptr, kv_indptr, kv_len = make_batch(kv)
        run_and_check(qo_indptr, kv_indptr, kv_len, H, False, cost=SM90_LIKE)
        run_and_check(qo_indptr, kv_indptr, kv_len, H, True, cost=SM90_LIKE)


def test_small_batch_rules_validated():
    for name in ("min_chunk_div", "fine_split_div"):
        with pytest.raises(ValueError, match=name):
            CostModel(**{name: -1})
        qo_indptr, kv_indptr, kv_len = make_batch([4096])
        with pytest.raises(ValueError, match=name):
            run_and_check(qo_indptr, kv_indptr, kv_len, 16, False, cost=CostModel(**{name: 1 << 31}))


def test_min_chunk_sqrt_validated():
    with pytest.raises(ValueError, match="min_chunk_sqrt"):
        CostModel(min_chunk_sqrt=-1)
    qo_indptr, kv_indptr, kv_len = make_batch([4096])
    with pytest.raises(ValueError, match="min_chunk_sqrt: must be < 16384"):
        run_and_check(qo_indptr, kv_indptr, kv_len, 16, False,
                      cost=CostModel(min_chunk_sqrt=1 << 14))


@pytest.mark.parametrize("H,B,L,qo", [(16, 64, 1024, 1), (16, 64, 4096, 1), (64, 64, 4096, 1),
                                      (16, 64, 4096, 2), (16, 66, 2000, 1), (32, 60, 3000, 1)])
def test_pair_merge_pairs_two_piece_tiles(H, B, L, qo):
    """pair_merge: a batch of about num_ctas / 2 equal requests is cut in two pieces per tile on
    CTAs 2k, 2k + 1; those tiles get pair slots and no merge item (check_plan checks the rest),
    and the plan is otherwise the one made without pair_merge."""
    qo_indptr, kv_indptr, kv_len = make_batch([L] * B, qo)
    base = CostModel(min_chunk_sqrt=4)
    d0, r0, _ = run_and_check(qo_indptr, kv_indptr, kv_len, H, qo > 1, cost=base)
    pair = CostModel(min_chunk_sqrt=4, pair_merge=True)
    d1, r1, _ = run_and_check(qo_indptr, kv_indptr, kv_len, H, qo > 1, cost=pair)
    pairs = int(np.sum(d1.work_info[:, 4] == -2))
    assert pairs > 0 and r1.num_merge_items == r0.num_merge_items - pairs
    assert np.array_equal(d1.cta_work_indptr, d0.cta_work_indptr)
    assert np.array_equal(d1.work_info[:, :4], d0.work_info[:, :4])
    assert r1.max_cta_cost == r0.max_cta_cost


def test_pair_merge_leaves_other_plans_alone():
    """No pair where a CTA runs several items, a tile has more than two pieces on a busy GPU,
    the grid is odd, nothing is cut on a busy GPU, or a small batch has an item of fewer than
    4 kv tiles (B=1 L=1024: 128-token pieces)."""
    pair = CostModel(min_chunk_sqrt=4, pair_merge=True)
    for lens, H, C in (([4096] * 16, 16, 132), ([16384] * 128, 16, 132), ([1024] * 64, 16, 131),
                       ([4096] * 64, 128, 132), ([4096], 128, 131), ([64] * 3, 16, 132),
                       ([1024], 128, 132), ([3000, 100], 16, 132)):
        qo_indptr, kv_indptr, kv_len = make_batch(lens)
        d, _, _ = run_and_check(qo_indptr, kv_indptr, kv_len, H, False, num_ctas=C, cost=pair)
        assert not np.any(d.work_info[:, 4] <= -2), (len(lens), H, C)


def test_pair_halves_replace_a_combine():
    """pair_merge: about num_ctas / 2 equal requests that the sweep cuts into three pieces (and
    the combine then merges) go in two halves on cluster pairs instead when that plan's max CTA
    cost is within merge_launch of the cut plan's (H=16 B=64 L=16384 on 132 CTAs); not where
    halves cost more (H=32 B=60), not for unequal requests, not for halves under 32 kv tiles
    (B=48 L=1024), and not without pair_merge."""
    sm90_like = CostModel(min_chunk_sqrt=4, pair_merge=True, min_chunk_div=16, fine_split_div=4)
    qo_indptr, kv_indptr, kv_len = make_batch([16384] * 64)
    d, r, _ = run_and_check(qo_indptr, kv_indptr, kv_len, 16, False, cost=sm90_like)
    assert r.num_merge_items == 0 and r.num_work_items == 128
    assert np.all(d.work_info[:, 4] <= -2)
    assert np.array_equal(d.cta_work_indptr[:129], np.arange(129))
    w = d.work_info
    assert np.all(w[0::2, 3] - w[0::2, 2] == 8192) and np.all(w[1::2, 3] - w[1::2, 2] == 8192)
    no_pairs = dataclasses.replace(sm90_like, pair_merge=False)
    _, r0, _ = run_and_check(qo_indptr, kv_indptr, kv_len, 16, False, cost=no_pairs)
    assert r0.num_merge_items == 64 and r0.max_cta_cost < r.max_cta_cost <= (
        r0.max_cta_cost + sm90_like.merge_launch)
    for lens, H in (([16384] * 60, 32), ([16384] * 63 + [16000], 16), ([1024] * 48, 16)):
        qo_indptr, kv_indptr, kv_len = make_batch(lens)
        d, r, _ = run_and_check(qo_indptr, kv_indptr, kv_len, H, False, cost=sm90_like)
        assert r.num_merge_items > 0 and not np.any(d.work_info[:, 4] <= -2), (len(lens), H)


@pytest.mark.parametrize("lens,H,qo", [([4096], 128, 1), ([4096], 16, 1), ([8000, 300, 3000], 64, 1),
                                       ([4000], 128, 2), ([3000], 16, 4), ([200], 128, 1),
                                       ([16384], 16, 1)])
def test_pair_split_halves_items_of_a_small_batch(lens, H, qo):
    """pair_merge on a batch that leaves half the CTAs idle (B=1) with items of >= 4 kv tiles:
    every item is cut in two halves at a kv tile on CTAs 2k, 2k + 1, each pair writing what the
    item wrote (out or its partial slot); merge items unchanged (check_plan checks coverage
    through the pairs)."""
    qo_indptr, kv_indptr, kv_len = make_batch(lens, qo)
    base = CostModel(min_chunk_sqrt=4)
    d0, r0, _ = run_and_check(qo_indptr, kv_indptr, kv_len, H, qo > 1, cost=base)
    d1, r1, _ = run_and_check(qo_indptr, kv_indptr, kv_len, H, qo > 1,
                              cost=CostModel(min_chunk_sqrt=4, pair_merge=True))
    assert r1.num_work_items == 2 * r0.num_work_items and r1.num_merge_items == r0.num_merge_items
    assert np.array_equal(d1.merge_info, d0.merge_info)
    w0, w1 = d0.work_info, d1.work_info
    assert np.array_equal(w1[0::2, :3], w0[:, :3]) and np.array_equal(w1[1::2, 3], w0[:, 3])
    out = ((-2 - w1[0::2, 4]) >> 1) - 1
    assert np.array_equal(out, np.where(w0[:, 4] >= 0, w0[:, 4], -1))
    assert np.array_equal(d1.cta_work_indptr[:2 * len(w0) + 1], np.arange(2 * len(w0) + 1))


def test_sm90_family_uses_length_dependent_pieces():
    from mla_wrapper.backends import sm80, sm90
    assert sm90.planner_cost().min_chunk_sqrt == 4
    assert not hasattr(sm80, "planner_cost")  # sm80 keeps the default cost model


def test_allow_split_false():
    qo_indptr, kv_indptr, kv_len = make_batch([100000, 5, 7])
    d, res, _ = run_and_check(qo_indptr, kv_indptr, kv_len, 128, False,
                              cost=CostModel(allow_split=False))
    assert res.num_merge_items == 0 and res.num_work_items == 6


def test_balanced_random_batches():
    """Ragged decode batches large enough to split: max within a few percent of the mean."""
    rng = np.random.default_rng(3)
    for B, H in ((128, 16), (128, 128), (512, 16), (512, 128), (2048, 64)):
        qo_indptr, kv_indptr, kv_len = make_batch(rng.integers(1, 8193, B))
        _, res, loads = run_and_check(qo_indptr, kv_indptr, kv_len, H, False)
        assert loads.max() <= 1.03 * loads.mean(), (B, H, loads.max() / loads.mean())


# ------------------------------------------------------------------ purity and speed
def test_deterministic_and_pure():
    rng = np.random.default_rng(11)
    qo_indptr, kv_indptr, kv_len = make_batch(rng.integers(0, 9000, 300), rng.integers(1, 4, 300))
    layout = layout_for(qo_indptr, 64, 132)
    bufs = []
    for _ in range(3):
        args = [a.copy() for a in (qo_indptr, kv_indptr, kv_len)]
        _, _, buf = plan_arrays(*args, 64, 64, True, layout)
        for a, b in zip(args, (qo_indptr, kv_indptr, kv_len)):
            assert np.array_equal(a, b)  # inputs untouched
        bufs.append(buf)
    assert np.array_equal(bufs[0], bufs[1]) and np.array_equal(bufs[0], bufs[2])
    # a different planner object, a staging buffer with garbage, torch inputs: same plan
    out = np.full(layout.int_workspace_elems, 12345, np.int32)
    res = Planner(layout, 64, 64, True).plan(*(torch.from_numpy(a) for a in
                                               (qo_indptr, kv_indptr, kv_len)), out)
    d0, d1 = planner.decode(layout, bufs[0]), planner.decode(layout, out)
    for f in ("counts", "cta_work_indptr", "work_info", "request_info", "merge_info"):
        assert np.array_equal(getattr(d0, f), getattr(d1, f))


def test_capacity_bounds_adversarial():
    """Capacities hold with the layout sized exactly to the batch, on cut-heavy batches."""
    rng = np.random.default_rng(5)
    for C in (2, 3, 17, 132, 300):
        for kv in (np.full(5, 100000), rng.integers(500, 3000, 400), np.r_[np.full(50, 600), 1 << 19]):
            qo_indptr, kv_indptr, kv_len = make_batch(kv)
            layout = layout_for(qo_indptr, 128, C)
            _, res, _ = run_and_check(qo_indptr, kv_indptr, kv_len, 128, False, C, layout=layout)
            assert res.num_work_items <= res.num_row_tiles + C - 1


def test_empty_batch():
    layout = WorkspaceLayout(max_batch=4, max_row_tiles=8, num_ctas=16)
    qo_indptr, kv_indptr, kv_len = make_batch(np.zeros(0, np.int64))
    d, res, buf = plan_arrays(qo_indptr, kv_indptr, kv_len, 16, 64, False, layout, fill=SENTINEL)
    assert list(d.counts) == [0, 0, 0, 0] and np.all(d.cta_work_indptr == 0)


def test_qo_len_zero_request():
    qo_indptr = np.array([0, 1, 1, 2], np.int32)
    kv_indptr = np.array([0, 1, 2, 3], np.int32)
    kv_len = np.array([5, 6, 7], np.int32)
    d, res, _ = run_and_check(qo_indptr, kv_indptr, kv_len, 16, False, 8)
    assert set(d.work_info[:, 0]) == {0, 2}


def test_functional_plan_matches_planner():
    rng = np.random.default_rng(2)
    qo_indptr, kv_indptr, kv_len = make_batch(rng.integers(0, 5000, 64))
    layout = layout_for(qo_indptr, 16, 132)
    a = np.full(layout.int_workspace_elems, SENTINEL, np.int32)
    b = a.copy()
    r1 = planner.plan(qo_indptr, kv_indptr, kv_len, 16, 64, False, layout, a)
    r2 = Planner(layout, 16, 64, False).plan(qo_indptr, kv_indptr, kv_len, b)
    assert r1 == r2 and np.array_equal(a, b)
    # an int address is accepted (trusted)
    c = np.full_like(a, SENTINEL)
    planner.plan(qo_indptr, kv_indptr, kv_len, 16, 64, False, layout, c.ctypes.data)
    assert np.array_equal(a, c)


def test_row_tiles_bound_holds():
    rng = np.random.default_rng(9)
    for _ in range(200):
        B, H, R = int(rng.integers(1, 50)), int(rng.choice([16, 32, 64, 128])), int(rng.choice([32, 64, 128]))
        q = rng.integers(0, 6, B)
        tiles = int(np.sum(-(-(q * H) // R)))
        assert tiles <= row_tiles_bound(B, int(q.sum()), H, R)


def test_plan_speed_smoke():
    """Loose CI guard (the measured numbers live in benchmarks/results/plan.jsonl)."""
    import time

    rng = np.random.default_rng(0)
    qo_indptr, kv_indptr, kv_len = make_batch(rng.integers(1, 8193, 128))
    layout = WorkspaceLayout.for_batch(128, 128, 128, 132)
    p = Planner(layout, 128, 64, False)
    out = np.zeros(layout.int_workspace_elems, np.int32)
    times = []
    for _ in range(300):
        t0 = time.perf_counter()
        p.plan(qo_indptr, kv_indptr, kv_len, out)
        times.append(time.perf_counter() - t0)
    assert np.median(times) < 200e-6


# ------------------------------------------------------------------------ validation
@pytest.fixture
def small():
    qo_indptr, kv_indptr, kv_len = make_batch([10, 20, 30], 1, 16)
    layout = WorkspaceLayout(max_batch=8, max_row_tiles=16, num_ctas=8)
    out = np.zeros(layout.int_workspace_elems, np.int32)
    return Planner(layout, 16, 16, False), qo_indptr, kv_indptr, kv_len, out


def test_error_int64(small):
    p, qo, kvp, kvl, out = small
    with pytest.raises(ValueError, match=r"qo_indptr: expected int32, got int64 .*astype"):
        p.plan(qo.astype(np.int64), kvp, kvl, out)
    with pytest.raises(ValueError, match=r"kv_len_arr: expected int32, got int64 \(convert with \.int\(\)\)"):
        p.plan(torch.from_numpy(qo), torch.from_numpy(kvp), torch.from_numpy(kvl).long(), out)


def test_error_lengths_inconsistent(small):
    p, qo, kvp, kvl, out = small
    with pytest.raises(ValueError, match=r"qo_indptr: expected 4 entries .* got 3"):
        p.plan(qo[:-1], kvp, kvl, out)
    with pytest.raises(ValueError, match=r"kv_indptr: expected 4 entries"):
        p.plan(qo, np.r_[kvp, 9].astype(np.int32), kvl, out)


def test_error_negative_and_decreasing(small):
    p, qo, kvp, kvl, out = small
    bad = kvl.copy()
    bad[1] = -4
    with pytest.raises(ValueError, match=r"kv_len_arr: negative length -4 for request 1"):
        p.plan(qo, kvp, bad, out)
    badq = qo.copy()
    badq[2] = 0
    with pytest.raises(ValueError, match=r"qo_indptr: must be non-decreasing"):
        p.plan(badq, kvp, kvl, out)
    badk = kvp.copy()
    badk[1] = 99
    with pytest.raises(ValueError, match=r"kv_indptr: must be non-decreasing"):
        p.plan(qo, badk, kvl, out)


def test_error_not_enough_pages(small):
    p, qo, kvp, kvl, out = small
    bad = kvl.copy()
    bad[2] = 33  # page_size 16: needs 3 pages, has 2
    with pytest.raises(ValueError, match=r"kv_indptr: request 2 has 2 pages .* needs 3 pages"):
        p.plan(qo, kvp, bad, out)


def test_error_batch_over_capacity(small):
    p, *_ , out = small
    qo, kvp, kvl = make_batch(np.ones(9, np.int64), 1, 16)
    with pytest.raises(ValueError, match=r"batch size 9 exceeds the CUDA-graph capacity 8 set at construction"):
        p.plan(qo, kvp, kvl, out)


def test_error_row_tiles_over_capacity(small):
    p, *_ , out = small
    qo, kvp, kvl = make_batch(np.ones(5, np.int64), 16, 16)  # 5 x ceil(16 * 16 / 64) = 20 > 16
    with pytest.raises(ValueError, match=r"needs 20 row tiles .* holds 16"):
        p.plan(qo, kvp, kvl, out)


def test_error_bad_arrays(small):
    p, qo, kvp, kvl, out = small
    with pytest.raises(ValueError, match=r"kv_len_arr: expected a 1-d"):
        p.plan(qo, kvp, kvl.reshape(3, 1), out)
    with pytest.raises(ValueError, match=r"qo_indptr: must be contiguous"):
        p.plan(np.repeat(qo, 2)[::2], kvp, kvl, out)
    with pytest.raises(ValueError, match=r"qo_indptr: expected a host \(CPU\) tensor"):
        p.plan(torch.empty(4, dtype=torch.int32, device="meta"), kvp, kvl, out)
    with pytest.raises(ValueError, match=r"kv_indptr: expected an int32 numpy array or CPU torch tensor"):
        p.plan(qo, list(kvp), kvl, out)
    with pytest.raises(ValueError, match=r"out: staging buffer needs"):
        p.plan(qo, kvp, kvl, np.zeros(10, np.int32))
    ro = qo.copy()
    ro.setflags(write=False)  # read-only inputs are fine
    p.plan(ro, kvp, kvl, out)


def test_error_bad_config():
    layout = WorkspaceLayout(max_batch=8, max_row_tiles=16, num_ctas=8)
    with pytest.raises(ValueError, match=r"num_heads: expected an int >= 1"):
        Planner(layout, 0, 16, False)
    with pytest.raises(ValueError, match=r"CostModel.fixed: expected an int >= 0"):
        CostModel(fixed=-1)


def test_double_buffered_staging():
    """Alternating staging buffers (the wrapper double-buffers) each get the full plan."""
    rng = np.random.default_rng(4)
    layout = WorkspaceLayout.for_batch(64, 64, 16, 132)
    p = Planner(layout, 16, 64, False)
    bufs = [np.full(layout.int_workspace_elems, SENTINEL, np.int32) for _ in range(3)]
    for step in range(9):
        qo_indptr, kv_indptr, kv_len = make_batch(rng.integers(0, 5000, 64))
        out = bufs[step % 2] if step < 6 else bufs[2 - step % 2]
        res = p.plan(qo_indptr, kv_indptr, kv_len, out)
        ref = np.full_like(out, SENTINEL)
        assert Planner(layout, 16, 64, False).plan(qo_indptr, kv_indptr, kv_len, ref) == res
        d0, d1 = planner.decode(layout, out), planner.decode(layout, ref)
        for f in ("counts", "cta_work_indptr", "work_info", "request_info", "merge_info"):
            assert np.array_equal(getattr(d0, f), getattr(d1, f))


def test_galloping_sweep_matches_linear(host_program):
    """The search's galloping sweep (prefix sums; large batches) decides exactly as the
    linear sweep that emits the plan: compile a driver against planner.h and compare."""
    run = host_program(r'''
#include "mla_wrapper/planner/planner.h"
#include <random>
using namespace mlaw::planner;
int main() {
  std::mt19937 g(5);
  long bad = 0, n = 0;
  for (int trial = 0; trial < 1500; trial++) {
    int T = 1 + g() % 3000, C = 1 + g() % 300;
    int maxlen = (g() % 2) ? 600 : 20000, m = 64 * (1 + g() % 8), kv = (g() % 2) ? 64 : 48;
    std::vector<Tile> tiles(T);
    std::vector<int64_t> P(T + 1, 0);
    for (int i = 0; i < T; i++) {
      int rows = 1 + g() % 64;
      tiles[i] = Tile{int32_t(g() % maxlen), 64 + 2 * rows, 4 * rows, i};
      P[i + 1] = P[i] + tiles[i].fixed + tiles[i].len;
    }
    for (int k = 0; k < 8; k++) {
      int64_t cap = P[T] / C + int64_t(g() % 3000) - 1000;
      if (cap < 1) cap = 1;
      PassResult a = sweep<true, false, false>(tiles.data(), T, C, cap, m, kv, nullptr);
      PassResult b = sweep<true, false, true>(tiles.data(), T, C, cap, m, kv, nullptr, P.data());
      PassResult c = sweep<false, false, false>(tiles.data(), T, C, cap, m, kv, nullptr);
      PassResult d = sweep<false, false, true>(tiles.data(), T, C, cap, m, kv, nullptr, P.data());
      n += 2;
      bad += a.max_load != b.max_load || a.open_load != b.open_load || a.total != b.total ||
             a.num_closed != b.num_closed;
      bad += c.max_load != d.max_load || c.open_load != d.open_load || c.total != d.total ||
             c.num_closed != d.num_closed;
    }
  }
  std::printf("%ld %ld\n", n, bad);
  return bad != 0;
}
''', "-O2", "-cudart=none")
    assert run.returncode == 0, run.stdout


@pytest.mark.parametrize("H,qo,page_size", [(16, 1, 16), (16, 1, 64), (64, 1, 128), (16, 2, 64)])
def test_paced_gpu_test_batch_plans_short_single_items(H, qo, page_size):
    """tests/test_wrapper.py::test_paced_kv_loads must reach the sm90 producer's paced loads:
    on a 132-SM GPU its batch (16 requests of ~4000 tokens) has to plan at least 75% of the
    CTAs busy, each with a single item of 2..16 kv tiles (sm90/work.cuh kPacedMinItemsPct,
    kPacedMinTiles, kPacedMaxTiles). A planner change that breaks this
    would leave that GPU test checking nothing new."""
    from test_wrapper import PACED_LENS

    from mla_wrapper.backends import sm90

    qo_indptr, kv_indptr, kv_len = make_batch(PACED_LENS, qo, page_size=page_size)
    d, res, _ = run_and_check(qo_indptr, kv_indptr, kv_len, H, qo > 1, num_ctas=132,
                              cost=sm90.planner_cost(), page_size=page_size)
    assert res.num_work_items * 100 >= 132 * 75
    items = np.diff(d.cta_work_indptr[:133])
    assert set(items.tolist()) <= {0, 1}
    w = d.work_info[d.cta_work_indptr[:132][items == 1]]
    tiles = (w[:, 3] - w[:, 2] + 63) // 64
    assert tiles.min() >= 2 and tiles.max() <= 16
