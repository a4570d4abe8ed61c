"""BatchMLAPagedAttentionWrapper end to end against reference.mla_attention.

GPU tests (marked) run the whole DESIGN.md grid on fresh random data with NaN-poisoned
outputs; CPU tests cover backend selection and the errors that need no GPU.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from conftest import planned_backends
from mla_wrapper import backends
from mla_wrapper.reference import mla_attention, rel_error

SM_SCALE = 1.0 / math.sqrt(192)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3}


def make_batch(kv_lens, qo_len, heads, page_size, dtype, fused_cache=True, seed=0, device="cuda"):
    """Random inputs; pages of every request scattered over the cache in random order."""
    g = torch.Generator().manual_seed(seed)
    B = len(kv_lens)
    lens = torch.tensor(kv_lens, dtype=torch.int32)
    pages = (lens + page_size - 1) // page_size
    kv_indptr = torch.zeros(B + 1, dtype=torch.int32)
    kv_indptr[1:] = torch.cumsum(pages, 0)
    total = int(kv_indptr[-1])
    num_pages = total + 3
    kv_indices = torch.randperm(num_pages, generator=g)[:total].to(torch.int32)
    qo_lens = [qo_len] * B if isinstance(qo_len, int) else list(qo_len)
    qo_indptr = torch.tensor([0] + list(np.cumsum(qo_lens)), dtype=torch.int32)
    T = int(qo_indptr[-1])
    if fused_cache:
        cache = (torch.randn(num_pages, page_size, 576, generator=g) * 0.5).to(dtype).to(device)
        ckv, kpe = cache[..., :512], cache[..., 512:]
    else:
        ckv = (torch.randn(num_pages, page_size, 512, generator=g) * 0.5).to(dtype).to(device)
        kpe = (torch.randn(num_pages, page_size, 64, generator=g) * 0.5).to(dtype).to(device)
    q = torch.randn(T, heads, 576, generator=g).to(dtype).to(device)
    return dict(qo_indptr=qo_indptr, kv_indptr=kv_indptr, kv_indices=kv_indices.to(device),
                kv_len=lens, q_nope=q[..., :512], q_pe=q[..., 512:], ckv=ckv, kpe=kpe,
                heads=heads, page_size=page_size, dtype=dtype)


FP8 = torch.float8_e4m3fn
# lse (base 2) against the reference over an fp8 (e4m3) cache, on its dequantized values: the
# sm90 kernel widens e4m3 to f16 exactly and runs its GEMMs in f16, each query row converted
# times a power of two, its rope columns times kpe_scale / ckv_scale (one f16 rounding an
# element), and P in f16 (sessions before 43: bf16 operands for bf16 queries, the rope block
# of the cache multiplied, ~3e-3 of score noise); 16-bit caches are held to 1e-3 relative.
LSE_REL_TOL_FP8 = 2e-3
LSE_ABS_TOL_FP8 = 0.05


def scales(b):
    """run()'s keyword arguments for batch b's cache scales (an fp8 batch of test_fp8_kv's
    make_fp8_batch: 'ckv_scale' / 'kpe_scale', None = the default); none for a 16-bit batch."""
    return {k: b[k] for k in ("ckv_scale", "kpe_scale") if b.get(k) is not None}


def plan(w, b, causal):
    """plan() for batch b: q in b['dtype'], the cache in its own dtype (16-bit or e4m3)."""
    w.plan(b["qo_indptr"], b["kv_indptr"], b["kv_indices"], b["kv_len"], b["heads"], 512, 64,
           b["page_size"], causal, SM_SCALE, b["dtype"], b["ckv"].dtype)


def check(b, out, lse, causal, lse_base_e=False):
    """out / lse against the reference (float32 math; an fp8 cache dequantized with b's
    scales, and held to the looser lse tolerances above)."""
    fp8 = b["ckv"].dtype == FP8
    ref_o, ref_lse = mla_attention(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], b["qo_indptr"],
                                   b["kv_indptr"], b["kv_indices"], b["kv_len"], b["page_size"],
                                   causal, SM_SCALE, **scales(b))
    if lse_base_e:
        ref_lse = ref_lse * math.log(2.0)
    assert out.dtype == b["dtype"]
    err = rel_error(out, ref_o)
    assert err < TOL[b["dtype"]], f"out rel error {err}"
    assert 1e-5 < err or out.numel() == 0 or torch.count_nonzero(ref_o) == 0, \
        f"suspiciously exact ({err}): is the reference compared with itself?"
    if lse is not None:
        lse_err = rel_error(lse, ref_lse)
        assert lse_err < (LSE_REL_TOL_FP8 if fp8 else 1e-3), f"lse rel error {lse_err}"
        finite = torch.isfinite(ref_lse)
        if fp8 and finite.any():
            worst = float((lse[finite].double() - ref_lse[finite].to(lse.device).double())
                          .abs().max())
            assert worst < LSE_ABS_TOL_FP8, f"lse abs error {worst}"


def plan_run_check(w, b, causal, poison):
    """plan, run into NaN-poisoned out/lse (with b's cache scales, if any), compare with the
    reference."""
    plan(w, b, causal)
    T, H = b["q_nope"].shape[:2]
    out = poison(torch.empty(T, H, 512, dtype=b["dtype"], device="cuda"))
    lse = poison(torch.empty(T, H, dtype=torch.float32, device="cuda"))
    o, l = w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], out=out, lse=lse, return_lse=True,
                 **scales(b))
    assert o is out and l is lse
    check(b, out, lse, causal)


@pytest.fixture(scope="module")
def workspace():
    return torch.empty(128 << 20, dtype=torch.uint8, device="cuda")


def new_wrapper(workspace, **kw):
    from mla_wrapper import BatchMLAPagedAttentionWrapper

    return BatchMLAPagedAttentionWrapper(workspace, **kw)


# ------------------------------------------------------------------------------ GPU grid
RAGGED = [0, 1, 63, 64, 65, 200, 1000, 3001]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("page_size", [1, 16, 32, 64, 128])
@pytest.mark.parametrize("heads", [16, 32, 64, 128])
@pytest.mark.parametrize("qo_len", [1, 2, 4])
def test_grid(workspace, poison, dtype, page_size, heads, qo_len, planned_backend):
    causal = qo_len > 1
    seed = heads * 1000 + page_size * 10 + qo_len
    b = make_batch(RAGGED, qo_len, heads, page_size, DTYPES[dtype],
                   fused_cache=(seed % 2 == 0), seed=seed)
    plan_run_check(new_wrapper(workspace, backend=planned_backend), b, causal, poison)


@pytest.mark.gpu
@pytest.mark.parametrize("page_size", [3, 24, 100, 1000])
@pytest.mark.parametrize("heads", [16, 128])
def test_grid_page_sizes_not_powers_of_two(workspace, poison, page_size, heads, planned_backend):
    """Page sizes that are not powers of two: the sm90 producer's token -> page arithmetic
    (FastDiv, a multiply-high for these, a shift for powers of two) and tiles that span pages."""
    b = make_batch(RAGGED, 1, heads, page_size, DTYPES["bf16"], fused_cache=(page_size % 2 == 0),
                   seed=page_size + heads)
    plan_run_check(new_wrapper(workspace, backend=planned_backend), b, False, poison)


# test_paced_kv_loads' batch (tests/test_planner.py checks that it plans paced items)
PACED_LENS = [4096 - 37 * i for i in range(16)]


@pytest.mark.gpu
@pytest.mark.parametrize("page_size", [16, 32, 64, 128])
@pytest.mark.parametrize("heads,qo_len", [(16, 1), (64, 1), (16, 2)])
def test_paced_kv_loads(workspace, poison, page_size, heads, qo_len, planned_backend):
    """A busy grid of short work items: 16 requests of ~4000 tokens are cut into ~126 items of
    4-8 KV tiles, one per CTA, so the sm90 producer loads their tiles in 16-token TMA boxes
    (launcher.cuh kv_paced_rows; a 32-token page in two boxes, 16-token pages as always), and
    each request's last tile, partial, through cp.async."""
    b = make_batch(PACED_LENS, qo_len, heads, page_size, torch.bfloat16, fused_cache=page_size != 32,
                   seed=page_size + heads + qo_len)
    w = new_wrapper(workspace, backend=planned_backend)
    plan_run_check(w, b, qo_len > 1, poison)
    if planned_backend == "sm90" and page_size >= 32:
        # the paced boxes follow the device (launcher.cuh paced_box_rows_for,
        # paced_tile_mask_for): 8 tokens for every tile on an H100-like device (DRAM-scarce per
        # SM clock), else 16 tokens for a CTA's second tile, its other tiles whole (run above,
        # checked)
        from mla_wrapper.backends import sm90

        maps = sm90.kv_maps(w._impl.module, w._impl.args_ptr)
        assert (maps["paced_rows"], maps["paced_tile_mask"]) in ((8, 0xFFFFFFFF), (16, 0b10)), maps


@pytest.mark.gpu
@pytest.mark.parametrize("page_size,fused,tma,wide", [
    (64, True, 1, 1), (64, False, 1, 1), (128, False, 1, 1), (256, True, 1, 1),
    (32, True, 1, 0), (16, False, 1, 0), (8, True, 0, 0), (1, False, 0, 0), (100, True, 0, 0)])
def test_sm90_kv_maps_are_taken(workspace, poison, page_size, fused, tma, wide):
    """The TMA maps the sm90 launcher makes for the caches a serving engine passes (fused
    [pages][page][576] or separate ckv / kpe tensors): whole tiles go by TMA where a page holds
    whole boxes (multiples of 64 tokens, or 16 / 32), and a tile's latent goes as one 4-D box
    (the wide map) where pages hold whole 64-token tiles. A map that fails to encode falls back
    to slower loads with correct results, so only this query sees it."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the sm90 family runs on Hopper only")
    from mla_wrapper.backends import sm90

    b = make_batch(RAGGED, 1, 128, page_size, torch.bfloat16, fused_cache=fused, seed=page_size)
    w = new_wrapper(workspace, backend="sm90")
    plan_run_check(w, b, False, poison)  # (run() packs the run arguments the query reads)
    maps = sm90.kv_maps(w._impl.module, w._impl.args_ptr)
    assert (maps["enabled"], maps["wide"]) == (tma, wide), maps
    assert maps["paced_rows"] == 0, maps  # (H=128 is never paced)
    assert maps["promotion_none"] == 0, maps  # (H=128: two CTAs read each tile)


@pytest.mark.gpu
@pytest.mark.parametrize("heads,promotion_none", [(1, 1), (16, 1), (32, 1), (64, 1), (128, 0)])
def test_sm90_kv_maps_promotion(workspace, poison, heads, promotion_none):
    """The whole-tile KV maps go without L2 promotion where few heads read the stream
    (launcher.cuh kv_map_promotion: <= 64 heads, on every device since session 32) and with
    256-byte promotion otherwise; results are correct either way (a map encoded with the other
    choice only runs slower), so only this query sees the choice: it reports the flag recorded
    with the maps where they were encoded."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the sm90 family runs on Hopper only")
    from mla_wrapper.backends import sm90

    b = make_batch(RAGGED, 1, heads, 64, torch.bfloat16, seed=heads)
    w = new_wrapper(workspace, backend="sm90")
    plan_run_check(w, b, False, poison)
    maps = sm90.kv_maps(w._impl.module, w._impl.args_ptr)
    assert maps["enabled"] == 1 and maps["promotion_none"] == promotion_none, maps
    assert maps["evict_normal_max_heads"] == 64, maps


