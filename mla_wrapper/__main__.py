"""Command line for the JIT cache: ``python -m mla_wrapper {warmup,list,clean,info}``.

  warmup  build the kernels a serving engine needs (this GPU's arch by default;
          --arch sm_90a,sm_100a to pre-build without a GPU), several in parallel;
          --export DIR copies them into DIR, a self-contained cache to ship (serving
          machines set MLA_WRAPPER_CACHE_DIR=DIR and need no nvcc)
  list    cache entries: name, arch, size, nvcc that built it, status
  clean   remove all entries, or those whose name matches a pattern
  info    torch, nvcc and CUTLASS versions, GPU and arch, cache dir; --check compiles,
          loads (and on a GPU runs) a tiny test kernel
"""
from __future__ import annotations

import argparse
import fnmatch
import shutil
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from .jit import env


def _parse_list(text: str | None) -> list[str] | None:
    if not text:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


def _cached(spec, is_complete, entry_dir) -> bool:
    """Whether spec's cache entry is complete; False where its entry cannot even be named (a
    missing template or header folder): the build then fails and reports it with the others."""
    try:
        return is_complete(entry_dir(spec))
    except (ValueError, OSError):
        return False


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer (parallel builds), got {text!r}")
    return value


def _export(specs, dest: str) -> int:
    from .jit.builder import export_entries

    copied = export_entries(specs, Path(dest))
    print(f"warmup: exported {len(copied)} entries to {dest} (ship that folder and set "
          f"MLA_WRAPPER_CACHE_DIR={dest} on the serving machine; no nvcc needed there)",
          flush=True)
    return 0


def cmd_warmup(args) -> int:
    from .jit import build, is_complete, entry_dir
    from .jit.builder import kill_active_builds
    from .jit.registry import warmup_plan

    archs = [env.normalize_arch(a) for a in (_parse_list(args.arch) or env.requested_archs())]
    if not archs:
        print("warmup: no GPU found and no --arch given; pass e.g. --arch sm_90a,sm_100a",
              file=sys.stderr)
        return 2
    specs, notes = warmup_plan(archs, _parse_list(args.dtype), _parse_list(args.family))
    for note in notes:
        print(f"warmup: note: {note}", file=sys.stderr, flush=True)
    todo = [s for s in specs if not _cached(s, is_complete, entry_dir)]
    print(f"warmup: {len(specs)} kernels for {','.join(archs)}; {len(specs) - len(todo)} cached, "
          f"{len(todo)} to build (jobs={args.jobs}, cache {env.cache_dir()})", flush=True)
    if not todo:
        return _export(specs, args.export) if args.export else 0
    start = time.monotonic()
    done, failed = 0, []
    building: set[str] = set()
    lock = threading.Lock()

    def job(spec):
        with lock:
            building.add(spec.name)
        try:
            build(spec)
        finally:
            with lock:
                building.discard(spec.name)

    def progress(final: bool = False):
        with lock:
            now = ", ".join(sorted(building)[:3]) + (" ..." if len(building) > 3 else "")
        line = f"[{done}/{len(todo)}] {time.monotonic() - start:6.1f}s  building: {now or '-'}"
        if sys.stdout.isatty():
            print("\r" + line.ljust(110), end="\n" if final else "", flush=True)
        else:
            print(line, flush=True)

    def on_sigterm(signum, frame):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, on_sigterm) \
        if threading.current_thread() is threading.main_thread() else None
    pool = ThreadPoolExecutor(max_workers=args.jobs)
    stop = threading.Event()
    try:
        futures = {pool.submit(job, s): s for s in todo}

        def ticker():
            while not stop.wait(5.0):
                progress()
        t = threading.Thread(target=ticker, daemon=True)
        t.start()
        for fut in as_completed(futures):
            spec = futures[fut]
            done += 1
            err = fut.exception()
            if err is not None:
                failed.append((spec.name, err))
                print(f"\nFAILED {spec.name}: {err}", file=sys.stderr, flush=True)
            progress()
    except KeyboardInterrupt:
        # builds run in their own process groups (no terminal Ctrl-C reaches them): stop them
        pool.shutdown(wait=False, cancel_futures=True)
        killed = kill_active_builds()
        print(f"\nwarmup: interrupted; stopped {killed} builds in flight", file=sys.stderr)
        return 130
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    progress(final=True)
    print(f"warmup: built {len(todo) - len(failed)} of {len(todo)} in "
          f"{time.monotonic() - start:.1f}s", flush=True)
    if failed:
        return 1
    return _export(specs, args.export) if args.export else 0


def _entries():
    root = env.cache_dir()
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


def cmd_list(args) -> int:
    from .jit import is_complete
    from .jit.builder import read_metadata

    rows = []
    for entry in _entries():
        name = entry.name.rsplit("-", 1)[0]
        arch = "host" if name.endswith("_host") else "sm_" + name.rsplit("_sm_", 1)[-1] \
            if "_sm_" in name else "?"
        lib = entry / "lib.so"
        size = lib.stat().st_size if lib.exists() else 0
        status = "ok" if is_complete(entry) else ("corrupt" if lib.exists() else
                                                  "failed" if (entry / "build.log").exists()
                                                  else "incomplete")
        nvcc = read_metadata(entry).get("nvcc_version", "?")
        rows.append((entry.name, arch, size, nvcc, status))
    if not rows:
        print(f"(no entries in {env.cache_dir()})")
        return 0
    width = max(len(r[0]) for r in rows)
    print(f"{'entry'.ljust(width)}  {'arch':8} {'size':>10}  {'nvcc':10} status")
    for name, arch, size, nvcc, status in rows:
        print(f"{name.ljust(width)}  {arch:8} {size / 1e6:9.2f}M  {nvcc:10} {status}")
    print(f"{len(rows)} entries in {env.cache_dir()}")
    return 0


