"""Context-parallel decode (mla_wrapper.distributed).

CPU: the sharding math (every token on exactly one rank, lengths add up, interleave 1 and
page_size, ragged lengths, ranks with zero tokens), the cache sharding, the reference merged
over shards equals the reference over the whole cache, errors. GPU (marked): W ranks simulated
on one GPU (each shard's wrapper one after another, merged with the kernel), a 1-rank NCCL
group, and a 2-GPU torchrun run of tests/cp_worker.py.
"""
from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mla_wrapper import distributed as cp
from mla_wrapper.reference import merge_states, mla_attention, rel_error

from cp_worker import CASES, compare, graph_case, shard_batch, whole_cache_output
from test_wrapper import SM_SCALE, make_batch

TESTS = Path(__file__).resolve().parent
WORLD_SIZES = [1, 2, 3, 4, 8]
INTERLEAVES = [1, 2, 16, 64]


# ------------------------------------------------------------------------ sharding math
@pytest.mark.parametrize("world_size,interleave", list(itertools.product(WORLD_SIZES, INTERLEAVES)))
def test_every_token_on_exactly_one_rank(world_size, interleave):
    n = 3 * world_size * interleave + 5
    owner, local = cp.token_owner(torch.arange(n), world_size, interleave)
    assert owner.min() >= 0 and owner.max() < world_size
    lens = cp.local_kv_lens([n], world_size, interleave)[:, 0]
    seen = torch.zeros(n, dtype=torch.int64)
    for r in range(world_size):
        mine = torch.nonzero(owner == r).reshape(-1)
        assert mine.numel() == int(lens[r])
        assert torch.equal(local[mine], torch.arange(mine.numel()))    # dense local slots
        g = cp.global_positions(int(lens[r]), r, world_size, interleave)
        assert torch.equal(g, mine)                                     # inverse of token_owner
        seen[g] += 1
    assert torch.equal(seen, torch.ones(n, dtype=torch.int64))


@pytest.mark.parametrize("world_size,interleave", list(itertools.product(WORLD_SIZES, INTERLEAVES)))
def test_local_lengths_add_up_ragged(world_size, interleave):
    g = torch.Generator().manual_seed(world_size * 100 + interleave)
    lens = torch.cat([torch.tensor([0, 1, interleave - 1, interleave, interleave + 1,
                                    world_size * interleave, world_size * interleave + 1]),
                      torch.randint(0, 5000, (20,), generator=g)]).clamp(min=0)
    local = cp.local_kv_lens(lens, world_size, interleave)
    assert local.shape == (world_size, lens.numel()) and local.dtype == torch.int32
    assert torch.equal(local.sum(0).long(), lens)
    for b, L in enumerate(lens.tolist()):   # brute force: count owners
        owner, _ = cp.token_owner(torch.arange(L), world_size, interleave)
        assert torch.equal(torch.bincount(owner, minlength=world_size), local[:, b].long())
    # round robin: no rank holds more than one block more than another
    assert int((local.max(0).values - local.min(0).values).max()) <= interleave


def test_rank_with_zero_tokens_and_layout():
    layout = cp.shard_kv_layout([1, 0, 17, 64, 65], world_size=4, interleave=16, page_size=16)
    assert layout.local_kv_len.tolist() == [[1, 0, 16, 16, 17], [0, 0, 1, 16, 16],
                                            [0, 0, 0, 16, 16], [0, 0, 0, 16, 16]]
    assert layout.local_kv_indptr.tolist() == [[0, 1, 1, 2, 3, 5], [0, 0, 0, 1, 2, 3],
                                               [0, 0, 0, 0, 1, 2], [0, 0, 0, 0, 1, 2]]
    assert [layout.num_pages(r) for r in range(4)] == [5, 3, 2, 2]
    layout.check_local(3, [0, 0, 0, 16, 16])
    with pytest.raises(ValueError, match="do not add up.*request 4 has 16.*expected 17"):
        layout.check_local(0, [1, 0, 16, 16, 16])
    with pytest.raises(ValueError, match="expected 5 requests"):
        layout.check_local(0, [1, 0, 16])
    with pytest.raises(ValueError, match="rank: expected 0..3"):
        layout.check_local(4, [0] * 5)


def test_interleave_page_size_keeps_pages_whole():
    """interleave == page_size: every local page holds one global page's tokens, in order."""
    ps, W = 16, 2
    owner, local = cp.token_owner(torch.arange(10 * ps), W, ps)
    for page in range(10):
        sl = slice(page * ps, (page + 1) * ps)
        assert owner[sl].unique().numel() == 1
        assert torch.equal(local[sl] % ps, torch.arange(ps))


