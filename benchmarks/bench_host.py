"""Host cost per call of plan() and run() (wall-clock microseconds on the CPU): run() with the
GPU kept busy so launches never wait (what an eager-mode engine pays per layer), plan() with
the GPU idle (what it pays per step). FlashInfer's wrapper is measured side by side when importable.

    python benchmarks/bench_host.py
    python benchmarks/bench_host.py --torch-op   # run() directly vs through torch.ops.mla_wrapper.run
    python benchmarks/bench_host.py --backend sm90   # our sm90 family next to FlashInfer's fa3
    python benchmarks/bench_host.py --breakdown --backend sm90   # where run()'s host time goes
    python benchmarks/bench_host.py --api   # FlashMLA's dense call and cutlass_mla_decode
"""
from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import SM_SCALE, make_case  # noqa: E402
from harness import ResultWriter, device_context  # noqa: E402

from mla_wrapper import BatchMLAPagedAttentionWrapper  # noqa: E402


def busy_gpu(ms: float = 200.0):
    """Queue a long chain of matmuls (on the current stream) so that launches that follow only
    enqueue."""
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    t0 = time.perf_counter()
    n = 0
    while (time.perf_counter() - t0) * 1e3 < 2.0 and n < 2000:   # enqueue ~ms worth of work
        a = a @ a
        a = a / a.norm()
        n += 1
    return a


def host_us(fn, iters=200, repeats=5, busy=True):
    """Median wall-clock microseconds per call. busy=True queues GPU work first so launches
    only enqueue (run()); plan() is timed with the GPU idle, as between steps, since a long
    run of plans with nothing executing would only measure the staging ring filling up."""
    out = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        if busy:
            busy_gpu()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        out.append((time.perf_counter() - t0) * 1e6 / iters)
        torch.cuda.synchronize()
    return statistics.median(out)


def recorded_setup():
    """(device, run context, host.jsonl writer, a 256 MB workspace) of a recorded host benchmark."""
    dev = torch.device("cuda")
    ctx = device_context()
    ws = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    return dev, ctx, ResultWriter("host", ctx), ws


def planned_case(ws, backend, B, H, dev):
    """A decode case (B requests of 1024 tokens, H heads, page 64, bf16) with a wrapper planned
    for it: (case, wrapper, plan() arguments, an out tensor for run())."""
    c = make_case(H, B, 1024, 64, 1, dev, seed=B)
    w = BatchMLAPagedAttentionWrapper(ws, backend=backend)
    args = (c["qo_indptr"], c["kv_indptr"], c["kv_indices"], c["lens"], H, 512, 64, 64, False,
            SM_SCALE, torch.bfloat16, torch.bfloat16)
    w.plan(*args)
    return c, w, args, torch.empty(c["q_nope"].shape, dtype=torch.bfloat16, device=dev)


def profile(B=128, H=128):
    """cProfile of plan() and run() at one size (where the host time goes)."""
    import cProfile
    import pstats

    dev = torch.device("cuda")
    c, w, args, out = planned_case(torch.empty(256 << 20, dtype=torch.uint8, device=dev), "auto",
                                   B, H, dev)
    for what, fn in (("plan", lambda: w.plan(*args)),
                     ("run", lambda: w.run(c["q_nope"], c["q_pe"], c["ckv"], c["kpe"], out=out))):
        w.plan(*args)
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(200):
            fn()
        pr.disable()
        torch.cuda.synchronize()
        print(f"--- {what} B={B} H={H}: 200 calls")
        pstats.Stats(pr).sort_stats("tottime").print_stats(12)