# Late score outliers: (position in the request as a fraction of kv_len, factor); each planted
# key raises one head's row max by ~50-100 log2 units, far past the sm90 kernel's lazy-rescale
# slack (8), at a position that falls inside a work item's later tiles in these plans.
OUTLIERS = [(0.55, 1.0), (0.75, 1.5), (0.93, 2.0)]


@pytest.mark.gpu
@pytest.mark.parametrize("heads,page_size,lens", [
    (16, 64, [4096] * 8), (128, 64, [2048] * 4), (16, 1, [3000, 5000]), (64, 16, [2048] * 64)])
def test_late_score_outliers(workspace, poison, heads, page_size, lens, planned_backend):
    """Keys late in each request aligned with one head's query (key = factor x sign(q)), so that
    the row's max jumps by far more than the lazy-rescale slack several times after an item's
    first tiles: a kernel that keeps a stale running max (the sm90 vote that skips the exact row
    max while every score stays within the slack, or the lazy rescale itself) overflows its
    exponentials or drops the outlier's weight. Split and unsplit plans, pages 1 / 16 / 64."""
    b = make_batch(lens, 1, heads, page_size, DTYPES["bf16"], seed=len(lens) + heads)
    q = torch.cat([b["q_nope"], b["q_pe"]], -1)
    ind = b["kv_indices"].cpu()
    for r, L in enumerate(lens):
        for k, (frac, factor) in enumerate(OUTLIERS):
            t = int(frac * L)
            page = int(ind[int(b["kv_indptr"][r]) + t // page_size])
            key = factor * torch.sign(q[r, (r + k) % heads].float()).to(b["dtype"])
            b["ckv"][page, t % page_size] = key[:512]
            b["kpe"][page, t % page_size] = key[512:]
    plan_run_check(new_wrapper(workspace, backend=planned_backend), b, False, poison)


def query_layout(b, layout):
    """b's query rows in another memory layout a serving engine may pass: 'separate' contiguous
    q_nope / q_pe tensors, 'padded' views of a [T, H + 3, 640] buffer (token and head strides
    past the rows; the padding is NaN, so a read outside the rows shows), else b's views of one
    [T, H, 576] tensor."""
    qn, qp = b["q_nope"], b["q_pe"]
    if layout == "separate":
        b["q_nope"], b["q_pe"] = qn.contiguous(), qp.contiguous()
    elif layout == "padded":
        T, H = qn.shape[:2]
        buf = torch.full((T, H + 3, 640), float("nan"), dtype=qn.dtype, device=qn.device)
        buf[:, :H, :512] = qn
        buf[:, :H, 512:576] = qp
        b["q_nope"], b["q_pe"] = buf[:, :H, :512], buf[:, :H, 512:576]
    return b


@pytest.mark.gpu
@pytest.mark.parametrize("heads,qo_len,layout", [
    (8, 1, "fused"), (8, 4, "padded"), (16, 2, "separate"), (32, 3, "padded"), (64, 2, "fused"),
    (128, 1, "padded"), (128, 2, "separate"), (24, 1, "padded"), (4, 3, "fused")])
def test_query_layouts(workspace, poison, heads, qo_len, layout, planned_backend):
    """sm90 loads the query rows with TMA boxes of whole tokens' heads where heads divide 64 or
    are a multiple of it (>= 8) and with cp.async otherwise (24, 4). Every layout must give the
    reference, and a second call with new values in the same buffers (whose tensor maps the
    launcher caches by address) must use the new values."""
    b = query_layout(make_batch([700, 64, 1, 2000, 130], qo_len, heads, 64, torch.bfloat16,
                                seed=heads + qo_len), layout)
    w = new_wrapper(workspace, backend=planned_backend)
    plan_run_check(w, b, qo_len > 1, poison)
    g = torch.Generator().manual_seed(99)
    b["q_nope"].copy_(torch.randn(b["q_nope"].shape, generator=g).to(b["q_nope"]))
    b["q_pe"].copy_(torch.randn(b["q_pe"].shape, generator=g).to(b["q_pe"]))
    plan_run_check(w, b, qo_len > 1, poison)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("heads,lens", [(128, [5000] * 40), (16, [1024] * 48), (64, "ragged")])
def test_many_merge_items(workspace, poison, dtype, heads, lens, planned_backend):
    """Batches cut into more merge items than num_ctas / 5, every tile in a few pieces: the
    combine's configuration for such plans (16-bit partials of sm90: half rows merged two
    slots at a time; sm80 keeps its float32 kernel). (64 requests of 1024 tokens at H=16 would
    be cluster pairs on sm90: test_cluster_pair_merges.)"""
    if lens == "ragged":
        lens = [int(x) for x in np.random.default_rng(5).integers(1, 8192, 64)]
    b = make_batch(lens, 1, heads, 64, DTYPES[dtype], seed=heads + len(lens))
    w = new_wrapper(workspace, backend=planned_backend)
    plan_run_check(w, b, False, poison)
    assert w._impl.last_plan.num_merge_items * 5 > w._impl.plan_struct.num_ctas  # the path ran


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("heads,qo_len,long", [(128, 1, False), (128, 2, False), (64, 1, False),
                                                (16, 1, False), (128, 1, True), (16, 1, True)])
def test_ctas_of_many_items(workspace, poison, dtype, heads, qo_len, long, planned_backend):
    """A large batch of short requests (some empty): CTAs run several work items in turn, so
    sm90 loads each next item's Q by TMA during the current item's last tile and stages that
    item's output in its last KV stage (the kernel instance launcher.cuh early_q_for picks).
    Long requests (2048-2600 tokens): items of >= 32 tiles followed by another in their CTA,
    where the next item's Q is also prefetched into L2 (sm90/consumer_steps.cuh kPrefetchQMinTiles)."""
    rng = np.random.default_rng(heads + qo_len + long)
    if long:
        lens = [int(x) for x in rng.integers(2048, 2600, 100 if heads > 64 else 300)]
    else:
        lens = [int(x) for x in rng.integers(0, 600, 200)]
    lens[::17] = [0] * len(lens[::17])
    b = make_batch(lens, qo_len, heads, 64, DTYPES[dtype], seed=heads * 3 + qo_len)
    w = new_wrapper(workspace, backend=planned_backend)
    plan_run_check(w, b, qo_len > 1, poison)
    if planned_backend == "sm90":
        d = _sm90_plan(w, b, qo_len > 1)
        items = np.diff(d.cta_work_indptr)
        if long:  # the path ran: an item of >= 32 tiles with a next one in its CTA
            ind = d.cta_work_indptr
            tiles = (d.work_info[:, 3] - d.work_info[:, 2] + 63) // 64
            assert any(tiles[i] >= 32 for c in range(len(items))
                       for i in range(ind[c], ind[c + 1] - 1))
        else:
            assert items.max() >= 3  # the path ran: CTAs of several items


def capture_graph(fn, during=None):
    """fn() once on a side stream (the warm-up a capture needs), then during(), if given, and
    fn() captured in a new CUDA graph. Returns (graph, what the captured fn() returned)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        if during is not None:
            during()
        result = fn()
    return graph, result


class _GraphRun:
    """A use_cuda_graph wrapper's static inputs / outputs (cap requests of qo_len tokens, a
    [pages, page_size, 576] cache) and one captured run() over them: load(b) copies a batch in,
    replay_check(b) replays into NaN-poisoned out / lse and compares with the reference."""

    def __init__(self, workspace, backend, cap, qo_len, heads, page_size, pages, page_ids):
        dev = "cuda"
        self.index = dict(qo_indptr=torch.zeros(cap + 1, dtype=torch.int32, device=dev),
                          kv_indptr=torch.zeros(cap + 1, dtype=torch.int32, device=dev),
                          kv_indices=torch.zeros(page_ids, dtype=torch.int32, device=dev),
                          kv_len_arr=torch.zeros(cap, dtype=torch.int32, device=dev))
        self.w = new_wrapper(workspace, use_cuda_graph=True, backend=backend, **self.index)
        T = cap * qo_len
        self.q_nope = torch.empty(T, heads, 512, dtype=torch.bfloat16, device=dev)
        self.q_pe = torch.empty(T, heads, 64, dtype=torch.bfloat16, device=dev)
        self.out = torch.empty(T, heads, 512, dtype=torch.bfloat16, device=dev)
        self.lse = torch.empty(T, heads, dtype=torch.float32, device=dev)
        cache = torch.empty(pages, page_size, 576, dtype=torch.bfloat16, device=dev)
        self.ckv, self.kpe = cache[..., :512], cache[..., 512:]
        self.graph = None

    def load(self, b):
        self.q_nope.copy_(b["q_nope"])
        self.q_pe.copy_(b["q_pe"])
        n = b["ckv"].shape[0]
        self.ckv[:n].copy_(b["ckv"])
        self.kpe[:n].copy_(b["kpe"])

    def _run(self):
        self.w.run(self.q_nope, self.q_pe, self.ckv, self.kpe, out=self.out, lse=self.lse)

    def capture(self, during=None):
        """One warm-up run on a side stream, then the capture (after a plan() and a load());
        during(), if given, runs inside the capture before run()."""
        self.graph, _ = capture_graph(self._run, during)

    def replay_check(self, b, causal):
        self.out.fill_(float("nan"))
        self.lse.fill_(float("nan"))
        self.graph.replay()
        torch.cuda.synchronize()
        check(dict(b, ckv=self.ckv, kpe=self.kpe), self.out, self.lse, causal)


def test_staging_slot_freed_during_capture_is_released_later(monkeypatch):
    """CPU check of the deferral: a staging slot freed while the current stream captures makes
    no CUDA call (no wait for its upload, no event destroy) and is queued; the next release
    outside a capture waits for its in-flight upload and destroys its event."""
    from mla_wrapper.backends import planned

    calls = []

    class FakeIo:
        def call(self, name, *args):
            calls.append((name, args))

        def mlaw_event_destroy(self, event):
            calls.append(("destroy", (event,)))

    capturing = [True]
    monkeypatch.setattr(planned, "_capturing", lambda: capturing[0])
    monkeypatch.setattr(planned, "_DEFERRED", [])
    slot = object.__new__(planned._StagingSlot)
    slot.tensor, slot.io, slot.event, slot.in_flight = object(), FakeIo(), 1234, True
    del slot
    assert calls == [] and len(planned._DEFERRED) == 1
    planned._release_deferred()  # still capturing: nothing released
    assert calls == [] and len(planned._DEFERRED) == 1
    capturing[0] = False
    planned._release_deferred()
    assert calls == [("mlaw_event_synchronize", (1234,)), ("destroy", (1234,))]
    assert planned._DEFERRED == []


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["sm80", "sm90"])
def test_wrapper_freed_inside_another_capture(workspace, backend):
    """A planned wrapper freed (and garbage-collected) while another wrapper's run() is being
    captured makes no synchronizing CUDA call there (its staging slot's upload is still marked
    in flight): the capture stays valid and replays correctly, and the freed slots are released
    by the next plan(). (The GPU suite's sparse graph tests failed when an earlier test's
    wrapper was collected inside their capture.)"""
    import gc

    from mla_wrapper.backends import planned

    if backend not in planned_backends():
        pytest.skip(f"{backend} does not run on this GPU")
    b = make_batch([300, 77], 1, 16, 64, torch.bfloat16, seed=5)
    holder = [new_wrapper(torch.empty_like(workspace), backend=backend)]
    plan(holder[0], b, False)
    gr = _GraphRun(workspace, backend, 2, 1, 16, 64, b["ckv"].shape[0], b["kv_indices"].numel())
    plan(gr.w, b, False)
    gr.load(b)

    def drop():
        holder.clear()
        gc.collect()

    gr.capture(during=drop)
    assert planned._DEFERRED, "the freed wrapper's slots wait for a later plan()"
    gr.replay_check(b, False)
    plan(gr.w, b, False)
    assert not planned._DEFERRED
    gr.replay_check(b, False)


def _num_ctas():
    """The sm90 family's persistent grid on this GPU (one CTA per SM)."""
    from mla_wrapper.backends import sm90

    return torch.cuda.get_device_properties(0).multi_processor_count * sm90.CTAS_PER_SM


def _sm90_plan(w, b, causal):
    """w's (sm90) plan for batch b, decoded (the planner run again with the family's cost)."""
    from mla_wrapper import planner
    from mla_wrapper.backends import sm90

    d, _, _ = planner.plan_arrays(b["qo_indptr"].numpy(), b["kv_indptr"].numpy(),
                                  b["kv_len"].numpy(), b["heads"], b["page_size"], causal,
                                  w._impl.layout, sm90.planner_cost())
    return d


def _pair_items(w, b, causal):
    """Cluster pairs in w's (sm90) plan for batch b: their low halves (plan.h mlaw_pair_slot:
    slot <= -2 with (-2 - slot) even)."""
    slot = _sm90_plan(w, b, causal).work_info[:, 4].astype(np.int64)
    return int(np.sum((slot <= -2) & ((-2 - slot) % 2 == 0)))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("heads,qo_len,page_size,length", [
    (16, 1, 64, 1024), (64, 1, 1, 1000), (32, 2, 16, 1000), (16, 4, 32, 1536), (128, 1, 64, 999)])
def test_cluster_pair_merges(workspace, poison, dtype, heads, qo_len, page_size, length):
    """sm90: a tile cut in two pieces on CTAs 2k, 2k + 1 is merged on chip by that cluster
    (no merge item: with every tile paired the combine kernel is not launched). num_ctas / 2
    equal requests make such plans (one row tile each); at H=128 the lockstep groups put a
    request's two tiles on the pair instead (no pair: the combine path, same check)."""
    if "sm90" not in planned_backends():
        pytest.skip("needs a Hopper GPU (the sm90 family)")
    w = new_wrapper(workspace, backend="sm90")
    causal = qo_len > 1
    B = _num_ctas() // 2
    b = make_batch([length] * B, qo_len, heads, page_size, DTYPES[dtype], seed=heads + length)
    plan_run_check(w, b, causal, poison)
    pairs = _pair_items(w, b, causal)
    if heads * qo_len <= 64:
        assert pairs == B and w._impl.last_plan.num_merge_items == 0
    else:
        assert pairs == 0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_cluster_pair_halves_replace_a_combine(workspace, poison, dtype):
    """sm90: num_ctas / 2 - 2 requests of 16384 tokens at H=16, which the sweep alone cuts into
    three pieces each (merged by the combine kernel), run in two halves on cluster pairs instead
    (planner.h pair_halves_cap): every item a pair's half, no merge item, results checked. The
    plan shape is asserted on 132-SM GPUs (H100 / H200 SXM), where the CPU planner test pins it."""
    if "sm90" not in planned_backends():
        pytest.skip("needs a Hopper GPU (the sm90 family)")
    w = new_wrapper(workspace, backend="sm90")
    B = _num_ctas() // 2 - 2
    b = make_batch([16384] * B, 1, 16, 64, DTYPES[dtype], seed=24)
    plan_run_check(w, b, False, poison)
    if _num_ctas() == 132:
        assert _pair_items(w, b, False) == B and w._impl.last_plan.num_merge_items == 0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("heads,qo_len,page_size,lens", [
    (128, 1, 64, [4096]), (16, 1, 64, [4096]), (128, 2, 1, [4000]),
    (64, 1, 16, [8000, 300, 3000]), (16, 4, 32, [4000]), (128, 1, 64, [200])])
def test_cluster_pair_halves_small_batch(workspace, poison, dtype, heads, qo_len, page_size, lens):
    """sm90: a batch that leaves half the CTAs idle (B=1) with items of >= 4 kv tiles runs
    every work item as two halves on a cluster pair, merged on chip into the item's output or
    partial slot (then merged with the tile's other pieces by the combine)."""
    if "sm90" not in planned_backends():
        pytest.skip("needs a Hopper GPU (the sm90 family)")
    w = new_wrapper(workspace, backend="sm90")
    causal = qo_len > 1
    b = make_batch(lens, qo_len, heads, page_size, DTYPES[dtype], seed=heads + sum(lens))
    plan_run_check(w, b, causal, poison)
    assert _pair_items(w, b, causal) * 2 == w._impl.last_plan.num_work_items


def _max_merge_slots(w, b, causal):
    """The most partial slots one merge item of w's (sm90) plan for batch b combines."""
    d = _sm90_plan(w, b, causal)
    return int(d.merge_info[:, 3].max()) if len(d.merge_info) else 0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("heads,page_size,length,batch,slots", [
    (128, 64, 512, 1, 8), (16, 64, 1024, 1, 16), (128, 64, 1024, 1, 16), (16, 16, 2000, 1, 9),
    (128, 1, 1000, 1, 9), (64, 64, 20000, 1, 17), (64, 64, 2048, 4, 16), (64, 64, 4096, 8, 16),
    (128, 64, 1024, 8, 8), (128, 64, 1024, 9, 6)])
def test_small_batch_merges_of_many_slots(workspace, poison, dtype, heads, page_size, length,
                                          batch, slots):
    """sm90 at small batches: the planner cuts short requests in kv_len / 16-token pieces (one
    tile up to L=1024) and the combine of a plan with at most 16 merge items (sm80/config.h
    kCombineFewMerges; B=8 at H=128 has 16, B=9 18) loads 16 slots at once where a merge has
    more than 8; every path against the reference, eagerly and replayed from a CUDA graph."""
    if "sm90" not in planned_backends():
        pytest.skip("needs a Hopper GPU (the sm90 family)")
    w = new_wrapper(workspace, backend="sm90")
    b = make_batch([length] * batch, 1, heads, page_size, DTYPES[dtype], seed=heads + length)
    plan_run_check(w, b, False, poison)
    assert _max_merge_slots(w, b, False) >= slots
    if dtype != "bf16":  # (the graph harness holds bf16 tensors)
        return
    gr = _GraphRun(workspace, "sm90", batch, 1, heads, page_size, b["ckv"].shape[0],
                   b["kv_indices"].numel())
    plan(gr.w, b, False)
    gr.load(b)
    gr.capture()
    gr.replay_check(b, False)


@pytest.mark.gpu
def test_cluster_pair_plans_in_cuda_graph(workspace):
    """A graph captured with a pair plan replays plans with and without pairs (the launch is
    the same: clusters of two whenever num_ctas is even)."""
    if "sm90" not in planned_backends():
        pytest.skip("needs a Hopper GPU (the sm90 family)")
    heads, page_size = 16, 64
    cap = _num_ctas() // 2
    rng = np.random.default_rng(3)
    batches = [[1024] * cap, [int(x) for x in rng.integers(1, 4000, cap)], [2048] * cap]
    made = [make_batch(lens, 1, heads, page_size, torch.bfloat16, seed=30 + i)
            for i, lens in enumerate(batches)]
    pages = max(b["ckv"].shape[0] for b in made)
    gr = _GraphRun(workspace, "sm90", cap, 1, heads, page_size, pages, cap * 64)
    plan(gr.w, made[0], False)
    gr.load(made[0])
    gr.capture()
    seen = []
    for b in made[1:] + made[:1]:
        plan(gr.w, b, False)
        seen.append(_pair_items(gr.w, b, False))
        gr.load(b)
        gr.replay_check(b, False)
    assert seen[0] < cap and seen[1] == cap and seen[2] == cap  # mixed, all pairs, all pairs


@pytest.mark.gpu
def test_pair_merge_refused_for_sm80(workspace, monkeypatch):
    """Cluster pairs are sm90's: a cost model asking for them on sm80 is refused by name."""
    from mla_wrapper import planner

    monkeypatch.setattr(planner, "DEFAULT_COST", planner.CostModel(pair_merge=True))
    b = make_batch([1024] * 4, 1, 16, 64, torch.bfloat16)
    with pytest.raises(ValueError, match="pair_merge.*sm80"):
        plan(new_wrapper(workspace, backend="sm80"), b, False)


@pytest.mark.gpu
def test_temporary_kv_indices_stay_valid(workspace, poison, planned_backend):
    """plan() given a temporary page table (freed by the caller right after the call): run()
    still reads the planned page ids, although the freed block is handed to a new tensor
    filled with ids far past the cache (before the fix: garbage reads / illegal address)."""
    b = make_batch([700, 64, 1000, 3], 1, 16, 16, torch.bfloat16, seed=3)
    w = new_wrapper(workspace, backend=planned_backend)
    w.plan(b["qo_indptr"], b["kv_indptr"], b["kv_indices"].clone(), b["kv_len"], 16, 512, 64, 16,
           False, SM_SCALE, torch.bfloat16, torch.bfloat16)
    junk = torch.full_like(b["kv_indices"], 1 << 30)    # likely reuses the clone's block
    out = poison(torch.empty(*b["q_nope"].shape[:2], 512, dtype=torch.bfloat16, device="cuda"))
    w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], out=out)
    torch.cuda.synchronize()
    del junk
    check(b, out, None, False)


