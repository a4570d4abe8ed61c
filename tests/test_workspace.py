"""Workspace layout arithmetic, the float-workspace error, and the ctypes mirrors of plan.h.

The mirror test compiles a tiny host program against the real headers (nvcc, marked
`compile`) that prints sizeof / offsetof of every field, so the Python structs cannot drift.
"""
from __future__ import annotations

import ctypes
import json
import dataclasses

import pytest

from mla_wrapper.workspace import (MlaPlanStruct, MlaRunArgsStruct, WorkspaceLayout,
                                   check_float_workspace, check_int_workspace, make_plan_struct,
                                   row_tiles_bound)

LAYOUTS = [
    dict(max_batch=1, max_row_tiles=1, num_ctas=1),
    dict(max_batch=1, max_row_tiles=2, num_ctas=132),
    dict(max_batch=128, max_row_tiles=256, num_ctas=132),
    dict(max_batch=7, max_row_tiles=29, num_ctas=3, rows_per_tile=16, kv_tile=32),
    dict(max_batch=2048, max_row_tiles=4096, num_ctas=296, rows_per_tile=128),
    dict(max_batch=0, max_row_tiles=0, num_ctas=5),
]


@pytest.mark.parametrize("kw", LAYOUTS)
def test_layout_offsets(kw):
    L = WorkspaceLayout(**kw)
    C = L.num_ctas
    assert L.max_work_items == L.max_row_tiles + C - 1
    assert L.max_merge_items == min(C - 1, L.max_row_tiles)   # one merge item per cut tile
    assert L.max_partial_slots == 2 * (C - 1)
    regions = [
        (L.counts_offset, 4),
        (L.cta_work_indptr_offset, C + 1),
        (L.request_info_offset, 4 * L.max_batch),
        (L.merge_info_offset, 4 * L.max_merge_items),
        (L.work_info_offset, 9 * L.max_work_items),
    ]
    end = 0
    for off, n in regions:  # in order, 16-byte aligned, non-overlapping, inside the workspace
        assert off % 4 == 0 and off >= end
        end = off + n
    assert end <= L.int_workspace_elems and L.int_workspace_bytes == 4 * L.int_workspace_elems
    assert L.work_info_offset == regions[-1][0]  # last: the copy ends in it
    o_bytes = L.max_partial_slots * L.rows_per_tile * L.head_dim_ckv * 4
    assert L.partial_o_offset % 128 == 0 and L.partial_lse_offset % 16 == 0
    assert L.partial_lse_offset >= L.partial_o_offset + o_bytes
    assert L.float_workspace_bytes >= L.partial_lse_offset + L.max_partial_slots * L.rows_per_tile * 4


def test_layout_is_frozen_and_hashable():
    L = WorkspaceLayout(max_batch=4, max_row_tiles=8, num_ctas=16)
    with pytest.raises(dataclasses.FrozenInstanceError):
        L.max_batch = 5
    assert L == WorkspaceLayout(max_batch=4, max_row_tiles=8, num_ctas=16)
    assert hash(L) == hash(WorkspaceLayout(max_batch=4, max_row_tiles=8, num_ctas=16))
    assert L.fits(WorkspaceLayout(max_batch=3, max_row_tiles=8, num_ctas=16))
    assert not L.fits(WorkspaceLayout(max_batch=5, max_row_tiles=8, num_ctas=16))


def test_layout_validation():
    with pytest.raises(ValueError, match=r"num_ctas: expected an int >= 1, got 0"):
        WorkspaceLayout(max_batch=4, max_row_tiles=8, num_ctas=0)
    with pytest.raises(ValueError, match=r"max_batch: expected an int >= 0"):
        WorkspaceLayout(max_batch=-1, max_row_tiles=8, num_ctas=2)
    with pytest.raises(ValueError, match=r"max_row_tiles: int workspace"):
        WorkspaceLayout(max_batch=4, max_row_tiles=1 << 30, num_ctas=2)


def test_for_batch_decode_and_mtp():
    L = WorkspaceLayout.for_batch(128, 128, 128, 132)
    assert L.max_row_tiles == 256
    L = WorkspaceLayout.for_batch(64, 4 * 64, 16, 132, max_qo_len=4)  # MTP: 4 x 16 = one tile
    assert L.max_row_tiles == 64
    assert WorkspaceLayout.for_batch(64, 4 * 64, 16, 132).max_row_tiles == 127  # any split
    assert row_tiles_bound(3, 3, 16, 64) == 3
    assert row_tiles_bound(2, 10, 16, 64) == 4  # 9 + 1 tokens: ceil(144 / 64) + 1