def breakdown(backend_name="sm80"):
    """run() host time split into: the whole call, the backend part (no checks), and the bare
    launcher call through ctypes (GPU busy), for a plan with and without split requests."""
    dev = torch.device("cuda")
    ws = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    for B, H in ((128, 128), (32, 128), (1, 16)):
        c, w, _, out = planned_case(ws, backend_name, B, H, dev)
        q_nope, q_pe, ckv, kpe = c["q_nope"], c["q_pe"], c["ckv"], c["kpe"]
        impl = w._impl
        strides = (q_nope.stride(), q_pe.stride(), ckv.stride(), kpe.stride(), out.stride())
        stream = torch.cuda.current_stream().cuda_stream
        whole = host_us(lambda: w.run(q_nope, q_pe, ckv, kpe, out=out))
        backend = host_us(lambda: impl.run(q_nope, q_pe, ckv, kpe, out, None, False, stream, strides))
        bare = host_us(lambda: impl.fn(impl.plan_ptr, impl.args_ptr, stream))
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            side_whole = host_us(lambda: w.run(q_nope, q_pe, ckv, kpe, out=out))
            bare_side = host_us(lambda: impl.fn(impl.plan_ptr, impl.args_ptr, side.cuda_stream))
        merges = impl.last_plan.num_merge_items
        print(f"B={B:4d} H={H:3d} merges={merges:3d}: run() {whole:5.1f} us, backend part "
              f"{backend:5.1f} us, bare launcher {bare:5.1f} us; on a side stream: run() "
              f"{side_whole:5.1f} us, bare {bare_side:5.1f} us", flush=True)


def torch_op_cost(budget_us: float = 3.0):
    """run()'s host cost directly and through the torch.library custom op (eager dispatch:
    what a compiled graph without CUDA graphs pays per call), GPU busy; one JSON line each."""
    from mla_wrapper import torch_ops

    dev, ctx, writer, ws = recorded_setup()
    print(f"# {ctx['device']} {ctx['date']}: run() host us, direct vs torch.ops.mla_wrapper.run")
    worst = 0.0
    for B, H in ((1, 16), (32, 128), (128, 128)):
        c, w, _, out = planned_case(ws, "sm80", B, H, dev)
        handle = torch_ops.register(w)
        qn, qp, ckv, kpe = c["q_nope"], c["q_pe"], c["ckv"], c["kpe"]
        op = torch.ops.mla_wrapper.run.default
        direct = host_us(lambda: w.run(qn, qp, ckv, kpe, out=out))
        via_op = host_us(lambda: op(handle, qn, qp, ckv, kpe, out, None, False))
        via_fn = host_us(lambda: torch_ops.run(w, qn, qp, ckv, kpe, out=out))
        torch.cuda.synchronize()
        ref = out.clone()
        op(handle, qn, qp, ckv, kpe, out, None, False)
        torch.cuda.synchronize()
        same = bool(torch.equal(out, ref))
        worst = max(worst, via_op - direct)
        writer.write({"batch": B, "heads": H, "backend": "sm80", "mode": "torch_op",
                      "run_us": direct, "op_run_us": via_op, "torch_ops_run_us": via_fn,
                      "op_overhead_us": via_op - direct, "op_matches_direct": same})
        print(f"B={B:4d} H={H:3d}: direct {direct:5.1f} us, torch.ops.mla_wrapper.run {via_op:5.1f} us "
              f"(+{via_op - direct:4.1f}), torch_ops.run {via_fn:5.1f} us; same output: {same}",
              flush=True)
    verdict = "within" if worst <= budget_us else "over"
    print(f"op overhead: worst +{worst:.1f} us, {verdict} the {budget_us} us budget "
          "(eager wrapper.run() never goes through the op; only traced code does)")