@pytest.mark.gpu
@pytest.mark.parametrize("causal_qo", [1, 2])
def test_all_requests_empty(workspace, poison, causal_qo, planned_backend):
    """Every kv_len 0: the page table is empty (kv_indices has no element, a NULL data
    pointer); out is 0 and lse -inf, not an error (found on the H200: the launch checks
    refused the NULL page table)."""
    b = make_batch([0, 0, 0], causal_qo, 16, 64, torch.bfloat16)
    assert b["kv_indices"].numel() == 0
    w = new_wrapper(workspace, backend=planned_backend)
    plan(w, b, causal_qo > 1)
    out = poison(torch.empty(*b["q_nope"].shape[:2], 512, dtype=torch.bfloat16, device="cuda"))
    lse = poison(torch.empty(*b["q_nope"].shape[:2], dtype=torch.float32, device="cuda"))
    w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], out=out, lse=lse)
    assert torch.count_nonzero(out) == 0 and bool(torch.isneginf(lse).all())


@pytest.mark.gpu
@pytest.mark.parametrize("heads", [16, 128])
def test_skewed_batch_splits_and_merges(workspace, poison, heads):
    """One long request among many short ones: the planner splits it; the split-KV combine
    (fused into the attention launch) merges the pieces."""
    lens = [40000] + [int(x) for x in torch.randint(1, 300, (63,), generator=torch.Generator().manual_seed(heads))]
    b = make_batch(lens, 1, heads, 16, torch.bfloat16, seed=heads)
    w = new_wrapper(workspace)
    plan(w, b, False)
    impl = w._impl
    assert impl.last_plan.num_merge_items > 0, "expected the long request to be split"
    out = poison(torch.empty(64, heads, 512, dtype=torch.bfloat16, device="cuda"))
    o, lse = w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], out=out, return_lse=True)
    check(b, o, lse, False)


