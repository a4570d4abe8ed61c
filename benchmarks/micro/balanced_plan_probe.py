"""Phase clocks of the balanced GPU plan kernel (device_plan/balanced.cuh): the probe build
(balanced_plan_probe.cu, MLAW_PLAN_STAMP timestamps on thread 0) on the routed call's cases.

    python benchmarks/micro/balanced_plan_probe.py .cache/probe/balanced_plan_probe.so

The probe runs the plan twice in one CTA: "cold" is the first pass (the SM's instruction
cache cold, as in a replay), "warm" the second. Prints, per case, the clocks from the kernel's entry to each stamp (phases: 1 init, 2 step 1
prefixes and reductions, 3 the pairs / one-request checks, 4 the aligned search, 5 aligned
bounds, 6 the stream's / uncut bounds, 7 step 3 and the groups' prefix, 8 cta_work_indptr,
9 step 4; -1: not reached, as after the pairs plan's early return)."""
import ctypes
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from mla_wrapper import ops  # noqa: E402

CASES = [(16, 1, 1024), (16, 1, 4096), (128, 1, 4096), (16, 16, 4096), (128, 16, 4096),
         (16, 64, 1024), (128, 64, 4096), (16, 64, -4096), (128, 128, 16384), (16, 512, 4096)]


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.probe_plan.argtypes = [ctypes.c_void_p] * 8 + [ctypes.c_int32] * 9 + [ctypes.c_int64,
                                                                             ctypes.c_void_p]
    stamps = (ctypes.c_longlong * 32)()
    dev = torch.device("cuda")
    fam = ops._routed_family(dev)
    num_ctas = torch.cuda.get_device_properties(dev).multi_processor_count * fam.CTAS_PER_SM
    g = torch.Generator().manual_seed(0)
    print(f"{'H':>4} {'B':>4} {'L':>6} | clocks from entry at stamps 1..9")
    for H, B, L in CASES:
        lens = (torch.randint(1, 2 * -L, (B,), generator=g, dtype=torch.int32) if L < 0
                else torch.full((B,), L, dtype=torch.int32)).to(dev)
        layout = ops._balanced_layout(B, -(-H // 64), num_ctas)
        ws = torch.empty(layout[3], dtype=torch.uint8, device=dev)
        _, args = ops._balanced_plan_args(fam, ws.data_ptr(), layout, lens, 64, B, 1, H, False,
                                          num_ctas)
        rows = []
        for _ in range(5):
            assert lib.probe_reset() == 0
            assert lib.probe_plan(*args, torch.cuda.current_stream().cuda_stream) == 0
            torch.cuda.synchronize()
            assert lib.probe_read(stamps) == 0
            rows.append([stamps[o + i] - stamps[o] if stamps[o + i] else -1
                         for o in (16, 0) for i in range(1, 10)])
        best = min(rows, key=lambda r: max(r))
        print(f"{H:>4} {B:>4} {L:>6} | cold " + " ".join(f"{c:>6}" for c in best[:9]))
        print(f"{'':>16} | warm " + " ".join(f"{c:>6}" for c in best[9:]))


if __name__ == "__main__":
    main()
