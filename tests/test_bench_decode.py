"""The benchmark table's cells (benchmarks/bench_decode.py): every field a reader compares shows
in full. Until session 40 a cell was cut at 22 characters, which left "e2e" of "e2e-03" (the
relative error) at the end of most rows, easy to read as "end to end"."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_decode  # noqa: E402


def _rec(**kw):
    rec = {"us": 1068.3, "tflops": 547.2, "gbs": 2969.4, "graph_replay_us": None,
           "graph_replay_flushed_us": None, "rel_err": 2.4e-3}
    rec.update(kw)
    return rec


def test_cell_keeps_every_field():
    cell = bench_decode.table_cell(_rec(), flops_bound=True)
    assert len(cell) == bench_decode.CELL
    assert cell.split() == ["1068.3us", "547TF", "err2e-03"]
    cell = bench_decode.table_cell(_rec(us=25.2), flops_bound=False)
    assert cell.split() == ["25.2us", "2969GB/s", "err2e-03"]


def test_cell_of_a_latency_row_fits():
    # the widest cell: a graph replay hot and after a flush
    cell = bench_decode.table_cell(
        _rec(us=1013.5, gbs=2969.4, graph_replay_us=10.2, graph_replay_flushed_us=13.9),
        flops_bound=False)
    assert len(cell) == bench_decode.CELL
    assert cell.split() == ["1013.5us", "2969GB/s", "g10/14", "err2e-03"]


def test_cell_of_a_failed_or_unchecked_run():
    assert bench_decode.table_cell(None, flops_bound=True).strip() == "fail"
    assert "errnan" in bench_decode.table_cell(_rec(rel_err=float("nan")), flops_bound=True)


def test_case_tensors_take_the_dtype_asked_for():
    """--dtype: the query, the 16-bit cache (and views of them) in the element type asked for; the
    fp8 runner's e4m3 copy and reference follow the case's cache (CPU tensors here)."""
    import torch

    for name, dtype in bench_decode.DTYPES.items():
        c = bench_decode.make_case(16, 2, 100, 16, 1, "cpu", seed=0, dtype=dtype)
        for key in ("q", "q_nope", "q_pe", "cache", "ckv", "kpe"):
            assert c[key].dtype == dtype, (name, key)
        assert bench_decode.fp8_cache(c).dtype == torch.float8_e4m3fn
        c = bench_decode.make_case(16, 2, 100, 16, 1, "cpu", seed=0, data="fp8kv", dtype=dtype)
        assert torch.equal(c["cache"], c["cache"].to(torch.float8_e4m3fn).to(dtype))