@pytest.mark.gpu
def test_lse_base_e_and_allocated_outputs(workspace):
    b = make_batch([5, 700, 0, 129], 1, 32, 64, torch.bfloat16, seed=7)
    w = new_wrapper(workspace)
    plan(w, b, False)
    o, lse = w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], return_lse=True,
                   return_lse_base_on_e=True)
    check(b, o, lse, False, lse_base_e=True)
    assert torch.isneginf(lse[2]).all() and (o[2] == 0).all()
    o2 = w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"])
    assert isinstance(o2, torch.Tensor) and torch.equal(o2, o)


@pytest.mark.gpu
def test_separate_and_fused_cache_views_agree(workspace):
    b = make_batch([300, 77, 1024], 1, 16, 16, torch.bfloat16, fused_cache=True, seed=3)
    w = new_wrapper(workspace)
    plan(w, b, False)
    o_views = w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"])
    o_sep = w.run(b["q_nope"].contiguous(), b["q_pe"].contiguous(), b["ckv"].contiguous(),
                  b["kpe"].contiguous())
    assert torch.equal(o_views, o_sep)


@pytest.mark.gpu
@pytest.mark.parametrize("page_size", [16, 32, 64, 128, 256])
def test_layer_strided_cache_with_nan_past_the_end(workspace, poison, planned_backend, page_size):
    """The cache as one layer of a [pages, layers, page_size, 576] pool (a page stride that is
    not page_size rows: sm90's TMA tensor maps take it as a third dimension), with NaN in every
    slot past a request's kv_len: whole 64-token tiles come through TMA (four 16-token or two
    32-token pages a tile at page_size 16 / 32, one warp issuing each page), a request's last
    partial tile must not read those NaN (it is gathered with zero fill), split pieces too."""
    b = make_batch([64, 100, 1000, 4097, 3 * page_size], 1, 128, page_size, torch.bfloat16,
                   seed=21)
    pages = b["ckv"].shape[0]
    pool = torch.randn(pages, 3, page_size, 576, device="cuda").to(torch.bfloat16)
    layer = pool[:, 1]
    layer.copy_(torch.cat([b["ckv"], b["kpe"]], dim=-1))
    kv_indptr, kv_indices = b["kv_indptr"], b["kv_indices"].cpu()
    for r, n in enumerate(b["kv_len"].tolist()):  # NaN after the last token of each request
        last = int(kv_indices[int(kv_indptr[r + 1]) - 1])
        if n % page_size:
            layer[last, n % page_size:] = float("nan")
    b["ckv"], b["kpe"] = layer[..., :512], layer[..., 512:]
    assert b["ckv"].stride(0) == 3 * page_size * 576
    w = new_wrapper(workspace, backend=planned_backend)
    plan(w, b, False)
    out = poison(torch.empty(5, 128, 512, dtype=torch.bfloat16, device="cuda"))
    lse = poison(torch.empty(5, 128, dtype=torch.float32, device="cuda"))
    w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], out=out, lse=lse)
    torch.cuda.synchronize()
    check(b, out, lse, False)