def cmd_clean(args) -> int:
    removed = 0
    for entry in _entries():
        if args.pattern is None or fnmatch.fnmatch(entry.name, args.pattern) \
                or fnmatch.fnmatch(entry.name, f"*{args.pattern}*"):
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    for lock in env.cache_dir().glob("*.lock") if env.cache_dir().is_dir() else []:
        if args.pattern is None or args.pattern in lock.name:
            lock.unlink(missing_ok=True)
    print(f"removed {removed} entries from {env.cache_dir()}")
    return 0


def cmd_info(args) -> int:
    import platform

    print(f"mla_wrapper   {__import__('mla_wrapper').__version__}")
    print(f"python        {platform.python_version()}")
    try:
        import torch

        print(f"torch         {torch.__version__} (CUDA {torch.version.cuda})")
        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                print(f"gpu {i}         {p.name}, sm_{p.major}{p.minor}, {p.multi_processor_count} SMs"
                      f" -> builds {env.arch_for_capability(p.major, p.minor)}")
        else:
            print("gpu           none visible")
    except ImportError:
        print("torch         not installed")
    try:
        print(f"nvcc          {env.nvcc_path()} ({env.nvcc_version()})")
    except RuntimeError as e:
        print(f"nvcc          not found ({e})")
    print(f"cutlass       {env.cutlass_version()}")
    print(f"cache dir     {env.cache_dir()}")
    print(f"arch list     {env.requested_archs() or '(none: no GPU, MLA_WRAPPER_CUDA_ARCH_LIST unset)'}")
    print(f"max jobs      {env.max_jobs()}")
    return _check_jit() if args.check else 0


def _check_jit() -> int:
    """info --check: compile (or find in the cache), load and, with a GPU, run a tiny kernel."""
    from .jit import load
    from .jit.selftest import selftest_spec

    archs = env.requested_archs()
    spec = selftest_spec(archs[0] if archs else "sm_80", 2.0)
    start = time.monotonic()
    try:
        mod = load(spec)
    except Exception as e:  # noqa: BLE001 (reported, not raised: this is a diagnosis)
        print(f"check         FAILED: {spec.name}: {e}")
        return 1
    steps = f"built/loaded {spec.name} in {time.monotonic() - start:.1f}s"
    try:
        import torch

        if torch.cuda.is_available() and env.device_arch() == spec.arch:
            x = torch.arange(1000, dtype=torch.float32, device="cuda")
            y = torch.empty_like(x)
            mod.call("mlaw_selftest_scale", x.data_ptr(), y.data_ptr(), x.numel(),
                     torch.cuda.current_stream().cuda_stream)
            if not torch.equal(y, x * 2.0):
                print(f"check         FAILED: {spec.name} computed wrong results")
                return 1
            steps += ", ran on the GPU"
    except ImportError:
        pass
    print(f"check         ok ({steps})")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mla_wrapper", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("warmup", help="build the kernels a serving engine needs")
    w.add_argument("--arch", help="comma list, e.g. sm_90a,sm_100a (default: this GPU's arch)")
    w.add_argument("--dtype", help="comma list of bf16,fp16 (default: both); also fp32 (merge "
                   "only) and fp8_e4m3 (an fp8 cache: cutlass with fp8 queries; sm90 and its "
                   "sparse gather mode with the listed bf16/fp16 queries, bf16 if none)")
    w.add_argument("--family", help="comma list of kernel families: merge,planner,sm80,sm90,cutlass")
    w.add_argument("--jobs", type=_positive_int, default=env.max_jobs(),
                   help="parallel builds (default: MLA_WRAPPER_MAX_JOBS, else the CPU count "
                   "capped at one build per 4 GB of available memory, as a CUTLASS compile "
                   f"peaks at ~4 GB: {env.max_jobs()} here)")
    w.add_argument("--export", metavar="DIR",
                   help="after building, copy the entries into DIR: a self-contained cache to "
                   "ship (MLA_WRAPPER_CACHE_DIR=DIR loads it without nvcc)")
    sub.add_parser("list", help="list cache entries")
    c = sub.add_parser("clean", help="remove cache entries")
    c.add_argument("pattern", nargs="?", help="only entries whose name matches (glob or substring)")
    i = sub.add_parser("info", help="versions, GPU, cache dir")
    i.add_argument("--check", action="store_true",
                   help="also compile, load and (with a GPU) run a tiny test kernel")
    args = parser.parse_args(argv)
    command = {"warmup": cmd_warmup, "list": cmd_list, "clean": cmd_clean, "info": cmd_info}[args.cmd]
    try:
        return command(args)
    except ValueError as e:          # bad arguments: the message names the option
        print(f"mla_wrapper {args.cmd}: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:        # JIT / cache errors (they name the kernel and the fix)
        if type(e).__name__ not in ("JitCacheError", "JitBuildError"):
            raise
        print(f"mla_wrapper {args.cmd}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