def test_row_tiles_bound_brute_force():
    import itertools

    for H, R in ((16, 64), (128, 64), (32, 128), (3, 7)):
        for B in (1, 2, 3):
            for N in range(0, 9):
                worst = 0
                worst_q = {}
                for q in itertools.product(range(N + 1), repeat=B):
                    if sum(q) <= N:
                        tiles = sum(-(-(x * H) // R) for x in q)
                        worst = max(worst, tiles)
                        worst_q[max(q)] = max(worst_q.get(max(q), 0), tiles)
                assert worst <= row_tiles_bound(B, N, H, R), (H, R, B, N)
                for mq, tiles in worst_q.items():
                    assert tiles <= row_tiles_bound(B, N, H, R, max_qo_len=mq)


def test_float_workspace_error_message():
    L = WorkspaceLayout(max_batch=128, max_row_tiles=256, num_ctas=132)
    check_float_workspace(L, L.float_workspace_bytes)
    with pytest.raises(ValueError, match=rf"float_workspace_buffer: needs {L.float_workspace_bytes} "
                                          r"bytes .*262 split-KV partial slots.*got 1024 bytes"):
        check_float_workspace(L, 1024)
    with pytest.raises(ValueError, match=rf"int_workspace_buffer: needs {L.int_workspace_bytes} bytes"):
        check_int_workspace(L, 16)


def test_make_plan_struct():
    L = WorkspaceLayout(max_batch=8, max_row_tiles=16, num_ctas=4)
    s = make_plan_struct(L, 0x10000, 0x200000)
    assert s.counts == 0x10000 + 4 * L.counts_offset
    assert s.cta_work_indptr == 0x10000 + 4 * L.cta_work_indptr_offset
    assert s.work_info == 0x10000 + 4 * L.work_info_offset
    assert s.request_info == 0x10000 + 4 * L.request_info_offset
    assert s.merge_info == 0x10000 + 4 * L.merge_info_offset
    assert s.partial_o == 0x200000 + L.partial_o_offset
    assert s.partial_lse == 0x200000 + L.partial_lse_offset
    assert (s.num_ctas, s.rows_per_tile, s.kv_tile, s.max_merge_items) == (4, 64, 64, 3)
    with pytest.raises(ValueError, match=r"float_workspace_buffer: data pointer .* 128-byte aligned"):
        make_plan_struct(L, 0x10000, 0x200040)
    with pytest.raises(ValueError, match=r"int_workspace_buffer: data pointer .* 16-byte aligned"):
        make_plan_struct(L, 0x10004, 0x200000)


# ------------------------------------------------------------------ mirror vs headers
def _layout_program(structs) -> str:
    lines = ['#include <cstddef>', '#include <cstdio>',
             '#include "mla_wrapper/common/plan.h"', '#include "mla_wrapper/planner/planner.h"',
             'int main() {', '  std::printf("{");']
    first = True
    for cname, pystruct in structs:
        for field, _ in pystruct._fields_:
            sep = "" if first else ","
            first = False
            lines.append(f'  std::printf("{sep}\\"{cname}.{field}\\": [%zu, %zu]", '
                         f'offsetof({cname}, {field}), sizeof((({cname}*)0)->{field}));')
        lines.append(f'  std::printf(",\\"{cname}\\": [0, %zu]", sizeof({cname}));')
    lines += ['  std::printf("}\\n");', '  return 0;', '}']
    return "\n".join(lines) + "\n"


@pytest.mark.compile
def test_ctypes_mirrors_match_headers(host_program):
    from mla_wrapper.planner import PlannerConfigStruct

    structs = [("mlaw::MlaPlan", MlaPlanStruct), ("mlaw::MlaRunArgs", MlaRunArgsStruct),
               ("mlaw::planner::PlannerConfig", PlannerConfigStruct)]
    run = host_program(_layout_program(structs), "-cudart=none")
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    for cname, pystruct in structs:
        assert got[cname][1] == ctypes.sizeof(pystruct), cname
        for field, ctype in pystruct._fields_:
            off, size = got[f"{cname}.{field}"]
            assert getattr(pystruct, field).offset == off, f"{cname}.{field} offset"
            assert ctypes.sizeof(ctype) == size, f"{cname}.{field} size"