@pytest.mark.gpu
def test_inflight_replan(workspace, poison):
    """plan(X), run, plan(Y) at once (X's kernels still running), run: both outputs right."""
    bx = make_batch([30000] * 8, 1, 128, 64, torch.bfloat16, seed=11)
    by = make_batch([17, 900, 4000, 1, 2], 1, 128, 64, torch.bfloat16, seed=12)
    w = new_wrapper(workspace)
    plan(w, bx, False)
    ox = poison(torch.empty(8, 128, 512, dtype=torch.bfloat16, device="cuda"))
    w.run(bx["q_nope"], bx["q_pe"], bx["ckv"], bx["kpe"], out=ox)
    plan(w, by, False)           # no sync in between
    oy = poison(torch.empty(5, 128, 512, dtype=torch.bfloat16, device="cuda"))
    w.run(by["q_nope"], by["q_pe"], by["ckv"], by["kpe"], out=oy)
    plan(w, bx, False)           # a third plan reuses the first staging buffer
    ox2 = poison(torch.empty(8, 128, 512, dtype=torch.bfloat16, device="cuda"))
    w.run(bx["q_nope"], bx["q_pe"], bx["ckv"], bx["kpe"], out=ox2)
    torch.cuda.synchronize()
    check(bx, ox, None, False)
    check(by, oy, None, False)
    assert torch.equal(ox, ox2)


