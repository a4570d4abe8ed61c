"""Session 70: cProfile of flash_mla_with_kvcache's dense path (host time a call) and the GPU
time of the rows the balanced plan's first form lost (CUDA-graph replays, no flush)."""
import cProfile
import pstats
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # benchmarks/
from bench_decode import RUNNERS, make_case  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from diag_fmla import graph_us, host_us  # noqa: E402

dev = torch.device("cuda")
ws = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
for H, B, L in ((128, 64, 1024), (16, 1, 1024)):
    c = make_case(H, B, L, 64, 1, dev, seed=B)
    fn, _ = RUNNERS["sm90_fmla"](c, ws)
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(300):
        fn()
    pr.disable()
    torch.cuda.synchronize()
    print(f"--- sm90_fmla H={H} B={B} L={L}: 300 calls")
    pstats.Stats(pr).sort_stats("tottime").print_stats(22)