def api_cost():
    """Host microseconds per call of the drop-in calls that plan on the GPU: FlashMLA's dense
    flash_mla_with_kvcache (one scheduling-metadata object reused, a decode step's later layers)
    and sgl-kernel's cutlass_mla_decode (a plan kernel every call), beside the wrapper's run();
    then a cProfile of cutlass_mla_decode (where its host time goes)."""
    import cProfile
    import pstats

    from bench_decode import flashmla_tensors  # noqa: PLC0415

    from mla_wrapper import (cutlass_mla_decode, cutlass_mla_get_workspace_size,  # noqa: PLC0415
                             flash_mla_with_kvcache, get_mla_metadata)

    dev, ctx, writer, ws = recorded_setup()
    print(f"# {ctx['device']} {ctx['date']}: host us a call, GPU kept busy")
    print(f"{'B':>5} {'H':>4} | {'wrapper run':>11} {'flashmla api':>12} {'cutlass api':>11}")
    for B, H in ((1, 16), (1, 128), (16, 128), (64, 128), (128, 16)):
        c, w, _, out = planned_case(ws, "auto", B, H, dev)
        q, cache, table, seqlens, out4 = flashmla_tensors(c, dev)
        sched, _ = get_mla_metadata()
        work = torch.empty(cutlass_mla_get_workspace_size(table.shape[1] * 64, B), dtype=torch.uint8,
                           device=dev)
        calls = {
            "wrapper": lambda: w.run(c["q_nope"], c["q_pe"], c["ckv"], c["kpe"], out=out),
            "flashmla_api": lambda: flash_mla_with_kvcache(q, cache, table, seqlens, 512, sched,
                                                           None, SM_SCALE, False, out=out4),
            "cutlass_api": lambda: cutlass_mla_decode(c["q_nope"], c["q_pe"], c["cache"], seqlens,
                                                      table, work, SM_SCALE, -1),
        }
        rec = {"batch": B, "heads": H, "bench": "api_host"}
        for name, fn in calls.items():
            fn()
            rec[f"{name}_us"] = host_us(fn)
        writer.write(rec)
        print(f"{B:5d} {H:4d} | {rec['wrapper_us']:11.1f} {rec['flashmla_api_us']:12.1f} "
              f"{rec['cutlass_api_us']:11.1f}", flush=True)
    prof = cProfile.Profile()
    busy_gpu()
    prof.enable()
    for _ in range(300):
        calls["cutlass_api"]()
    prof.disable()
    torch.cuda.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(18)


def main():
    if "--api" in sys.argv:
        return api_cost()
    if "--torch-op" in sys.argv:
        return torch_op_cost()
    if "--profile" in sys.argv:
        return profile()
    ours = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "sm80"
    if "--breakdown" in sys.argv:
        return breakdown(ours)
    peer = "fa3" if ours == "sm90" else "fa2"
    dev, ctx, writer, ws = recorded_setup()
    print(f"# {ctx['device']} {ctx['date']}")
    print(f"{'B':>5} {'H':>4} | {'ours plan':>10} {'ours run':>9} | {'fi plan':>8} {'fi run':>7}")
    for B, H in ((1, 16), (1, 128), (32, 128), (128, 128), (512, 128)):
        c, w, args, out = planned_case(ws, ours, B, H, dev)
        plan_us = host_us(lambda: w.plan(*args), iters=100, busy=False)
        run_us = host_us(lambda: w.run(c["q_nope"], c["q_pe"], c["ckv"], c["kpe"], out=out))
        rec = {"batch": B, "heads": H, "backend": ours, "plan_us": plan_us, "run_us": run_us,
               "peer": peer}
        fi = ""
        try:
            import flashinfer

            fw = flashinfer.mla.BatchMLAPagedAttentionWrapper(ws, backend=peer)
            fargs = (c["qo_indptr"], c["kv_indptr"], c["kv_indices"], c["lens"]) + args[4:]
            fw.plan(*fargs)
            qn, qp = c["q_nope"].contiguous(), c["q_pe"].contiguous()
            fw.run(qn, qp, c["ckv"], c["kpe"], out=out)
            rec["fi_plan_us"] = host_us(lambda: fw.plan(*fargs), iters=50, busy=False)
            rec["fi_run_us"] = host_us(lambda: fw.run(qn, qp, c["ckv"], c["kpe"], out=out))
            fi = f"{rec['fi_plan_us']:8.1f} {rec['fi_run_us']:7.1f}"
        except Exception as e:  # noqa: BLE001
            fi = f"(flashinfer: {type(e).__name__})"
        writer.write(rec)
        print(f"{B:5d} {H:4d} | {plan_us:10.1f} {run_us:9.1f} | {fi}", flush=True)


if __name__ == "__main__":
    main()