@pytest.mark.gpu
@pytest.mark.parametrize("heads,qo_len", [(16, 1), (128, 1), (16, 2)])
def test_cuda_graph_replan_replay(workspace, heads, qo_len, planned_backend):
    """Capture at batch B with lengths X, re-plan with lengths Y (and a smaller batch), replay."""
    cap, page_size = 8, 16
    causal = qo_len > 1
    gr = _GraphRun(workspace, planned_backend, cap, qo_len, heads, page_size, 2048, 4096)
    bx = make_batch([100, 2000, 5, 0, 3000, 64, 65, 1], qo_len, heads, page_size,
                    torch.bfloat16, seed=21)
    plan(gr.w, bx, causal)
    gr.load(bx)
    gr.capture()
    for seed, lens in ((22, [3000, 1, 77, 2500, 0, 1024, 63, 999]), (23, [4000, 4000, 9, 1, 2, 3, 4, 5])):
        by = make_batch(lens, qo_len, heads, page_size, torch.bfloat16, seed=seed)
        plan(gr.w, by, causal)
        gr.load(by)
        gr.replay_check(by, causal)


# ------------------------------------------------------------------------------- errors
@pytest.mark.gpu
def test_errors(workspace):
    from mla_wrapper import BatchMLAPagedAttentionWrapper

    b = make_batch([10, 20], 1, 16, 16, torch.bfloat16, seed=5)
    w = new_wrapper(workspace)
    with pytest.raises(RuntimeError, match="before plan"):
        w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"])
    with pytest.raises(ValueError, match="kv_indptr.*int32.*int\\(\\)"):
        w.plan(b["qo_indptr"], b["kv_indptr"].long(), b["kv_indices"], b["kv_len"], 16, 512, 64,
               16, False, SM_SCALE, torch.bfloat16, torch.bfloat16)
    with pytest.raises(ValueError, match="head_dim_ckv"):
        w.plan(b["qo_indptr"], b["kv_indptr"], b["kv_indices"], b["kv_len"], 16, 256, 64, 16,
               False, SM_SCALE, torch.bfloat16, torch.bfloat16)
    with pytest.raises(ValueError, match="kv_indices.*CUDA|kv_indices.*device"):
        w.plan(b["qo_indptr"], b["kv_indptr"], b["kv_indices"].cpu(), b["kv_len"], 16, 512, 64,
               16, False, SM_SCALE, torch.bfloat16, torch.bfloat16)
    plan(w, b, False)
    with pytest.raises(ValueError, match="q_nope.*dtype"):
        w.run(b["q_nope"].half(), b["q_pe"], b["ckv"], b["kpe"])
    with pytest.raises(ValueError, match="q_pe.*shape"):
        w.run(b["q_nope"], b["q_pe"][:1], b["ckv"], b["kpe"])
    with pytest.raises(ValueError, match="q_nope.*device"):
        w.run(b["q_nope"].cpu(), b["q_pe"], b["ckv"], b["kpe"])
    with pytest.raises(ValueError, match="ckv_cache.*page size"):
        w.run(b["q_nope"], b["q_pe"], b["ckv"].reshape(-1, 8, 512), b["kpe"])
    with pytest.raises(ValueError, match="out.*shape"):
        w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], out=torch.empty(1, 16, 512, dtype=torch.bfloat16, device="cuda"))
    small = torch.empty(1 << 16, dtype=torch.uint8, device="cuda")
    with pytest.raises(ValueError, match="float_workspace_buffer: needs \\d+ bytes"):
        plan(new_wrapper(small), b, False)
    cap_bufs = dict(qo_indptr=torch.zeros(2, dtype=torch.int32, device="cuda"),
                    kv_indptr=torch.zeros(2, dtype=torch.int32, device="cuda"),
                    kv_indices=torch.zeros(64, dtype=torch.int32, device="cuda"),
                    kv_len_arr=torch.zeros(1, dtype=torch.int32, device="cuda"))
    g = BatchMLAPagedAttentionWrapper(workspace, use_cuda_graph=True, **cap_bufs)
    with pytest.raises(ValueError, match="CUDA-graph capacity 1"):
        plan(g, b, False)
    b1 = make_batch([10], 1, 16, 16, torch.bfloat16, seed=6)
    plan(g, b1, False)
    with pytest.raises(ValueError, match="causal: False -> True.*fixed for a CUDA-graph wrapper"):
        plan(g, b1, True)
    if torch.cuda.get_device_capability()[0] != 10:
        with pytest.raises(ValueError, match="backend='cutlass' cannot serve.*Blackwell"):
            plan(new_wrapper(workspace, backend="cutlass"), b, False)
    with pytest.raises(ValueError, match="kv_indptr: use_cuda_graph=True needs"):
        BatchMLAPagedAttentionWrapper(workspace, use_cuda_graph=True, qo_indptr=cap_bufs["qo_indptr"])


def test_cpu_errors():
    from mla_wrapper import BatchMLAPagedAttentionWrapper

    with pytest.raises(ValueError, match="backend"):
        BatchMLAPagedAttentionWrapper(torch.empty(16, dtype=torch.uint8), backend="fa9")
    with pytest.raises(ValueError, match="float_workspace_buffer.*CUDA"):
        BatchMLAPagedAttentionWrapper(torch.empty(16, dtype=torch.uint8))


