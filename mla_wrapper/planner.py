"""The split-KV planner: host int32 lengths -> the plan of include/mla_wrapper/common/plan.h.

The algorithm is host C++ (include/mla_wrapper/planner/planner.h, JIT-built once from
jit_templates/planner.cpp.jinja as a host-only library, arch "host") called through ctypes;
this module is a thin shim around it.

Hot path (a serving engine, once per step)::

    layout = WorkspaceLayout(max_batch, max_row_tiles, num_ctas, rows_per_tile, kv_tile)
    planner = Planner(layout, num_heads, page_size, causal)          # once
    staging = <pinned host int32 buffer of layout.int_workspace_elems> (x2: double buffer)
    res = planner.plan(qo_indptr, kv_indptr, kv_len_arr, staging)    # each step, ~us
    int_ws[: res.copy_bytes].copy_(staging_bytes[: res.copy_bytes], non_blocking=True)

``plan(...)`` (module function) does the same with a cached Planner per configuration.

What the plan is
----------------
Query rows (token i, head h) -> row index i * H + h; row tile t of a request covers rows
[t R, min((t+1) R, q H)). A tile's kv range is the union of its rows' visible ranges:
[0, L) without causal masking, [0, clamp(L - q + i_last + 1, 0, L)) with it (i_last: the
tile's last query token). Each tile is covered by one work item, or cut into pieces at
multiples of kv_tile (each >= min_chunk tokens) that write partials (float32 for sm80, 16-bit
for sm90) to consecutive slots merged by one merge item. A tile with no visible token is still
one work item (kv_start == kv_end, direct write): the kernel writes o = 0, lse = -inf, so every
output row is always written. Work items are dealt to the persistent CTAs as contiguous ranges.

Cluster pairs (``CostModel.pair_merge``, the sm90 family's; planner.h pair_merges /
pair_split): on an even grid, a tile cut in exactly two pieces that are the only items of CTAs
2k and 2k + 1 becomes a pair merged on chip (no merge item); and when the busy CTAs are at
most half the grid, each with one item of >= 4 kv tiles (a small batch), every item is cut in
two halves on CTAs 2k, 2k + 1 that write what it wrote (out or its partial slot). A pair's
slot value (plan.h mlaw_pair_slot) says which half a CTA runs and where the pair writes. The
cost statistics are those of the plan before its pairs.

Cost model (kv-token equivalents; ``CostModel``)
-------------------------------------------------
    cost(work item) = tokens + fixed + fixed_per_row * rows   (+ split_per_row * rows if the
                                                                tile is cut: partial write +
                                                                merge read)
Defaults are in units of one KV token (1152 bytes): a query row costs about one token to load
and one to write (fixed_per_row = 2), a partial row about two to write and read back
(split_per_row = 4); fixed = 64 covers a work item's pipeline fill. Tune on a GPU.

Algorithm and bounds
--------------------
Greedy sweep with a cap X over the tiles in request order: CTA c takes tiles while they fit;
a tile that does not fit is cut (at a multiple of kv_tile, both parts >= min_chunk; with
``min_chunk_sqrt`` = c > 0, min_chunk is raised to c x sqrt(the batch's longest kv_len),
rounded up to kv_tile, for that plan, but with ``min_chunk_div`` = d > 0 to no more than the
longest kv_len / d; with ``fine_split_div`` = f > 0, a batch whose row tiles hold at most
num_ctas / f kv tiles in all takes min_chunk = the longest kv_len / d instead (kv_tile
without d): the bounds below hold for any min_chunk) so the CTA
ends at exactly X (up to the kv_tile rounding), else the CTA closes; the last CTA takes the
rest. X is searched for the smallest max CTA cost: it starts at the mean plus the expected
cost of the cuts, then Newton steps on the last CTA's overflow and regula falsi to ~1%, plus
one cap a kv tile under the best max when the search would stop on the room left (typically
1-4 O(tiles) passes of ~1.5 ns per tile). The plan without cuts is used when it
is within ``merge_launch`` of the plan with cuts (checked first against the lower bound, so
a batch that already fills the GPU in balance costs one pass and is never split: e.g. B=128,
H=16 or B=264, H=128 with equal lengths on 132 CTAs). With ``pair_merge`` (sm90: cluster pairs
merge a tile's two pieces on chip), at most C / 2 equal tiles that the sweep cut into more
pieces are instead cut in two halves (of >= 32 kv tiles) on CTAs 2k, 2k + 1 when that plan's
max is within ``merge_launch`` of the cut plan's (no combine: e.g. B=64 H=16 L=16384 on 132 CTAs; the bound
below holds, merge_launch included).

Lockstep groups: when the row tiles come in groups of G >= 2 alike consecutive tiles of a
request (all of a request's tiles when every request has the same G tiles of one length and
row count, e.g. decode at H=128: G=2; else, with num_heads a multiple of the tile's rows, the
H / rows_per_tile tiles of each query token: causal MTP or varlen qo at H=128), with G
dividing num_ctas, the sweep runs on one representative tile per group over C / G virtual
CTAs, and virtual CTA v's work items go to CTAs G v .. G v + G - 1, one tile of the group
each, with the same cuts. The G tiles then stream the same KV range at the same time and L2
serves all but one read (with a plain sweep a CTA takes ~T / C consecutive tiles, the tiles of
a request run one after another and each reads the KV from DRAM; with cuts this holds even for
fewer tiles than CTAs: a CTA's later pieces run while the CTAs with the group's other tiles are
elsewhere). The bounds below hold for it with W0 / G over C / G CTAs.

Let W0 = sum of the tiles' whole costs, Fmax = fixed + fixed_per_row * R, Smax =
split_per_row * R, m = min_chunk, K = kv_tile, C = num_ctas. Proven for every plan:

* coverage: each tile's pieces partition its kv range; cuts are at multiples of K; every
  piece of a cut tile is >= m tokens.
* at most C - 1 cuts (a cut only happens when a CTA other than the last closes): work items
  <= tiles + C - 1, merge items <= min(C - 1, tiles), partial slots <= 2 (C - 1) (workspace.py).
* a CTA that closes with room left has room < G = Fmax + Smax + 2m + K (else the sweep would
  have cut the next tile to fill it), so the cap hi = ceil(W_max / C) + G is always met, with
  W_max = W0 + (C - 1)(Fmax + 2 Smax) bounding the total cost with cuts; the search tries it
  when its own caps fail. Hence

      max CTA cost <= ceil((W0 + (C - 1)(Fmax + 2 Smax)) / C) + G + merge_launch.

  The search minimizes the max (the makespan), not the spread: it leaves a CTA idle rather
  than pay more for a cut than the cut saves. Measured (132 CTAs, defaults, decode): one 128k
  request among 127 short ones U(1, 4096): max within 1.4-3.8% of the mean CTA cost for
  H = 16..128; ragged U(1, 8192) batches of 128..2048: within 0.1-1.4%; adversarial shapes
  (127 requests of exactly 1000 tokens + one of 128k at H=128, where cutting the short ones
  costs more than it saves: 7 CTAs stay idle) up to ~8%; by our estimate a plan that cut
  the short tiles to use every CTA would have a makespan within ~1% of that one.
  With CostModel(allow_split=False): max CTA cost <= ceil(W0 / C) + the largest tile.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .jit.spec import Export, KernelSpec
from .workspace import (MERGE_FIELDS, REQUEST_FIELDS, WORK_FIELDS, WorkspaceLayout,
                        check_int_workspace)

_I32 = np.dtype(np.int32)
_NUM_STATS = 9


@dataclass(frozen=True)
class CostModel:
    """Planner cost model, in kv-token equivalents (see the module docstring)."""

    fixed: int = 64            # per work item (prologue / pipeline fill / epilogue)
    fixed_per_row: int = 2     # per query row per work item (load q, write o)
    split_per_row: int = 4     # per query row per partial piece (write partial, merge reads it)
    min_chunk: int = 128       # shortest piece of a cut tile, tokens (rounded up to kv_tile);
                               # 128 beat 256 and 64 on B=1 latency (H200, benchmarks/results/decode_tuning.jsonl)
    min_chunk_sqrt: int = 0    # > 0: pieces also >= this x sqrt(longest kv_len), rounded up to
                               # kv_tile (0: off); the sm90 family uses 4 (decode_tuning.jsonl, tags mc*)
    merge_launch: int = 64     # a plan with cuts must beat the no-cut plan by more than this
    allow_split: bool = True   # False: never cut a tile (no partials, no merge work)
    pair_merge: bool = False   # True: a tile cut in two pieces that are the only items of CTAs
                               # 2k and 2k + 1 is merged on chip by that cluster of two CTAs
                               # (the sm90 kernel; plan.h kSlotPairLow / kSlotPairHigh)
    min_chunk_div: int = 0     # > 0: min_chunk_sqrt's piece is at most longest kv_len / this
                               # (rounded up to kv_tile, never below min_chunk); 0: off
    fine_split_div: int = 0    # > 0: a batch of at most num_ctas / this kv tiles in all (summed
                               # over its row tiles) may be cut into pieces of longest kv_len /
                               # min_chunk_div tokens (one kv tile without that cap; min_chunk
                               # and min_chunk_sqrt are then not applied); 0: off

    def __post_init__(self):
        for name in ("fixed", "fixed_per_row", "split_per_row", "min_chunk", "min_chunk_sqrt",
                     "merge_launch", "min_chunk_div", "fine_split_div"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"CostModel.{name}: expected an int >= 0, got {v!r}")


DEFAULT_COST = CostModel()


class PlannerConfigStruct(ctypes.Structure):
    """Mirror of planner.h ``PlannerConfig`` (its size is checked against the library)."""

    _fields_ = [(n, ctypes.c_int32) for n in (
        "struct_size", "num_heads", "page_size", "causal", "num_ctas", "rows_per_tile",
        "kv_tile", "max_batch", "max_row_tiles", "max_work_items", "max_merge_items",
        "max_partial_slots", "off_counts", "off_cta_work_indptr", "off_request_info",
        "off_merge_info", "off_work_info", "int_workspace_elems", "allow_split", "min_chunk",
        "min_chunk_sqrt", "pair_merge", "min_chunk_div", "fine_split_div")] + \
        [(n, ctypes.c_int64) for n in (
            "fixed_cost", "fixed_cost_per_row", "split_cost_per_row", "merge_launch_cost")] + \
        [("ws", ctypes.c_void_p), ("stats", ctypes.c_void_p)]


class PlanResult(NamedTuple):
    """What plan() returns (the plan itself is in the staging buffer)."""

    num_work_items: int
    num_merge_items: int
    num_partial_slots: int
    copy_bytes: int        # copy staging[0:copy_bytes] to the device int workspace
    max_cta_cost: int      # cost-model units
    total_cost: int
    lower_bound: int       # ceil(sum of whole-tile costs / num_ctas)
    passes: int            # greedy sweeps run
    num_row_tiles: int


# ------------------------------------------------------------------------------- JIT
def planner_spec() -> KernelSpec:
    """The host-only planner library (built with nvcc as plain C++; no GPU needed)."""
    return KernelSpec(
        family="planner", template="planner.cpp.jinja", arch="host",
        exports=(Export("mlaw_plan", ("ptr", "i32", "ptr", "ptr", "ptr")),
                 Export("mlaw_planner_config_size", ())),
        header_dirs=("common", "planner"), extra_flags=("-cudart=none",))


def warmup_specs(arch: str, dtypes: list[str]) -> list[KernelSpec]:
    """`python -m mla_wrapper warmup`: the planner is arch-independent (one host library)."""
    return [planner_spec()]


_MODULE = None


def _module():
    global _MODULE
    if _MODULE is None:
        from .jit import load  # noqa: PLC0415

        mod = load(planner_spec())
        got = mod.mlaw_planner_config_size()
        if got != ctypes.sizeof(PlannerConfigStruct):
            raise RuntimeError(f"planner library's PlannerConfig is {got} bytes, the Python mirror "
                               f"{ctypes.sizeof(PlannerConfigStruct)}: planner.py and planner.h "
                               "disagree")
        _MODULE = mod
    return _MODULE


# ------------------------------------------------------------------------- arguments
_torch = None


def _torch_mod():
    global _torch
    if _torch is None:
        import torch  # noqa: PLC0415

        _torch = torch
    return _torch


_from_buffer = ctypes.c_char.from_buffer
_addressof = ctypes.addressof


def _index_ptr(name: str, a) -> int:
    """Host address of a 1-d contiguous int32 numpy array / CPU tensor (fast path first)."""
    if type(a) is np.ndarray:
        if a.dtype is _I32 and a.ndim == 1:
            try:
                return _addressof(_from_buffer(a))  # writable, contiguous, non-empty
            except (TypeError, ValueError, BufferError):
                pass
        return _slow_ptr(name, a)
    torch = _torch_mod()
    if isinstance(a, torch.Tensor) and a.dtype is torch.int32 and a.is_cpu and a.dim() == 1 \
            and a.is_contiguous():
        return a.data_ptr()
    return _slow_ptr(name, a)


def _slow_ptr(name: str, a) -> int:
    if isinstance(a, np.ndarray):
        if a.dtype != _I32:
            raise ValueError(f"{name}: expected int32, got {a.dtype} (convert with "
                             ".astype(np.int32))")
        if a.ndim != 1:
            raise ValueError(f"{name}: expected a 1-d array, got shape {list(a.shape)}")
        if not a.flags.c_contiguous:
            raise ValueError(f"{name}: must be contiguous (use np.ascontiguousarray)")
        return a.ctypes.data
    torch = _torch_mod()
    if isinstance(a, torch.Tensor):
        if a.dtype != torch.int32:
            raise ValueError(f"{name}: expected int32, got {str(a.dtype).replace('torch.', '')} "
                             "(convert with .int())")
        if not a.is_cpu:
            raise ValueError(f"{name}: expected a host (CPU) tensor, got one on {a.device}: the "
                             "planner reads lengths on the host; pass host copies")
        if a.dim() != 1:
            raise ValueError(f"{name}: expected a 1-d tensor, got shape {list(a.shape)}")
        if not a.is_contiguous():
            raise ValueError(f"{name}: must be contiguous (call .contiguous())")
        return a.data_ptr()
    raise ValueError(f"{name}: expected an int32 numpy array or CPU torch tensor, got "
                     f"{type(a).__name__}")


def _out_ptr(a, need_elems: int) -> int:
    """Address of the staging buffer (int address, int32 numpy array or CPU tensor)."""
    if isinstance(a, int):
        return a
    if isinstance(a, np.ndarray):
        if a.dtype != _I32 or not a.flags.c_contiguous or not a.flags.writeable:
            raise ValueError(f"out: expected a writable contiguous int32 array, got dtype {a.dtype}")
        if a.size < need_elems:
            raise ValueError(f"out: staging buffer needs {need_elems} int32 elements "
                             f"({need_elems * 4} bytes, layout.int_workspace_bytes), got {a.size}")
        return a.ctypes.data
    torch = _torch_mod()
    if isinstance(a, torch.Tensor):
        if not a.is_cpu or not a.is_contiguous():
            raise ValueError(f"out: expected a contiguous host tensor, got device {a.device}")
        nbytes = a.numel() * a.element_size()
        if nbytes < need_elems * 4:
            raise ValueError(f"out: staging buffer needs {need_elems * 4} bytes "
                             f"(layout.int_workspace_bytes), got {nbytes}")
        return a.data_ptr()
    raise ValueError(f"out: expected an int32 numpy array, a CPU tensor or an address, got "
                     f"{type(a).__name__}")


# --------------------------------------------------------------------------- planner
class Planner:
    """A planner bound to one (layout, num_heads, page_size, causal, cost model).

    ``plan(qo_indptr, kv_indptr, kv_len_arr, out)`` fills ``out`` (the host staging copy of
    the int workspace: an int32 numpy array / CPU tensor of >= layout.int_workspace_elems, or
    its address as an int, trusted) and returns a PlanResult. Inputs: host int32 numpy arrays
    or CPU tensors, qo_indptr / kv_indptr [B+1], kv_len_arr [B]. Raises ValueError naming the
    argument (int64 arrays, lengths inconsistent, negative lengths, too few pages, batch or row
    tiles over the layout's capacities).
    """

    def __init__(self, layout: WorkspaceLayout, num_heads: int, page_size: int, causal: bool,
                 cost: CostModel | None = None):
        if not isinstance(layout, WorkspaceLayout):
            raise ValueError(f"layout: expected a WorkspaceLayout, got {type(layout).__name__}")
        for name, v in (("num_heads", num_heads), ("page_size", page_size)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: expected an int >= 1, got {v!r}")
        cost = DEFAULT_COST if cost is None else cost
        if not isinstance(cost, CostModel):
            raise ValueError(f"cost: expected a CostModel, got {type(cost).__name__}")
        self.layout, self.num_heads, self.page_size = layout, num_heads, page_size
        self.causal, self.cost = bool(causal), cost
        K, R = layout.kv_tile, layout.rows_per_tile
        min_chunk = max(K, -(-cost.min_chunk // K) * K)
        if cost.fixed + (cost.fixed_per_row + cost.split_per_row) * R >= 1 << 30 \
                or min_chunk >= 1 << 30:
            raise ValueError(f"cost: per-item costs must stay below 2**30 tokens, got {cost}")
        if cost.min_chunk_sqrt >= 1 << 14:  # x sqrt(2**31) must stay below 2**30 tokens
            raise ValueError(f"cost.min_chunk_sqrt: must be < {1 << 14}, got {cost.min_chunk_sqrt}")
        for name in ("min_chunk_div", "fine_split_div"):
            if getattr(cost, name) >= 1 << 31:
                raise ValueError(f"cost.{name}: must be < 2**31, got {getattr(cost, name)}")
        cfg = PlannerConfigStruct(
            ctypes.sizeof(PlannerConfigStruct), num_heads, page_size, int(self.causal),
            layout.num_ctas, layout.rows_per_tile, K, layout.max_batch, layout.max_row_tiles,
            layout.max_work_items, layout.max_merge_items, layout.max_partial_slots,
            layout.counts_offset, layout.cta_work_indptr_offset, layout.request_info_offset,
            layout.merge_info_offset, layout.work_info_offset, layout.int_workspace_elems,
            int(cost.allow_split), min_chunk, cost.min_chunk_sqrt, int(cost.pair_merge),
            cost.min_chunk_div, cost.fine_split_div, cost.fixed, cost.fixed_per_row,
            cost.split_per_row, cost.merge_launch)
        self.min_chunk = min_chunk
        self._stats = (ctypes.c_int64 * _NUM_STATS)()
        self._stats_np = np.frombuffer(self._stats, dtype=np.int64)
        cfg.stats = ctypes.addressof(self._stats)
        self._cfg = cfg
        self._cfg_ptr = ctypes.addressof(cfg)
        mod = _module()
        self._mod = mod
        self._fn = mod.mlaw_plan
        self._max_batch = layout.max_batch
        self._need = layout.int_workspace_elems
        self._out_obj = self._out_prev = None  # staging buffers seen last (kept alive)
        self._out_prev_addr = None

    def plan(self, qo_indptr, kv_indptr, kv_len_arr, out) -> PlanResult:
        b = len(kv_len_arr)
        if len(qo_indptr) != b + 1 or len(kv_indptr) != b + 1:
            raise ValueError(self._length_message(qo_indptr, kv_indptr, b))
        if b > self._max_batch:
            raise ValueError(f"batch size {b} exceeds the CUDA-graph capacity {self._max_batch} "
                             "set at construction (layout.max_batch)")
        if out is not self._out_obj:  # a 2-entry cache: double-buffered staging alternates
            if out is self._out_prev:
                self._out_prev, self._out_prev_addr, self._out_obj, self._cfg.ws = \
                    self._out_obj, self._cfg.ws, out, self._out_prev_addr
            else:
                addr = _out_ptr(out, self._need)
                self._out_prev, self._out_prev_addr = self._out_obj, self._cfg.ws
                self._out_obj, self._cfg.ws = out, addr
        status = self._fn(self._cfg_ptr, b, _index_ptr("qo_indptr", qo_indptr),
                          _index_ptr("kv_indptr", kv_indptr), _index_ptr("kv_len_arr", kv_len_arr))
        if status:
            raise ValueError(self._mod._status_string(status).decode(errors="replace"))
        return tuple.__new__(PlanResult, self._stats_np.tolist())

    @staticmethod
    def _length_message(qo_indptr, kv_indptr, b: int) -> str:
        for name, a in (("qo_indptr", qo_indptr), ("kv_indptr", kv_indptr)):
            if len(a) != b + 1:
                return (f"{name}: expected {b + 1} entries (batch + 1) for kv_len_arr's batch of "
                        f"{b}, got {len(a)}")
        return "qo_indptr / kv_indptr: lengths inconsistent with kv_len_arr"


_PLANNERS: dict = {}
_LAST: list = [None, None]  # identity fast path: the planner of the previous call and its cost


def plan(qo_indptr, kv_indptr, kv_len_arr, num_heads: int, page_size: int, causal: bool,
         layout: WorkspaceLayout, out, cost: CostModel | None = None) -> PlanResult:
    """Plan one batch into ``out`` (see Planner.plan). num_ctas, rows_per_tile and kv_tile are
    the layout's. Caches one Planner per configuration; engines can hold a Planner instead."""
    p = _LAST[0]
    if p is not None and p.layout is layout and p.num_heads == num_heads \
            and p.page_size == page_size and p.causal == bool(causal) and _LAST[1] is cost:
        return p.plan(qo_indptr, kv_indptr, kv_len_arr, out)
    key = (layout, num_heads, page_size, bool(causal), cost)
    p = _PLANNERS.get(key)
    _LAST[:] = [None, None]
    if p is None:
        if len(_PLANNERS) >= 64:
            _PLANNERS.clear()
        p = _PLANNERS[key] = Planner(layout, num_heads, page_size, causal, cost)
    _LAST[:] = [p, cost]
    return p.plan(qo_indptr, kv_indptr, kv_len_arr, out)


# ----------------------------------------------------------------------- decoding
@dataclass
class DecodedPlan:
    """The plan read back from a staging buffer (for tests and debugging; copies)."""

    counts: np.ndarray           # [4]
    cta_work_indptr: np.ndarray  # [num_ctas + 1]
    work_info: np.ndarray        # [num_work_items, 9]: request, row tile, kv_start, kv_end, slot,
                                 # then the request's qo_start, qo_len, kv_len, page_start
    request_info: np.ndarray     # [batch, 4]: qo_start, qo_len, kv_len, page_start
    merge_info: np.ndarray       # [num_merge_items, 4]: request, row tile, first slot, slots


def decode(layout: WorkspaceLayout, buf) -> DecodedPlan:
    a = np.asarray(buf).view(np.int32).reshape(-1)
    check_int_workspace(layout, a.size * 4, "buf")
    counts = a[layout.counts_offset: layout.counts_offset + 4].copy()
    nw, nm, b = int(counts[0]), int(counts[1]), int(counts[2])
    C = layout.num_ctas
    return DecodedPlan(
        counts=counts,
        cta_work_indptr=a[layout.cta_work_indptr_offset: layout.cta_work_indptr_offset + C + 1].copy(),
        work_info=a[layout.work_info_offset: layout.work_info_offset + nw * WORK_FIELDS]
        .reshape(nw, WORK_FIELDS).copy(),
        request_info=a[layout.request_info_offset: layout.request_info_offset + b * REQUEST_FIELDS]
        .reshape(b, REQUEST_FIELDS).copy(),
        merge_info=a[layout.merge_info_offset: layout.merge_info_offset + nm * MERGE_FIELDS]
        .reshape(nm, MERGE_FIELDS).copy(),
    )


def plan_arrays(qo_indptr, kv_indptr, kv_len_arr, num_heads: int, page_size: int, causal: bool,
                layout: WorkspaceLayout, cost: CostModel | None = None,
                fill: int = -7) -> tuple[DecodedPlan, PlanResult, np.ndarray]:
    """Plan into a fresh buffer (filled with `fill` first) and decode it: (plan, result, buf)."""
    buf = np.full(layout.int_workspace_elems, fill, dtype=np.int32)
    res = Planner(layout, num_heads, page_size, causal, cost).plan(qo_indptr, kv_indptr,
                                                                   kv_len_arr, buf)
    return decode(layout, buf), res, buf
