"""Index bounds and integer arguments the GPU would otherwise trust (issue 11, items 2 and 5).

CPU tests call the host-side checks plan() / run() use; the GPU tests run plan() itself, and
the sanitizer test runs adversarial-but-accepted plans under compute-sanitizer memcheck with
the caching allocator off (so out-of-bounds accesses are not hidden inside pooled blocks)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from mla_wrapper import ops
from mla_wrapper.wrapper import _check_index_bounds, check_page_ids

ROOT = Path(__file__).resolve().parent.parent
i32 = lambda *v: np.array(v, dtype=np.int32)  # noqa: E731


# --------------------------------------------------------------------- 2: index bounds
def test_qo_indptr_must_start_at_zero():
    with pytest.raises(ValueError, match=r"qo_indptr: must start at 0.*qo_indptr\[0\] = 1"):
        _check_index_bounds(i32(1, 2, 3), i32(0, 1, 2), 2)


def test_kv_indices_shorter_than_kv_indptr_end():
    with pytest.raises(ValueError, match="kv_indices: kv_indptr.-1. = 5 pages .* has 4 entries"):
        _check_index_bounds(i32(0, 1, 2), i32(0, 2, 5), 4)
    with pytest.raises(ValueError, match="kv_indptr: first entry must be >= 0"):
        _check_index_bounds(i32(0, 1, 2), i32(-1, 2, 5), 8)
    _check_index_bounds(i32(0, 1, 2), i32(3, 4, 5), 5)   # offset into kv_indices is fine


def test_debug_page_id_check():
    pages = torch.tensor([7, 0, 3, 9, 2], dtype=torch.int32)
    check_page_ids(pages, 1, 3, 4)                  # only [start, end) is read
    with pytest.raises(ValueError, match="page id 9 is outside the cache's 8 pages"):
        check_page_ids(pages, 0, 5, 8)
    with pytest.raises(ValueError, match="page id -1"):
        check_page_ids(torch.tensor([-1], dtype=torch.int32), 0, 1, 8)
    check_page_ids(pages, 2, 2, 1)                  # nothing used: nothing to check


def _gpu_wrapper():
    import mla_wrapper

    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    return mla_wrapper.BatchMLAPagedAttentionWrapper(ws)


def _plan(w, qo, kv, kv_indices, lens, page_size=16):
    w.plan(torch.tensor(qo, dtype=torch.int32), torch.tensor(kv, dtype=torch.int32),
           kv_indices, torch.tensor(lens, dtype=torch.int32), 16, 512, 64, page_size, False,
           0.1, torch.bfloat16, torch.bfloat16)


@pytest.mark.gpu
def test_plan_rejects_out_of_bounds_indices():
    w = _gpu_wrapper()
    pages = torch.arange(4, dtype=torch.int32, device="cuda")
    with pytest.raises(ValueError, match="qo_indptr: must start at 0"):
        _plan(w, [1, 2, 3], [0, 2, 4], pages, [20, 20])
    with pytest.raises(ValueError, match="kv_indices: kv_indptr"):
        _plan(w, [0, 1, 2], [0, 2, 5], pages, [20, 40])
    with pytest.raises(ValueError, match="kv_indptr: must be non-decreasing"):
        _plan(w, [0, 1, 2], [0, 3, 2], pages, [20, 0])


@pytest.mark.gpu
def test_debug_checks_catch_page_ids_past_the_cache(monkeypatch):
    monkeypatch.setenv("MLA_WRAPPER_DEBUG_CHECKS", "1")
    w = _gpu_wrapper()
    _plan(w, [0, 1], [0, 2], torch.tensor([0, 8], dtype=torch.int32, device="cuda"), [20])
    q = torch.randn(1, 16, 576, dtype=torch.bfloat16, device="cuda")
    cache = torch.randn(8, 16, 576, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(ValueError, match="page id 8 is outside the cache's 8 pages"):
        w.run(q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:])


_SANITIZED = textwrap.dedent("""\
    import torch, mla_wrapper
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    i = lambda *v: torch.tensor(v, dtype=torch.int32)
    cache = torch.randn(6, 16, 576, dtype=torch.bfloat16, device="cuda")
    cases = [  # accepted plans at the edges: offsets into kv_indices, the last page, kv_len 0,
               # a partly filled last page, kv_indices longer than needed, qo_len 2 causal
        (i(0, 1, 2), i(3, 4, 6), [0, 0, 0, 5, 4, 1, 0, 0], i(16, 17), False),
        (i(0, 1, 2, 3), i(0, 0, 1, 1), [5], i(0, 1, 0), False),
        (i(0, 2, 4), i(0, 2, 3), [5, 0, 4], i(32, 9), True),
    ]
    for qo, kv, pages, lens, causal in cases:
        w = mla_wrapper.BatchMLAPagedAttentionWrapper(ws)
        w.plan(qo, kv, torch.tensor(pages, dtype=torch.int32, device="cuda"), lens, 16, 512, 64,
               16, causal, 0.1, torch.bfloat16, torch.bfloat16)
        q = torch.randn(int(qo[-1]), 16, 576, dtype=torch.bfloat16, device="cuda")
        out, lse = w.run(q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:],
                         return_lse=True)
    torch.cuda.synchronize()
    print("done")
    """)


@pytest.mark.gpu
def test_adversarial_accepted_plans_under_compute_sanitizer(tmp_path):
    sanitizer = shutil.which("compute-sanitizer")
    if sanitizer is None:
        pytest.skip("compute-sanitizer not found")
    script = tmp_path / "edges.py"
    script.write_text(_SANITIZED)
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1",
               PYTHONPATH=os.pathsep.join([str(ROOT)] + sys.path))
    out = subprocess.run([sanitizer, "--tool", "memcheck", "--error-exitcode", "3",
                          sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "done" in out.stdout, out.stdout[-4000:] + out.stderr[-4000:]
    assert "ERROR SUMMARY: 0 errors" in out.stdout + out.stderr


# ------------------------------------------------ 5: cutlass_mla_get_workspace_size ints
@pytest.mark.parametrize("kwargs,match", [
    (dict(max_seq_len=4096.0), "max_seq_len: expected an int, got float"),
    (dict(max_seq_len="4096"), "max_seq_len: expected an int, got str"),
    (dict(max_seq_len=True), "max_seq_len: expected an int, got bool"),
    (dict(num_batches=2.5), "num_batches: expected an int, got float"),
    (dict(num_batches=1 << 31), "num_batches: expected an int >= 1 and <= 2147483647"),
    (dict(max_seq_len=1 << 31), "max_seq_len: expected an int >= 1 and <= 2147483647"),
    (dict(sm_count=-1), r"sm_count: expected an int >= 0 and <= 2147483647 \(0: the current"),
    (dict(sm_count=132.0), "sm_count: expected an int, got float"),
    (dict(num_kv_splits=False), "num_kv_splits: expected an int, got bool"),
    (dict(num_kv_splits="2"), "num_kv_splits: expected an int, got str"),
    (dict(num_kv_splits=300), "num_kv_splits: expected an int .*<= 256"),
])
def test_workspace_size_validates_ints(kwargs, match):
    args = dict(max_seq_len=4096, num_batches=8, sm_count=132, num_kv_splits=1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        ops.cutlass_mla_get_workspace_size(**args)


def test_workspace_size_accepts_numpy_ints():
    a = ops.cutlass_mla_get_workspace_size(np.int64(4096), np.int32(8), np.int64(132), 4)
    assert a == ops.cutlass_mla_get_workspace_size(4096, 8, 132, 4) > 0
