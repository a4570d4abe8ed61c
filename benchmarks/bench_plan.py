"""Host cost of the split-KV planner: microseconds per plan() call.

Decode batches (qo_len 1), kv_len uniform in 1..8192, page_size 64, heads 128 and 16, host
int32 inputs (numpy arrays and CPU torch tensors: the wrapper gets torch tensors), a
Planner bound once (the serving-loop hot path) writing into one staging buffer. Median of many
calls, one call per timing (time.perf_counter_ns), after a warmup.

    python benchmarks/bench_plan.py [--num-ctas 132] [--calls 3000]
    python benchmarks/bench_plan.py --gpu       # GPU time of the plans written on the GPU

--gpu: the plan kernels of cutlass_mla_decode's routed path and FlashMLA's dense call
(device_plan/balanced.cuh; common/device_plan.cuh's uniform split plan), each alone in a CUDA
graph replayed back to back (median us a replay), on the device lengths of decode batches;
"kept": the balanced plan with its memo, replayed on unchanged lengths (the plan in the
workspace is checked and kept, as a routed call's later layers find it).

Prints a table and appends JSON lines to benchmarks/results/plan.jsonl.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness import ResultWriter, device_context  # noqa: E402

from mla_wrapper.planner import Planner  # noqa: E402
from mla_wrapper.workspace import WorkspaceLayout  # noqa: E402


def batch(B: int, rng, page_size: int = 64):
    kv_len = rng.integers(1, 8193, B).astype(np.int32)
    qo_indptr = np.arange(B + 1, dtype=np.int32)
    kv_indptr = np.zeros(B + 1, np.int32)
    kv_indptr[1:] = np.cumsum((kv_len + page_size - 1) // page_size)
    return qo_indptr, kv_indptr, kv_len


def time_us(fn, calls: int, warmup: int = 200) -> tuple[float, float]:
    for _ in range(warmup):
        fn()
    times = []
    clock = time.perf_counter_ns
    for _ in range(calls):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    times.sort()
    return statistics.median(times) / 1e3, times[len(times) // 10] / 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--num-ctas", type=int, default=132, help="persistent CTAs (H100/H200: 132 SMs x 1)")
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--batches", default="1,32,128,512,2048")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--gpu", action="store_true", help="time the GPU-side plan kernels")
    args = ap.parse_args()
    if args.gpu:
        return gpu_plans(args)

    ctx = device_context()
    ctx["cpu"] = _cpu_name()
    writer = None if args.no_write else ResultWriter("plan", ctx)
    rng = np.random.default_rng(0)
    print(f"plan() on {ctx['cpu']} ({os.cpu_count()} cores), num_ctas={args.num_ctas}, "
          f"median of {args.calls} calls")
    print(f"{'H':>4} {'B':>5} {'numpy us':>9} {'torch us':>9} {'p10 us':>7} {'items':>6} "
          f"{'merges':>6} {'passes':>6} {'max/mean':>8}")
    for H in (128, 16):
        for B in (int(b) for b in args.batches.split(",")):
            qo, kvp, kvl = batch(B, rng)
            layout = WorkspaceLayout.for_batch(B, B, H, args.num_ctas)
            p = Planner(layout, H, 64, False)
            out = np.zeros(layout.int_workspace_elems, np.int32)
            tq, tk, tl = (torch.from_numpy(a) for a in (qo, kvp, kvl))
            res = p.plan(qo, kvp, kvl, out)
            us_np, p10_np = time_us(lambda: p.plan(qo, kvp, kvl, out), args.calls)
            us_t, _ = time_us(lambda: p.plan(tq, tk, tl, out), args.calls)
            balance = res.max_cta_cost / (res.total_cost / args.num_ctas)
            print(f"{H:>4} {B:>5} {us_np:>9.2f} {us_t:>9.2f} {p10_np:>7.2f} {res.num_work_items:>6} "
                  f"{res.num_merge_items:>6} {res.passes:>6} {balance:>8.3f}")
            if writer:
                writer.write({
                    "bench": "plan", "num_heads": H, "batch": B, "qo_len": 1, "page_size": 64,
                    "kv_len": "uniform 1..8192", "num_ctas": args.num_ctas,
                    "us_per_plan_numpy": round(us_np, 2), "us_per_plan_torch": round(us_t, 2),
                    "p10_us_numpy": round(p10_np, 2), "calls": args.calls,
                    "num_work_items": res.num_work_items, "num_merge_items": res.num_merge_items,
                    "passes": res.passes, "max_over_mean_cta_cost": round(balance, 4),
                    "copy_bytes": res.copy_bytes,
                })
    if writer:
        print(f"wrote {writer.path}")


# (heads, batch, kv_len; < 0: ragged, uniform in [1, 2 |L|)) of the GPU plans' table
GPU_CASES = [(16, 1, 1024), (16, 1, 4096), (128, 1, 1024), (128, 1, 4096), (16, 16, 4096),
             (128, 16, 4096), (16, 64, 1024), (128, 64, 4096), (16, 64, -4096),
             (128, 64, -4096), (128, 128, 16384), (16, 512, 4096)]


def gpu_plans(args) -> None:
    """GPU microseconds of one balanced plan and one uniform split plan (each alone in a CUDA
    graph, replayed back to back) per case."""
    from harness import bench_graph_us  # noqa: PLC0415

    from mla_wrapper import ops  # noqa: PLC0415

    ctx = device_context()
    writer = None if args.no_write else ResultWriter("plan", ctx)
    dev = torch.device("cuda")
    fam = ops._routed_family(dev)
    num_ctas = torch.cuda.get_device_properties(dev).multi_processor_count * fam.CTAS_PER_SM
    plan_mod, _ = ops._device_plan_modules(fam, torch.bfloat16, dev)
    g = torch.Generator().manual_seed(0)
    print(f"GPU plans on {ctx.get('device', 'cuda')} ({fam.__name__}, {num_ctas} CTAs): "
          "us a replay")
    print(f"{'H':>4} {'B':>4} {'L':>6} {'balanced':>9} {'uniform':>8} {'kept':>6}")
    for H, B, L in GPU_CASES:
        lens = (torch.randint(1, 2 * -L, (B,), generator=g, dtype=torch.int32) if L < 0
                else torch.full((B,), L, dtype=torch.int32)).to(dev)
        tiles = -(-H // 64)
        layout = ops._balanced_layout(B, tiles, num_ctas)
        ws = torch.empty(layout[3], dtype=torch.uint8, device=dev)
        _, b_args = ops._balanced_plan_args(fam, ws.data_ptr(), layout, lens, 64, B, 1, H, False,
                                            num_ctas)
        balanced = lambda: plan_mod.mlaw_device_plan_balanced(  # noqa: E731
            *b_args, torch.cuda.current_stream().cuda_stream)
        wsk = torch.empty(layout[3], dtype=torch.uint8, device=dev)
        _, k_args = ops._balanced_plan_args(fam, wsk.data_ptr(), layout, lens, 64, B, 1, H, False,
                                            num_ctas, memo=True)
        kept = lambda: plan_mod.mlaw_device_plan_balanced(  # noqa: E731
            *k_args, torch.cuda.current_stream().cuda_stream)
        table = torch.zeros(B, 1, dtype=torch.int32, device=dev)
        splits = ops._routed_num_splits(abs(L) * 2, B, num_ctas, -1, H)
        wsu = torch.empty(ops._routed_layout(B, H, splits, num_ctas)[3], dtype=torch.uint8,
                          device=dev)
        _, u_args = ops._uniform_plan_args(fam, wsu.data_ptr(), wsu.numel(), lens, table,
                                           abs(L) * 2, B, H, -1, num_ctas)
        uniform = lambda: plan_mod.mlaw_device_plan(  # noqa: E731
            *u_args, torch.cuda.current_stream().cuda_stream)
        us_b, us_u, us_k = bench_graph_us(balanced), bench_graph_us(uniform), bench_graph_us(kept)
        print(f"{H:>4} {B:>4} {L:>6} {us_b:>9.2f} {us_u:>8.2f} {us_k:>6.2f}")
        if writer:
            writer.write({"bench": "gpu_plan", "family": fam.__name__, "num_heads": H,
                          "batch": B, "kv_len": L, "num_ctas": num_ctas, "balanced_us": us_b,
                          "uniform_us": us_u, "kept_us": us_k, "tag": os.environ.get("MLAW_TAG")})
    if writer:
        print(f"wrote {writer.path}")


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown"


if __name__ == "__main__":
    main()
