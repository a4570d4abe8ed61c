"""The one benchmark harness: device facts, ceilings measured in the same run, timing, JSON lines.

Every result line carries the device name, date, torch / nvcc / CUTLASS versions and the copy
and matmul ceilings measured in the same process, so a number is never without its context.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import statistics
import time
from pathlib import Path
from typing import Callable

import torch

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def device_context() -> dict:
    from mla_wrapper.jit import env

    props = torch.cuda.get_device_properties(0) if torch.cuda.is_available() else None
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "device": props.name if props else "cpu",
        "sm_count": props.multi_processor_count if props else 0,
        "capability": f"{props.major}.{props.minor}" if props else "",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nvcc": env.nvcc_version(),
        "cutlass": env.cutlass_version(),
    }


_CLEAN_FLUSH = None


def clean_flush() -> None:
    """Evict L2 by reading (not writing) a 256 MB buffer: the timed call then starts with clean
    lines in L2, where do_bench's flush (zeroing a 256 MB buffer) leaves ~50 MB of dirty lines
    (an H100's whole L2) whose write-back shares DRAM with the call being timed."""
    global _CLEAN_FLUSH
    if _CLEAN_FLUSH is None:
        _CLEAN_FLUSH = torch.ones(128 << 20, dtype=torch.float16, device="cuda")
    _CLEAN_FLUSH.amax()


_DIRTY_FLUSH = None


def dirty_flush() -> None:
    """do_bench's flush: zero a 256 MB buffer, leaving L2 full of dirty lines."""
    global _DIRTY_FLUSH
    if _DIRTY_FLUSH is None:
        _DIRTY_FLUSH = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    _DIRTY_FLUSH.zero_()


def event_times_ms(call: Callable[[], object], iters: int,
                   before: Callable[[], object]) -> list[float]:
    """Milliseconds of each of `iters` calls of `call`, before() ahead of each (untimed): events
    around each call, one synchronization at the end (do_bench's loop: the GPU stays busy)."""
    events = []
    for _ in range(iters):
        before()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        call()
        b.record()
        events.append((a, b))
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in events]


def _ms_after_clean_flush(call: Callable[[], object], iters: int) -> float:
    """Median milliseconds of `call` over `iters` calls, clean_flush() before each (untimed)."""
    return statistics.median(event_times_ms(call, iters, clean_flush))


def bench_ms(fn: Callable[[], object], warmup_ms: int = 25, rep_ms: int = 100,
             flush: str = "dirty") -> float:
    """Median milliseconds per call (CUDA events, L2 flushed between calls). flush='dirty':
    triton's do_bench (BENCHMARKS.md's method: it zeroes a 256 MB buffer before each call, so
    L2 is full of dirty lines when the call starts); 'clean': clean_flush() before each of
    100 calls (L2 holds only clean lines)."""
    if flush == "clean":
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        return _ms_after_clean_flush(fn, 100)
    try:
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))
    except ImportError:
        for _ in range(3):
            fn()
        return median_event_ms(fn, 30, before=dirty_flush)