@pytest.mark.parametrize("bad,match", [
    (dict(world_size=0), "world_size: expected an int >= 1"),
    (dict(interleave=0), "interleave: expected an int >= 1"),
    (dict(world_size=2.0), "world_size: expected an int"),
    (dict(kv_lens=[3, -1]), "kv_lens: expected non-negative"),
    (dict(kv_lens=[1.5]), "kv_lens: expected integers"),
    (dict(kv_lens=[[1, 2]]), "kv_lens: expected a 1-d"),
    (dict(page_size=0), "page_size: expected an int >= 1"),
])
def test_sharding_errors(bad, match):
    args = dict(kv_lens=[5, 6], world_size=2, interleave=1, page_size=16)
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        cp.shard_kv_layout(**args)


def test_global_positions_errors():
    with pytest.raises(ValueError, match="rank: expected 0..1"):
        cp.global_positions(3, 2, 2, 1)


# --------------------------------------------------------------------- cache sharding (CPU)
@pytest.mark.parametrize("world_size,interleave,page_size", [(2, 1, 16), (2, 16, 16), (3, 4, 16),
                                                            (4, 64, 64), (2, 1, 1)])
def test_shard_paged_cache_places_every_token(world_size, interleave, page_size):
    lens = [0, 1, 37, 200, 5]
    b = make_batch(lens, 1, 2, page_size, torch.float32, seed=7, device="cpu")
    # a cache whose first channel is (request, position) encoded, at each token's slot
    P = b["ckv"].shape[0]
    cache = torch.full((P, page_size, 3), -1.0)
    for r, L in enumerate(lens):
        for t in range(L):
            page = int(b["kv_indices"][int(b["kv_indptr"][r]) + t // page_size])
            cache[page, t % page_size, 0] = r * 1000 + t
    layout = cp.shard_kv_layout(lens, world_size, interleave, page_size)
    seen = []
    for rank in range(world_size):
        (local,), indptr, indices, kv_len = cp.shard_paged_cache(layout, rank, (cache,),
                                                                 b["kv_indptr"], b["kv_indices"])
        assert local.shape == (max(layout.num_pages(rank), 1), page_size, 3)
        assert torch.equal(kv_len, layout.local_kv_len[rank])
        assert torch.equal(indptr, layout.local_kv_indptr[rank])
        for r in range(len(lens)):
            L = int(kv_len[r])
            pages = indices[int(indptr[r]):int(indptr[r + 1])].long()
            vals = local[pages].reshape(-1, 3)[:L, 0]
            want = cp.global_positions(L, rank, world_size, interleave) + r * 1000
            assert torch.equal(vals.long(), want)
            seen += vals.long().tolist()
    assert sorted(seen) == sorted(r * 1000 + t for r, L in enumerate(lens) for t in range(L))


def test_shard_paged_cache_errors():
    layout = cp.shard_kv_layout([5, 6], 2, 1, 16)
    cache = torch.zeros(4, 16, 8)
    idx = torch.arange(4, dtype=torch.int32)
    with pytest.raises(ValueError, match="kv_indptr: expected 3 entries"):
        cp.shard_paged_cache(layout, 0, (cache,), [0, 1], idx)
    with pytest.raises(ValueError, match="rank: expected 0..1"):
        cp.shard_paged_cache(layout, 2, (cache,), [0, 1, 2], idx)
    with pytest.raises(ValueError, match=r"caches\[0\]: expected shape \[\*, 16, \*\]"):
        cp.shard_paged_cache(layout, 0, (torch.zeros(4, 8, 8),), [0, 1, 2], idx)


def chain_reference_merge(outs, lses):
    """Reference merge of W partial states (the first merged with an empty one, so W = 1 also
    gets the empty-row rule)."""
    v, s = torch.zeros_like(outs[0], dtype=torch.float64), torch.full_like(lses[0], -math.inf)
    for o, l in zip(outs, lses):
        v, s = merge_states(v, s, o, l, base_e=False)
    return v, s


@pytest.mark.parametrize("world_size,interleave,page_size", [(2, 1, 16), (2, 16, 16), (3, 1, 1),
                                                            (4, 8, 16), (8, 64, 64)])
def test_reference_merged_over_shards_equals_whole(world_size, interleave, page_size):
    """Torch only: reference attention per shard, merged (base-2 LSE), equals the reference
    over the whole cache; ranks with zero tokens of a request contribute o = 0, lse = -inf."""
    lens = [0, 1, 5, 130, 700]
    b = make_batch(lens, 1, 4, page_size, torch.float32, seed=world_size + interleave, device="cpu")
    args = lambda s: (s["q_nope"], s["q_pe"], s["ckv"], s["kpe"], s["qo_indptr"],  # noqa: E731
                      s["kv_indptr"], s["kv_indices"], s["kv_len"], page_size, False, SM_SCALE,
                      torch.float64)
    whole_o, whole_s = mla_attention(*args(b))
    outs, lses = zip(*(mla_attention(*args(shard_batch(b, world_size, interleave, r)))
                       for r in range(world_size)))
    assert any(torch.isneginf(l).any() for l in lses)   # some rank holds nothing of request 1
    v, s = chain_reference_merge(list(outs), list(lses))
    assert rel_error(v, whole_o) < 1e-12
    assert rel_error(s, whole_s) < 1e-12


# ------------------------------------------------------------------ wrapper errors (CPU)
def test_wrapper_needs_initialized_group():
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is already initialized")
    with pytest.raises(RuntimeError, match="init_process_group"):
        cp.ContextParallelMLAWrapper(torch.empty(16, dtype=torch.uint8))


@pytest.mark.parametrize("bad,match", [(dict(exchange="ring"), "exchange: expected one of"),
                                       (dict(output_heads="some"), "output_heads: expected"),
                                       (dict(interleave=0), "interleave: expected an int >= 1")])
def test_wrapper_argument_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        cp.ContextParallelMLAWrapper(torch.empty(16, dtype=torch.uint8), **bad)


@pytest.fixture
def gloo_group(tmp_path):
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is already initialized")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_wrapper_rejects_cpu_workspace(gloo_group):
    with pytest.raises(ValueError, match="float_workspace_buffer: expected a CUDA tensor"):
        cp.ContextParallelMLAWrapper(torch.empty(16, dtype=torch.uint8))


def test_wrapper_needs_workspace_or_wrapper(gloo_group):
    with pytest.raises(ValueError, match="pass exactly one"):
        cp.ContextParallelMLAWrapper()


class ReferenceWrapper:
    """A CPU stand-in for the paged wrapper (reference attention), for gloo runs."""

    device = torch.device("cpu")

    def plan(self, qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads, head_dim_ckv,
             head_dim_kpe, page_size, causal, sm_scale, q_data_type, kv_data_type):
        self.args = (qo_indptr, kv_indptr, kv_indices, kv_len_arr, page_size, causal, sm_scale)

    def run(self, q_nope, q_pe, ckv, kpe, out=None, lse=None, return_lse=False):
        o, s = mla_attention(q_nope, q_pe, ckv, kpe, *self.args)
        o, s = (o if out is None else out.copy_(o)), (s if lse is None else lse.copy_(s))
        return (o, s) if return_lse else o


def torch_merge_partials(v, s, v_out=None, s_out=None):
    """merge_partials without the kernel (chained reference merges)."""
    mv, ms = chain_reference_merge(list(v), list(s))
    mv, ms = mv.to(v.dtype), ms.float()
    return (mv if v_out is None else v_out.copy_(mv)), (ms if s_out is None else s_out.copy_(ms))


GLOO_CASES = [([1, 0, 300, 17, 64], 12, 16, 1), ([5, 130, 2], 12, 16, 16), ([3], 12, 4, 8)]


def gloo_rank(rank, world_size, store):
    """One rank of a CPU gloo group: the exchange + merge logic of every mode against the
    reference over the whole cache (the kernel merge is swapped for the torch one)."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank,
                            world_size=world_size)
    cp.merge_partials = torch_merge_partials
    try:
        for k, (lens, heads, page_size, interleave) in enumerate(GLOO_CASES):
            b = make_batch(lens, 1, heads, page_size, torch.float32, seed=k, device="cpu")
            ref_o, ref_s = mla_attention(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"],
                                         b["qo_indptr"], b["kv_indptr"], b["kv_indices"],
                                         b["kv_len"], page_size, False, SM_SCALE)
            s = shard_batch(b, world_size, interleave, rank)
            for exchange, output_heads in itertools.product(cp.EXCHANGES, ("all", "shard")):
                w = cp.ContextParallelMLAWrapper(wrapper=ReferenceWrapper(), interleave=interleave,
                                                 exchange=exchange, output_heads=output_heads)
                w.plan(s["qo_indptr"], s["kv_indptr"], s["kv_indices"], s["kv_len"], heads, 512,
                       64, page_size, False, SM_SCALE, torch.float32, torch.float32,
                       layout=s["layout"])
                out, lse = w.run(s["q_nope"], s["q_pe"], s["ckv"], s["kpe"], return_lse=True)
                kept = out.clone(), lse.clone()
                w.run(-s["q_nope"], s["q_pe"], s["ckv"], s["kpe"], return_lse=True)
                assert torch.equal(out, kept[0]) and torch.equal(lse, kept[1])  # no aliasing
                h = heads // world_size if output_heads == "shard" else heads
                h0 = rank * h if output_heads == "shard" else 0
                err = (rel_error(out, ref_o[:, h0:h0 + h]), rel_error(lse, ref_s[:, h0:h0 + h]))
                assert max(err) < 1e-5, (rank, k, exchange, output_heads, err)
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_gloo_ranks_exchange_and_merge(tmp_path, world_size):
    """W CPU processes over gloo: all_gather / all_to_all x all / shard heads give the whole
    cache's attention (zero-token ranks included)."""
    torch.multiprocessing.spawn(gloo_rank, args=(world_size, str(tmp_path / "store")),
                                nprocs=world_size)


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_merge_partials_chain_cpu(monkeypatch, world_size):
    """merge_partials' chaining (first merge into the outputs, then in place) with the kernel
    swapped for the reference merge, so it runs on CPU."""
    from mla_wrapper import ops

    def fake_merge_state(v_a, s_a, v_b, s_b, v_merged, s_merged):
        v, s = merge_states(v_a, s_a, v_b, s_b, base_e=False)
        return v_merged.copy_(v), s_merged.copy_(s)

    monkeypatch.setattr(ops, "merge_state", fake_merge_state)
    g = torch.Generator().manual_seed(world_size)
    v = torch.randn(world_size, 5, 3, 8, generator=g)
    s = torch.randn(world_size, 5, 3, generator=g) * 4
    s[0, 1] = -math.inf
    s[:, 2] = -math.inf
    out, lse = cp.merge_partials(v, s)
    rv, rs = chain_reference_merge(list(v), list(s))
    assert rel_error(out, rv) < 1e-6 and rel_error(lse, rs) < 1e-6
    assert torch.equal(out[2], torch.zeros_like(out[2])) and torch.isneginf(lse[2]).all()
    with pytest.raises(ValueError, match="s: expected shape"):
        cp.merge_partials(v, s[:, :4])


# ---------------------------------------------------------------------------------- GPU
def simulate_ranks(b, world_size, interleave, workspace):
    """W ranks on one GPU: each shard's wrapper one after another, merged with the kernel."""
    outs, lses = [], []
    for r in range(world_size):
        o, l = whole_cache_output(shard_batch(b, world_size, interleave, r), workspace)
        outs.append(o)
        lses.append(l)
    return cp.merge_partials(torch.stack(outs), torch.stack(lses))


@pytest.fixture(scope="module")
def workspace():
    return torch.empty(128 << 20, dtype=torch.uint8, device="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("world_size", [2, 3, 4, 8])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_simulated_ranks_equal_whole_cache(workspace, world_size, case):
    lens, heads, page_size, interleave = CASES[case]
    b = make_batch(lens, 1, heads, page_size, torch.bfloat16, seed=case * 10 + world_size)
    ref_o, ref_s = whole_cache_output(b, workspace)
    out, lse = simulate_ranks(b, world_size, interleave, workspace)
    why = compare(out, lse, ref_o, ref_s, torch.bfloat16)
    assert not why, why


@pytest.mark.gpu
@pytest.mark.parametrize("world_size", [1, 2, 5])
def test_merge_partials_matches_reference(world_size):
    g = torch.Generator().manual_seed(world_size)
    v = torch.randn(world_size, 33, 16, 512, generator=g).to(torch.bfloat16).cuda()
    s = (torch.randn(world_size, 33, 16, generator=g) * 4).cuda()
    s[0, :5] = -math.inf                                  # empty partials, one row all empty
    s[:, 7] = -math.inf
    out, lse = cp.merge_partials(v, s)
    rv, rs = chain_reference_merge(list(v), list(s))
    assert rel_error(out, rv) < 1e-2 and rel_error(lse, rs) < 1e-5
    assert torch.equal(out[7], torch.zeros_like(out[7]))


@pytest.fixture
def nccl_group(tmp_path):
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is already initialized")
    if not dist.is_nccl_available():
        pytest.skip("torch built without NCCL")
    dist.init_process_group("nccl", init_method=f"file://{tmp_path}/store", rank=0, world_size=1,
                            device_id=torch.device("cuda", torch.cuda.current_device()))
    yield
    dist.destroy_process_group()


@pytest.mark.gpu
@pytest.mark.parametrize("exchange", cp.EXCHANGES)
@pytest.mark.parametrize("output_heads", ["all", "shard"])
def test_one_rank_nccl_group(workspace, nccl_group, exchange, output_heads):
    lens, heads, page_size, interleave = CASES[1]
    b = make_batch(lens, 1, heads, page_size, torch.bfloat16, seed=3)
    ref_o, ref_s = whole_cache_output(b, workspace)
    s = shard_batch(b, 1, interleave, 0)
    w = cp.ContextParallelMLAWrapper(workspace, interleave=interleave, exchange=exchange,
                                     output_heads=output_heads)
    w.plan(s["qo_indptr"], s["kv_indptr"], s["kv_indices"], s["kv_len"], heads, 512, 64,
           page_size, False, SM_SCALE, torch.bfloat16, torch.bfloat16, layout=s["layout"])
    out, lse = w.run(s["q_nope"], s["q_pe"], s["ckv"], s["kpe"], return_lse=True)
    assert not compare(out, lse, ref_o, ref_s, torch.bfloat16)
    assert torch.equal(w.run(s["q_nope"], s["q_pe"], s["ckv"], s["kpe"]), out)


@pytest.mark.gpu
@pytest.mark.parametrize("exchange", cp.EXCHANGES)
@pytest.mark.parametrize("output_heads", ["all", "shard"])
def test_one_rank_nccl_group_cuda_graph(workspace, nccl_group, exchange, output_heads):
    """run() captured in a CUDA graph over a use_cuda_graph wrapper, re-planned twice with other
    lengths and replayed (the 2-GPU version runs in cp_worker.py)."""
    why = graph_case(workspace, 0, 1, exchange, output_heads)
    assert not why, why


@pytest.mark.gpu
def test_one_rank_group_errors(workspace, nccl_group):
    b = make_batch([100, 5], 1, 16, 16, torch.bfloat16, seed=4)
    s = shard_batch(b, 1, 1, 0)
    w = cp.ContextParallelMLAWrapper(workspace)
    plan_args = (s["qo_indptr"], s["kv_indptr"], s["kv_indices"], s["kv_len"], 16, 512, 64, 16,
                 False, SM_SCALE, torch.bfloat16, torch.bfloat16)
    with pytest.raises(RuntimeError, match="before plan"):
        w.run(s["q_nope"], s["q_pe"], s["ckv"], s["kpe"])
    with pytest.raises(ValueError, match="layout: built for world_size 2.*group has 1"):
        w.plan(*plan_args, layout=cp.shard_kv_layout([100, 5], 2, 1, 16))
    with pytest.raises(ValueError, match="layout: interleave 16"):
        w.plan(*plan_args, layout=cp.shard_kv_layout([100, 5], 1, 16, 16))
    with pytest.raises(ValueError, match="do not add up"):
        w.plan(*plan_args, layout=cp.shard_kv_layout([100, 6], 1, 1, 16))
    with pytest.raises(ValueError, match="causal"):
        w.plan(torch.tensor([0, 2, 4], dtype=torch.int32), *plan_args[1:8], True, *plan_args[9:])
    w.plan(*plan_args, layout=s["layout"])
    with pytest.raises(ValueError, match="ckv_cache: expected this rank's device"):
        w.run(s["q_nope"], s["q_pe"], s["ckv"].cpu(), s["kpe"])


two_gpus = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                              reason="needs 2 GPUs")


@pytest.mark.gpu
@two_gpus
def test_two_gpus_torchrun():
    """tests/cp_worker.py under torchrun on 2 GPUs: every case, both exchanges, both outputs,
    and run() captured in a CUDA graph, re-planned and replayed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(TESTS.parent)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc-per-node", "2", str(TESTS / "cp_worker.py")],
                          env=env, capture_output=True, text=True, timeout=900)
    print(proc.stdout[-6000:])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "world_size 2, 0 failures" in proc.stdout
