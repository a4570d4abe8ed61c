"""Session 13 diagnostic: how much of a ~100 us memory-bound case's do_bench time is the L2
flush's own write-back? do_bench zeroes a 256 MB buffer before every timed call; the dirty lines
it leaves in L2 (up to the L2's 50 MB) are written back to DRAM while the timed kernel runs.
Times sm90 and fa3 (bench_decode's tensors) three ways: do_bench as the grid runs it; the same
flush followed (untimed) by a 256 MB read, which evicts the dirty lines before the timed call
and still leaves the case's bytes out of L2; and CUDA-graph-free back-to-back calls (no flush)."""
import sys
from pathlib import Path

import torch

root = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(root / "benchmarks"), str(root)]
from check_sm90_dev import peer_runs  # noqa: E402
from harness import bench_ms, median_event_ms  # noqa: E402

ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
clean = torch.empty(256 << 20, dtype=torch.int8, device="cuda").fill_(1)


def flush_then_read():
    flush.zero_()
    clean.sum(dtype=torch.int64)  # a read of 256 MB (the result is dropped)


for h, b, l in ((16, 64, 4096), (16, 128, 4096), (16, 128, 16384), (128, 64, 4096)):
    for name, fn in peer_runs(h, b, l, 64, "", ws):
        fn()
        a = bench_ms(fn)
        c = median_event_ms(fn, 60, before=flush_then_read)
        n = median_event_ms(fn, 60)
        kv = b * l * 1152 / 1e9
        print(f"H={h:3d} B={b:3d} L={l:5d} {name:7s} do_bench {a*1e3:7.1f} us ({kv/(a*1e-3):5.0f} GB/s)  "
              f"flush+read {c*1e3:7.1f} us ({kv/(c*1e-3):5.0f} GB/s)  no flush {n*1e3:7.1f} us",
              flush=True)