def median_event_ms(fn: Callable[[], object], iters: int,
                    before: Callable[[], object] | None = None) -> float:
    """Median milliseconds per call over exactly ``iters`` calls (CUDA events; ``before`` runs
    untimed ahead of each call). A fixed count keeps collectives matched across ranks."""
    times = []
    for _ in range(iters):
        if before is not None:
            before()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def capture_graph(fn: Callable[[], object]) -> "torch.cuda.CUDAGraph":
    """fn captured in a CUDA graph (after three warm-up calls on a side stream), replayed ten
    times, synchronized."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    for _ in range(10):
        g.replay()
    torch.cuda.synchronize()
    return g


def bench_graph_us(fn: Callable[[], object], iters: int = 200, flush: str = "none") -> float:
    """Median microseconds per replay of fn captured in a CUDA graph (latency rows).
    flush='none': back-to-back replays (the kernels' code and data stay in L2); 'clean':
    clean_flush() before each of `iters` replays, each timed alone (as in a model, where the
    GEMMs between two attention launches evict them)."""
    g = capture_graph(fn)
    if flush == "clean":
        return _ms_after_clean_flush(g.replay, iters) * 1000.0
    times = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / iters)
    return statistics.median(times)


def copy_ceiling_gbs(nbytes: int = 2 << 30, flush: str = "dirty") -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read + written."""
    src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    ms = bench_ms(lambda: dst.copy_(src), flush=flush)
    del src, dst
    return 2 * (nbytes // 2) / (ms * 1e-3) / 1e9


def matmul_ceiling_tflops(n: int = 8192) -> float:
    a = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    ms = bench_ms(lambda: a @ b)
    return 2 * n ** 3 / (ms * 1e-3) / 1e12


def heat(seconds: float, n: int = 8192) -> None:
    """Run bf16 matmuls for about `seconds` (the GPU at its sustained power and temperature):
    a grid's first rows otherwise meet a cool chip, which at the power cap runs its first kernels
    at a higher clock (session 71: sm90 914.7 us on the first compute row against 1080-1089 us
    in other runs of that session)."""
    if seconds <= 0:
        return
    a = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    t0 = time.time()
    while time.time() - t0 < seconds:
        for _ in range(20):
            a @ b
        torch.cuda.synchronize()


def ceilings(flush: str = "dirty") -> dict:
    return {"copy_gbs": round(copy_ceiling_gbs(flush=flush), 1),
            "matmul_bf16_tflops": round(matmul_ceiling_tflops(), 1)}


class ResultWriter:
    """Appends JSON lines to benchmarks/results/<name>.jsonl with the run's context."""

    def __init__(self, name: str, context: dict, out_dir: Path | None = None):
        out_dir = Path(os.environ.get("MLA_WRAPPER_RESULTS_DIR", out_dir or RESULTS_DIR))
        out_dir.mkdir(parents=True, exist_ok=True)
        self.path = out_dir / f"{name}.jsonl"
        self.context = context

    def write(self, record: dict) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps({**self.context, **record}) + "\n")


def flashmla_ops():
    """torch.ops._flashmla_C of FlashMLA's built library, the `flashmla` peer: the file named by
    $MLAW_FLASHMLA_LIB, else .whl/flashmla/_flashmla_C.abi3.so (benchmarks/fetch_flashmla.sh).
    Raises FileNotFoundError when there is none (the peer is then left out)."""
    lib = Path(os.environ.get("MLAW_FLASHMLA_LIB") or
               Path(__file__).resolve().parent.parent / ".whl" / "flashmla" / "_flashmla_C.abi3.so")
    if not hasattr(torch.ops._flashmla_C, "dense_decode_fwd"):  # (not loaded yet)
        if not lib.is_file():
            raise FileNotFoundError(f"no FlashMLA library at {lib} (benchmarks/fetch_flashmla.sh)")
        torch.ops.load_library(str(lib))
    return torch.ops._flashmla_C


def use_module(impl, mod, run_export: str):
    """Make `mod` the library a planned kernel (backends.planned.PlannedKernel) launches through
    run_export, for the dtype its current module serves; returns the module it replaced."""
    dtype = next(d for d, m in impl.modules.items() if m is impl.module)
    old = impl.module
    impl.modules[dtype] = impl.module = mod
    impl.fn = getattr(mod, run_export)
    return old


_SELF_COPIES: dict = {}  # default build's library -> its copy ("lib:self" variants)


def _self_copy(spec) -> Path:
    """A copy of spec's built library in a temporary folder, made once per library per process."""
    import shutil
    import tempfile

    from mla_wrapper.jit import builder

    built = builder.build(spec)
    if built not in _SELF_COPIES:
        copy = Path(tempfile.mkdtemp(prefix="mlaw_self_")) / "lib.so"
        shutil.copy(built, copy)
        _SELF_COPIES[built] = copy
    return _SELF_COPIES[built]


def use_variant(impl, spec, run_export: str, dtype_name: str, flags: str):
    """Point a planned kernel (backends.planned.PlannedKernel: the dense or the sparse wrapper's
    _impl, after its first plan) at a development build of its library: `spec` built with extra
    nvcc flags ("-DKNOB=1 ..."), or "lib:path/{dt}.so", a library built elsewhere (dt: the
    dtype name, bf16 / fp16), or "lib:self", a copy of the default build loaded as a library of
    its own (one copy per build, as one "lib:" path is one library): the A/A control of an A/B
    with a second library, whose code at other addresses ran some rows 2-5% apart from the same
    code in the first (H200, logs/sm90_s66_2026-11-29 runs 3-6: fp8 H=32 B=16 L=4096, H=24 B=1;
    one library in both slots, `env:` variants, did not). Later plans keep it (the module is
    cached per dtype). Returns the module it replaced (use_module puts it back), or None without
    flags."""
    if not flags:
        return None
    import dataclasses

    from mla_wrapper.jit import load
    from mla_wrapper.jit.load import KernelModule

    if flags == "lib:self":
        mod = KernelModule(spec, _self_copy(spec))
    elif flags.startswith("lib:"):
        mod = KernelModule(spec, Path(flags[4:].format(dt=dtype_name)))
    else:
        mod = load(dataclasses.replace(spec, extra_flags=tuple(spec.extra_flags) + tuple(flags.split())))
    return use_module(impl, mod, run_export)