def test_host_index_arrays_must_be_one_dimensional():
    # FlashInfer users have passed kv_len_arr as [B, 1, 1, 1] (flashinfer issue 4833): plan()
    # names the argument instead of reading a multi-dimensional array as if it were flat.
    import numpy as np

    from mla_wrapper.wrapper import _host_int32

    assert _host_int32("kv_len_arr", np.arange(4, dtype=np.int32)).shape == (4,)
    for bad in (np.zeros((4, 1), np.int32), np.zeros((4, 1, 1, 1), np.int32)):
        with pytest.raises(ValueError, match=r"kv_len_arr: expected a 1-d array.*reshape"):
            _host_int32("kv_len_arr", bad)
    with pytest.raises(ValueError, match="kv_len_arr: expected a 1-d tensor"):
        _host_int32("kv_len_arr", torch.zeros(4, 1, dtype=torch.int32))


def _dev(major, minor, smem=232448):
    return backends.DeviceInfo((major, minor), smem)


def test_backend_selection_rules():
    p = backends.Problem(128, 64, torch.bfloat16, torch.bfloat16, 1, False)
    assert backends.why_not("sm80", p, _dev(9, 0)) is None
    assert backends.why_not("sm80", p, _dev(8, 0, 166912)) is None     # A100: the 32x2 config
    assert backends.why_not("sm80", p, _dev(8, 9, 101376)) is None     # Ada: the 16x1 config
    assert "shared memory" in backends.why_not("sm80", p, _dev(8, 0, 49152))
    assert "Blackwell" in backends.why_not("cutlass", p, _dev(9, 0))
    assert backends.why_not("cutlass", p, _dev(10, 0)) is None
    mtp = backends.Problem(128, 64, torch.bfloat16, torch.bfloat16, 2, True)
    assert "qo_len" in backends.why_not("cutlass", mtp, _dev(10, 0))
    odd_page = backends.Problem(16, 48, torch.bfloat16, torch.bfloat16, 1, False)
    assert "power of two" in backends.why_not("cutlass", odd_page, _dev(10, 0))
    graph = backends.Problem(16, 64, torch.bfloat16, torch.bfloat16, 1, False, cuda_graph=True)
    assert "CUDA-graph" in backends.why_not("cutlass", graph, _dev(10, 0))
    mixed = backends.Problem(16, 64, torch.bfloat16, torch.float16, 1, False)
    assert "differs" in backends.why_not("sm80", mixed, _dev(9, 0))
    for cap in ((9, 0), (9, 5)):
        assert backends.why_not("sm90", p, _dev(*cap)) is None
    for cap in ((8, 0), (8, 9), (10, 0), (12, 0)):
        assert "sm90 needs a Hopper (SM90) GPU" in backends.why_not("sm90", p, _dev(*cap))
    for heads, page_size, qo_len in ((1, 1, 1), (128, 1, 4), (7, 48, 3), (64, 1024, 1)):
        for dt in (torch.bfloat16, torch.float16):
            q = backends.Problem(heads, page_size, dt, dt, qo_len, qo_len > 1, cuda_graph=True)
            assert backends.why_not("sm90", q, _dev(9, 0)) is None
    assert "num_heads" in backends.why_not("sm90", backends.Problem(
        129, 64, torch.bfloat16, torch.bfloat16, 1, False), _dev(9, 0))
    assert "differs" in backends.why_not("sm90", mixed, _dev(9, 0))


def test_backend_resolution(monkeypatch, caplog):
    """auto / fa2 / fa3 / explicit names per GPU, and the MLA_WRAPPER_SM90 opt-in."""
    monkeypatch.setenv("MLA_WRAPPER_SM90", "1")
    p = backends.Problem(16, 64, torch.bfloat16, torch.bfloat16, 1, False)
    mtp = backends.Problem(16, 64, torch.bfloat16, torch.bfloat16, 2, True)
    hopper, a100, b200 = _dev(9, 0), _dev(8, 0, 166912), _dev(10, 0)
    resolve = backends.resolve
    assert resolve("auto", p, hopper) == "sm90"
    assert resolve("auto", p, a100) == "sm80"
    assert resolve("auto", p, b200) == "cutlass"
    assert resolve("auto", mtp, b200) == "sm80"
    assert resolve("sm90", p, hopper) == resolve("fa3", p, hopper) == "sm90"
    assert resolve("sm80", p, hopper) == resolve("fa2", p, hopper) == "sm80"
    with pytest.raises(ValueError, match="backend='sm90' cannot serve.*Hopper"):
        resolve("sm90", p, a100)
    # fa3 never raises where auto would serve: it falls back like auto, with a log line
    with caplog.at_level("INFO", logger="mla_wrapper"):
        assert resolve("fa3", p, a100) == "sm80"
    assert "backend fa3 -> sm80 (sm90: sm90 needs a Hopper" in caplog.text
    assert resolve("fa3", p, b200) == "cutlass"
    assert resolve("fa3", mtp, b200) == "sm80"
    assert backends.routed_family((9, 0)).__name__.endswith("sm90")
    assert backends.routed_family((8, 0)).__name__.endswith("sm80")
    for value in ("0", None):   # opted out, or the default while sm90 is unverified on hardware
        if value is None:
            monkeypatch.delenv("MLA_WRAPPER_SM90", raising=False)
            if backends.SM90_IN_AUTO_DEFAULT:
                continue
        else:
            monkeypatch.setenv("MLA_WRAPPER_SM90", value)
        caplog.clear()
        with caplog.at_level("INFO", logger="mla_wrapper"):
            assert resolve("auto", p, hopper) == "sm80"
        assert "MLA_WRAPPER_SM90=1" in caplog.text
        assert resolve("fa3", p, hopper) == "sm80"
        assert resolve("sm90", p, hopper) == "sm90"      # an explicit request is still served
        assert backends.routed_family((9, 0)).__name__.endswith("sm80")
    with pytest.raises(ValueError, match="expected one of"):
        resolve("fa9", p, hopper)


@pytest.mark.gpu
def test_run_rejects_non_tensors(workspace):
    b = make_batch([10], 1, 16, 16, torch.bfloat16, seed=8)
    w = new_wrapper(workspace)
    plan(w, b, False)
    with pytest.raises(ValueError, match="q_pe: expected a torch.Tensor"):
        w.run(b["q_nope"], b["q_pe"].float().cpu().tolist(), b["ckv"], b["kpe"])
    with pytest.raises(ValueError, match="lse: expected shape"):
        w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], lse=torch.empty(3, 3, device="cuda"))
    with pytest.raises(ValueError, match="kpe_cache.*dtype"):
        w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"].half())


@pytest.mark.gpu
@pytest.mark.parametrize("heads,qo_len", [(1, 1), (7, 3), (100, 1), (127, 2)])
def test_odd_head_counts(workspace, poison, heads, qo_len):
    """Heads that are not a multiple of the 64-row tile (rows of a tile span query tokens)."""
    causal = qo_len > 1
    b = make_batch([5, 300, 0, 1999], qo_len, heads, 16, torch.bfloat16, seed=heads)
    plan_run_check(new_wrapper(workspace), b, causal, poison)


@pytest.mark.gpu
def test_mixed_qo_lengths_and_empty_requests(workspace, poison):
    """Ragged query lengths in one batch (decode + MTP + a request with no query tokens)."""
    b = make_batch([700, 64, 3, 1500, 0], [1, 4, 0, 2, 1], 32, 64, torch.float16, seed=77)
    plan_run_check(new_wrapper(workspace), b, True, poison)


