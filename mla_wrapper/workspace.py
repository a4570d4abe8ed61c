"""Workspace layout: where the plan (int workspace) and split-KV partials (float workspace) live.

Two device buffers serve a wrapper:

* the **int workspace** (int32 elements; the planner fills a host staging copy of it and the
  wrapper copies that to the device with ONE async copy of ``copy_bytes`` bytes, see
  planner.py). Arrays, in this order, each starting on a 16-byte boundary::

      counts           [4]                          num_work_items, num_merge_items, batch, rows
      cta_work_indptr  [num_ctas + 1]
      request_info     [max_batch * 4]               plan.h kRequest* fields
      merge_info       [max_merge_items * 4]         plan.h kMerge* fields
      work_info        [max_work_items * 9]          plan.h kWork* fields (last: its used part
                                                     is a prefix, so the copy ends there)

* the **float workspace** (the user's ``float_workspace_buffer``)::

      partial_o    [max_partial_slots, rows_per_tile, head_dim_ckv] float32   offset 0 (128 B aligned;
                   sized for float32: sm90 writes the output's 16-bit type into its first half)
      partial_lse  [max_partial_slots, rows_per_tile] float32                 16 B aligned

Capacities (what the planner provably never exceeds, with T = row tiles of the batch <=
max_row_tiles and C = num_ctas; see planner.py for the proof). The planner's sweep cuts a tile
only when it closes a CTA, and at most C - 1 CTAs close before the last one, so at most C - 1
cuts happen per plan:

    work items     <= T + (C - 1)          (every tile is one item, each cut adds one)
    merge items    <= min(C - 1, T)        (a merged tile contains at least one cut)
    partial slots  <= 2 (C - 1)            (a tile cut k times has k + 1 slots: k + 1 <= 2k)

All capacities depend only on construction-time sizes, never on the lengths, which is what
the CUDA-graph contract needs (fixed addresses, fixed grid).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

HEAD_DIM_CKV = 512
_INT_ALIGN_ELEMS = 4        # 16 bytes of int32
_PARTIAL_O_ALIGN = 128      # bytes
_PARTIAL_LSE_ALIGN = 16     # bytes

# plan.h enums
WORK_FIELDS = 9             # kWorkRequest, kWorkRowTile, kWorkKvStart, kWorkKvEnd, kWorkPartialSlot,
                            # then the request's fields: kWorkQoStart, kWorkQoLen, kWorkKvLen, kWorkPageStart
REQUEST_FIELDS = 4          # kRequestQoStart, kRequestQoLen, kRequestKvLen, kRequestPageStart
MERGE_FIELDS = 4            # kMergeRequest, kMergeRowTile, kMergeFirstSlot, kMergeNumSlots
NUM_COUNTS = 4


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def _check_pos_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name}: expected an int >= {minimum}, got {value!r}")
    return value


def row_tiles_bound(max_batch: int, max_num_tokens: int, num_heads: int,
                    rows_per_tile: int, max_qo_len: int | None = None) -> int:
    """Most row tiles a batch of <= max_batch requests and <= max_num_tokens query tokens
    (each <= max_qo_len, if given) can have: sum_r ceil(q_r H / R) is at most
    N ceil(H / R), floor((N H + B (R - 1)) / R) and B ceil(max_qo_len H / R).
    Decode (one token per request): max_batch * ceil(H / R)."""
    per_token = -(-num_heads // rows_per_tile)
    b = min(max_batch, max_num_tokens)
    bound = min(max_num_tokens * per_token,
                (max_num_tokens * num_heads + b * (rows_per_tile - 1)) // rows_per_tile)
    if max_qo_len is not None:
        bound = min(bound, max_batch * -(-(max_qo_len * num_heads) // rows_per_tile))
    return bound


@dataclass(frozen=True)
class WorkspaceLayout:
    """Offsets and capacities of the int and float workspaces for fixed capacities.

    Construct with the capacities; every other field is derived (int32 element offsets into
    the int workspace, byte offsets into the float workspace, sizes in bytes).
    """

    max_batch: int
    max_row_tiles: int
    num_ctas: int
    rows_per_tile: int = 64
    kv_tile: int = 64
    head_dim_ckv: int = HEAD_DIM_CKV

    max_work_items: int = field(init=False)
    max_merge_items: int = field(init=False)
    max_partial_slots: int = field(init=False)
    counts_offset: int = field(init=False)            # int32 elements
    cta_work_indptr_offset: int = field(init=False)   # int32 elements
    request_info_offset: int = field(init=False)      # int32 elements
    merge_info_offset: int = field(init=False)        # int32 elements
    work_info_offset: int = field(init=False)         # int32 elements
    int_workspace_elems: int = field(init=False)
    int_workspace_bytes: int = field(init=False)
    partial_o_offset: int = field(init=False)         # bytes into the float workspace
    partial_lse_offset: int = field(init=False)       # bytes into the float workspace
    float_workspace_bytes: int = field(init=False)

    def __post_init__(self):
        _check_pos_int("max_batch", self.max_batch, 0)
        _check_pos_int("max_row_tiles", self.max_row_tiles, 0)
        _check_pos_int("num_ctas", self.num_ctas)
        _check_pos_int("rows_per_tile", self.rows_per_tile)
        _check_pos_int("kv_tile", self.kv_tile)
        _check_pos_int("head_dim_ckv", self.head_dim_ckv)
        C = self.num_ctas
        max_work = self.max_row_tiles + C - 1   # >= C - 1 records: plan.h, MlaPlan.work_info
        max_merge = min(C - 1, self.max_row_tiles)   # one merge item per cut tile at most
        max_slots = 2 * (C - 1)
        off = 0
        offsets = {}
        for name, n in (("counts_offset", NUM_COUNTS),
                        ("cta_work_indptr_offset", C + 1),
                        ("request_info_offset", self.max_batch * REQUEST_FIELDS),
                        ("merge_info_offset", max_merge * MERGE_FIELDS),
                        ("work_info_offset", max_work * WORK_FIELDS)):
            offsets[name] = off
            off = _round_up(off + n, _INT_ALIGN_ELEMS)
        if off >= 2 ** 31:
            raise ValueError(f"max_row_tiles: int workspace of {off} int32 elements overflows "
                             "int32 offsets; lower max_batch / max_row_tiles")
        o_bytes = max_slots * self.rows_per_tile * self.head_dim_ckv * 4
        lse_off = _round_up(o_bytes, _PARTIAL_LSE_ALIGN)
        lse_bytes = max_slots * self.rows_per_tile * 4
        values = dict(offsets, max_work_items=max_work, max_merge_items=max_merge,
                      max_partial_slots=max_slots, int_workspace_elems=off,
                      int_workspace_bytes=off * 4, partial_o_offset=0,
                      partial_lse_offset=lse_off,
                      float_workspace_bytes=_round_up(lse_off + lse_bytes, _PARTIAL_O_ALIGN))
        for k, v in values.items():
            object.__setattr__(self, k, v)

    @classmethod
    def for_batch(cls, max_batch: int, max_num_tokens: int, num_heads: int, num_ctas: int,
                  rows_per_tile: int = 64, kv_tile: int = 64,
                  max_qo_len: int | None = None) -> "WorkspaceLayout":
        """A layout for any batch of <= max_batch requests and <= max_num_tokens query tokens,
        each request <= max_qo_len tokens if given (decode: max_num_tokens = max_batch; MTP
        with n tokens each: max_num_tokens = n * max_batch, max_qo_len = n)."""
        return cls(max_batch=max_batch,
                   max_row_tiles=row_tiles_bound(max_batch, max_num_tokens, num_heads,
                                                 rows_per_tile, max_qo_len),
                   num_ctas=num_ctas, rows_per_tile=rows_per_tile, kv_tile=kv_tile)

    def fits(self, other: "WorkspaceLayout") -> bool:
        """True when every capacity of `other` is <= this one's with the same tile shape (a
        wrapper outside CUDA graphs can keep a grow-only layout)."""
        return (self.num_ctas == other.num_ctas and self.rows_per_tile == other.rows_per_tile
                and self.kv_tile == other.kv_tile and self.head_dim_ckv == other.head_dim_ckv
                and self.max_batch >= other.max_batch and self.max_row_tiles >= other.max_row_tiles)


def check_float_workspace(layout: WorkspaceLayout, nbytes: int) -> None:
    """ValueError naming float_workspace_buffer when it holds fewer than the layout needs."""
    if nbytes < layout.float_workspace_bytes:
        need = layout.float_workspace_bytes
        raise ValueError(
            f"float_workspace_buffer: needs {need} bytes ({need / 2**20:.1f} MiB) for "
            f"{layout.max_partial_slots} split-KV partial slots of [{layout.rows_per_tile}, "
            f"{layout.head_dim_ckv}] float32 outputs + LSE (2 * (num_ctas - 1) slots, "
            f"num_ctas={layout.num_ctas}), got {nbytes} bytes; pass a larger buffer "
            f"(e.g. torch.empty({_round_up(need, 1 << 20)}, dtype=torch.uint8, device='cuda'))")


def check_int_workspace(layout: WorkspaceLayout, nbytes: int, name: str = "int_workspace_buffer") -> None:
    if nbytes < layout.int_workspace_bytes:
        raise ValueError(f"{name}: needs {layout.int_workspace_bytes} bytes for the plan "
                         f"(max_batch={layout.max_batch}, max_row_tiles={layout.max_row_tiles}, "
                         f"num_ctas={layout.num_ctas}), got {nbytes}")


# ----------------------------------------------------------------------- ctypes mirrors
_p = ctypes.c_void_p
_i32 = ctypes.c_int32
_i64 = ctypes.c_int64


class MlaPlanStruct(ctypes.Structure):
    """Mirror of plan.h ``MlaPlan`` (field order and types; checked against the header by
    tests/test_workspace.py)."""

    _fields_ = [
        ("cta_work_indptr", _p),
        ("work_info", _p),
        ("request_info", _p),
        ("merge_info", _p),
        ("counts", _p),
        ("partial_o", _p),
        ("partial_lse", _p),
        ("num_ctas", _i32),
        ("rows_per_tile", _i32),
        ("kv_tile", _i32),
        ("max_merge_items", _i32),
    ]


class MlaRunArgsStruct(ctypes.Structure):
    """Mirror of plan.h ``MlaRunArgs``."""

    _fields_ = [
        ("q_nope", _p),
        ("q_pe", _p),
        ("ckv", _p),
        ("kpe", _p),
        ("out", _p),
        ("lse", _p),
        ("kv_indices", _p),
        ("q_nope_stride_token", _i64), ("q_nope_stride_head", _i64),
        ("q_pe_stride_token", _i64), ("q_pe_stride_head", _i64),
        ("ckv_stride_page", _i64), ("ckv_stride_token", _i64),
        ("kpe_stride_page", _i64), ("kpe_stride_token", _i64),
        ("out_stride_token", _i64), ("out_stride_head", _i64),
        ("lse_stride_token", _i64),
        ("num_heads", _i32),
        ("page_size", _i32),
        ("sm_scale", ctypes.c_float),
        ("causal", _i32),
        ("lse_base_e", _i32),
        ("num_pages", _i32),
        ("num_q_tokens", _i32),
        ("enable_pdl", _i32),
        ("ckv_scale", ctypes.c_float),   # an fp8 (e4m3) cache's scales (sm90); 16-bit: unused
        ("kpe_scale", ctypes.c_float),
        ("lse_seq_tokens", _i32),        # n > 1: lse in FlashMLA's [batch, heads, n] layout
    ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ckv_scale = self.kpe_scale = 1.0


def make_plan_struct(layout: WorkspaceLayout, int_ws_ptr: int, float_ws_ptr: int) -> MlaPlanStruct:
    """An MlaPlan pointing into the device int workspace (int_ws_ptr, >= int_workspace_bytes,
    16-byte aligned) and float workspace (float_ws_ptr, >= float_workspace_bytes, 128-byte
    aligned). Build it once per (layout, buffers): the addresses never change between steps."""
    if int_ws_ptr % 16:
        raise ValueError(f"int_workspace_buffer: data pointer {int_ws_ptr:#x} must be 16-byte aligned")
    if float_ws_ptr % _PARTIAL_O_ALIGN:
        raise ValueError(f"float_workspace_buffer: data pointer {float_ws_ptr:#x} must be "
                         f"{_PARTIAL_O_ALIGN}-byte aligned (pass a tensor that starts its storage)")
    s = MlaPlanStruct()
    s.cta_work_indptr = int_ws_ptr + 4 * layout.cta_work_indptr_offset
    s.work_info = int_ws_ptr + 4 * layout.work_info_offset
    s.request_info = int_ws_ptr + 4 * layout.request_info_offset
    s.merge_info = int_ws_ptr + 4 * layout.merge_info_offset
    s.counts = int_ws_ptr + 4 * layout.counts_offset
    s.partial_o = float_ws_ptr + layout.partial_o_offset
    s.partial_lse = float_ws_ptr + layout.partial_lse_offset
    s.num_ctas = layout.num_ctas
    s.rows_per_tile = layout.rows_per_tile
    s.kv_tile = layout.kv_tile
    s.max_merge_items = layout.max_merge_items
    return s