@pytest.mark.gpu
def test_device_index_tensors(workspace):
    """Index tensors on the device work (one D2H copy) and give the same answer."""
    b = make_batch([10, 900, 0, 64], 1, 16, 16, torch.bfloat16, seed=13)
    w = new_wrapper(workspace)
    w.plan(b["qo_indptr"].cuda(), b["kv_indptr"].cuda(), b["kv_indices"], b["kv_len"].cuda(), 16,
           512, 64, 16, False, SM_SCALE, torch.bfloat16, torch.bfloat16)
    o, lse = w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], return_lse=True)
    check(b, o, lse, False)


def test_run_args_packing_matches_struct():
    """run() writes MlaRunArgs' first 18 words with one struct.pack_into: check the mapping."""
    from mla_wrapper.backends.planned import _pack_args
    from mla_wrapper.workspace import MlaRunArgsStruct

    a = MlaRunArgsStruct()
    a.num_heads, a.page_size = 77, 64
    _pack_args(a, 0, *range(1, 8), *range(-11, 0))
    assert (a.q_nope, a.q_pe, a.ckv, a.kpe, a.out, a.lse, a.kv_indices) == tuple(range(1, 8))
    strides = (a.q_nope_stride_token, a.q_nope_stride_head, a.q_pe_stride_token,
               a.q_pe_stride_head, a.ckv_stride_page, a.ckv_stride_token, a.kpe_stride_page,
               a.kpe_stride_token, a.out_stride_token, a.out_stride_head, a.lse_stride_token)
    assert strides == tuple(range(-11, 0))
    assert (a.num_heads, a.page_size) == (77, 64)   # fields after the packed words untouched


@pytest.mark.gpu
@pytest.mark.parametrize("heads", [16, 128])
def test_cuda_graph_batch_one_bucket(workspace, heads, planned_backend):
    """A batch-1 CUDA-graph bucket (small merge capacity: the combine is fused into the captured
    attention launch): re-plan with new lengths (split and not) and replay."""
    dev = "cuda"
    bufs = dict(qo_indptr=torch.zeros(2, dtype=torch.int32, device=dev),
                kv_indptr=torch.zeros(2, dtype=torch.int32, device=dev),
                kv_indices=torch.zeros(512, dtype=torch.int32, device=dev),
                kv_len_arr=torch.zeros(1, dtype=torch.int32, device=dev))
    w = new_wrapper(workspace, use_cuda_graph=True, backend=planned_backend, **bufs)
    first = make_batch([700], 1, heads, 64, torch.bfloat16, seed=41)
    plan(w, first, False)
    assert w._impl.plan_struct.max_merge_items <= 16
    q = first["q_nope"].new_empty(1, heads, 576)
    cache = torch.empty(520, 64, 576, dtype=torch.bfloat16, device=dev)
    out = torch.empty(1, heads, 512, dtype=torch.bfloat16, device=dev)
    lse = torch.empty(1, heads, dtype=torch.float32, device=dev)
    args = (q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:])
    g, _ = capture_graph(lambda: w.run(*args, out=out, lse=lse))
    for seed, L in ((42, 30000), (43, 5), (44, 0), (45, 4097)):
        b = make_batch([L], 1, heads, 64, torch.bfloat16, seed=seed)
        plan(w, b, False)
        n = b["ckv"].shape[0]
        cache[:n, :, :512].copy_(b["ckv"])
        cache[:n, :, 512:].copy_(b["kpe"])
        q[..., :512].copy_(b["q_nope"])
        q[..., 512:].copy_(b["q_pe"])
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        check(dict(b, ckv=cache[..., :512], kpe=cache[..., 512:]), out, lse, False)


# ----------------------------------------------------- inputs written by the previous kernel
@pytest.mark.gpu
@pytest.mark.parametrize("heads,lens,capacity", [(16, [256] * 264, False),
                                                 (128, [1000, 3000, 64, 2500], False),
                                                 (16, [256] * 264, True)])
def test_run_reads_what_the_previous_run_wrote(workspace, poison, heads, lens, capacity,
                                               planned_backend):
    """Two run() calls back to back, the second's query rows being the first's output (as one
    layer feeds the next). sm90 launches attention with programmatic dependent launch
    (launcher.cuh MLAW_SM90_PDL) and both its kernels let the next launch as they start, so the
    second attention's CTAs start while the first call still runs and must wait for it
    (griddepcontrol.wait) before reading q. 264 requests of 256 tokens: whole requests, the
    first call's output written by its attention kernel; 4 long requests: by its combine.
    capacity: the first wrapper is a CUDA-graph one, whose combine is launched for its merge
    capacity with no merge to do (its warps exit without waiting for attention, but the grid's
    first, which keeps the next launch behind the first call's attention).
    Eagerly and replayed from a CUDA graph that captured both calls."""
    b = make_batch(lens, 1, heads, 64, torch.bfloat16, seed=heads)
    B = len(lens)
    graph_bufs = dict(use_cuda_graph=True,
                      qo_indptr=torch.zeros(B + 1, dtype=torch.int32, device="cuda"),
                      kv_indptr=torch.zeros(B + 1, dtype=torch.int32, device="cuda"),
                      kv_indices=torch.zeros_like(b["kv_indices"]),
                      kv_len_arr=torch.zeros(B, dtype=torch.int32, device="cuda"))
    w1 = new_wrapper(torch.empty_like(workspace), backend=planned_backend,
                     **(graph_bufs if capacity else {}))
    w2 = new_wrapper(torch.empty_like(workspace), backend=planned_backend)
    plan(w1, b, False)
    plan(w2, b, False)
    if capacity:
        assert w1._impl.plan_struct.max_merge_items > 0 and w1._impl.last_plan.num_merge_items == 0
    T = b["q_nope"].shape[0]
    out1 = torch.empty(T, heads, 512, dtype=torch.bfloat16, device="cuda")
    out2 = torch.empty_like(out1)
    kv = (b["ckv"], b["kpe"])

    def both():
        w1.run(b["q_nope"], b["q_pe"], *kv, out=out1)
        w2.run(out1, b["q_pe"], *kv, out=out2)

    def check_second():
        torch.cuda.synchronize()
        ref_o, _ = mla_attention(out1, b["q_pe"], *kv, b["qo_indptr"], b["kv_indptr"],
                                 b["kv_indices"], b["kv_len"], 64, False, SM_SCALE)
        err = rel_error(out2, ref_o)
        assert err < TOL[torch.bfloat16], f"second run: rel error {err} (read q too early?)"

    for _ in range(3):
        poison(out1), poison(out2)
        both()
        check_second()
    graph, _ = capture_graph(both)
    for seed in (1, 2):
        b["q_nope"].copy_(torch.randn(b["q_nope"].shape, device="cuda",
                                      generator=torch.Generator(device="cuda").manual_seed(seed)))
        poison(out1), poison(out2)
        graph.replay()
        check_second()


@pytest.mark.gpu
def test_pdl_follows_the_switch(workspace, poison, monkeypatch, planned_backend):
    """The wrapper asks for programmatic dependent launch in its run arguments (plan.h
    MlaRunArgs::enable_pdl) unless MLA_WRAPPER_PDL=0, and runs correctly either way."""
    b = make_batch([300, 70], 1, 16, 64, torch.bfloat16, seed=3)
    for value, want in (("0", 0), ("1", 1)):
        monkeypatch.setenv(backends.PDL_ENV, value)
        w = new_wrapper(torch.empty_like(workspace), backend=planned_backend)
        plan_run_check(w, b, False, poison)
        assert w._impl.args.enable_pdl == want
