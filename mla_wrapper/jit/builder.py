"""The one build path: render -> build.ninja -> ninja/nvcc -> atomic rename into the cache.

Cache entry layout, ``$MLA_WRAPPER_CACHE_DIR/<name>-<hash>/``:
    source.cu (or .cpp)   the rendered template
    build.ninja           the command that built it
    build.log             nvcc's output
    lib.so                the library (written as lib.so.tmp.<pid>, then renamed)
    meta.json             what built it: nvcc / CUDA version, arch, CUTLASS version, flags
    COMPLETE              "<size> <sha256>" of lib.so, written last (atomically)

The hash covers what the binary is made of (rendered source, our headers, flags, arch, the
nvidia-cutlass version) and nothing that needs the compiler, so a cache built with nvcc
loads where no nvcc exists (``warmup --export`` packages one). The toolkit that built an
entry is recorded in meta.json; load.py refuses an entry only when this machine's driver is
too old for that toolkit.

An entry counts as built only when COMPLETE exists and matches lib.so; anything else (a
build killed halfway, a truncated or corrupt library) is rebuilt, and temp files left by a
dead builder (``*.tmp.<pid>``) are removed then. One file lock per entry makes N processes
asking for the same kernel compile it once. ninja/nvcc run in their own process group, which
is killed when the build is interrupted and sent SIGTERM when the building process dies.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from filelock import FileLock

from . import env
from .spec import KernelSpec

BASE_FLAGS = ("-O3", "-std=c++17", "-shared", "-Xcompiler=-fPIC", "-Xcompiler=-fvisibility=hidden",
              "-DNDEBUG", "-lineinfo")
CUDA_FLAGS = ("--expt-relaxed-constexpr", "--expt-extended-lambda", "-cudart=static",
              "-Xptxas=--warn-on-spills")


class JitBuildError(RuntimeError):
    """nvcc failed; the message holds its first error lines and the full log's path."""


class JitCacheError(RuntimeError):
    """The cache directory cannot be used, or an entry cannot be loaded on this machine."""


log = logging.getLogger("mla_wrapper.jit")


def render(spec: KernelSpec) -> str:
    import jinja2  # noqa: PLC0415 (only needed when building)

    loader = jinja2.FileSystemLoader(str(env.templates_dir()))
    jenv = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True)
    try:
        template = jenv.get_template(spec.template)
    except jinja2.TemplateNotFound as e:
        raise ValueError(f"KernelSpec.template: no template {spec.template!r} in "
                         f"{env.templates_dir()}") from e
    return template.render(spec=spec, name=spec.name, **spec.param_dict)


def gencode_flags(arch: str) -> list[str]:
    if arch == "host":
        return []
    num = arch[len("sm_"):]
    return [f"-gencode=arch=compute_{num},code=sm_{num}"]


def compile_flags(spec: KernelSpec) -> list[str]:
    flags = list(BASE_FLAGS)
    inc = [env.include_dir()]
    if spec.use_cutlass:
        inc += list(env.cutlass_include_dirs())
    flags += [f"-I{p}" for p in inc]
    if not spec.is_host:
        flags += list(CUDA_FLAGS) + gencode_flags(spec.arch)
        if env.nvcc_threads() > 1:
            flags.append(f"--threads={env.nvcc_threads()}")
    flags += list(spec.extra_flags)
    return flags


def _headers_digest(spec: KernelSpec, h) -> None:
    root = env.include_dir() / "mla_wrapper"
    for sub in sorted(set(("common",) + tuple(spec.header_dirs))):
        folder = root / sub
        if not folder.is_dir():
            raise ValueError(f"KernelSpec.header_dirs: no folder {folder}")
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                h.update(str(path.relative_to(root)).encode())
                h.update(path.read_bytes())


_KEY_CACHE: dict[KernelSpec, tuple[str, str]] = {}


def _hashed_flags(spec: KernelSpec) -> str:
    """The flags that change the binary: not include paths (they differ between machines)
    and not --threads (parallelism inside nvcc)."""
    return " ".join(str(f) for f in compile_flags(spec)
                    if not str(f).startswith(("-I", "--threads=")))


def entry_key(spec: KernelSpec) -> tuple[str, str]:
    """(rendered source, hash): the hash covers the source, our headers, the flags, the arch
    and (for CUTLASS kernels) the nvidia-cutlass version. It needs no compiler: the nvcc
    version that built an entry is recorded in its meta.json instead."""
    cached = _KEY_CACHE.get(spec)
    if cached is not None:
        return cached
    source = render(spec)
    h = hashlib.sha256()
    h.update(source.encode())
    _headers_digest(spec, h)
    h.update(_hashed_flags(spec).encode())
    h.update(spec.arch.encode())
    if spec.use_cutlass:
        h.update(env.cutlass_version().encode())
    key = (source, h.hexdigest()[:16])
    _KEY_CACHE[spec] = key
    return key


def entry_dir(spec: KernelSpec) -> Path:
    return env.cache_dir() / f"{spec.name}-{entry_key(spec)[1]}"


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_complete(entry: Path) -> bool:
    """True when entry/lib.so exists and matches the size + sha256 recorded in COMPLETE."""
    marker, lib = entry / "COMPLETE", entry / "lib.so"
    try:
        size, digest = marker.read_text().split()
        if lib.stat().st_size != int(size):
            return False
        with open(lib, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return False
        return _file_digest(lib) == digest
    except (OSError, ValueError):
        return False


def _ensure_cache_root() -> Path:
    root = env.cache_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=root, prefix=".probe-", delete=True)
        probe.close()
    except OSError as e:
        raise JitCacheError(
            f"cache directory {root} is not writable ({e.strerror}): point "
            f"MLA_WRAPPER_CACHE_DIR at a writable folder"
        ) from e
    return root


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _ninja_escape(s: str) -> str:
    return s.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def _first_errors(log: str, limit: int = 12) -> str:
    lines = log.splitlines()
    errs = [i for i, line in enumerate(lines) if "error" in line.lower()]
    if not errs:
        return "\n".join(lines[-limit:])
    first = errs[0]
    return "\n".join(lines[max(0, first - 1): first + limit])


def _ninja_binary() -> str:
    try:
        import ninja  # noqa: PLC0415

        return str(Path(ninja.BIN_DIR) / "ninja")
    except ImportError:
        return "ninja"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temps(entry: Path) -> list[Path]:
    """Remove ``*.tmp.<pid>`` files of builders that are gone (dead pid, or this process: the
    caller holds the entry's lock, so no build of ours is writing them). Returns them."""
    removed = []
    for path in entry.glob("*.tmp.*"):
        pid = path.name.rsplit(".", 1)[1]
        if not pid.isdigit() or (int(pid) != os.getpid() and _pid_alive(int(pid))):
            continue
        try:
            path.unlink()
            removed.append(path)
        except OSError:
            pass
    return removed


# Builds in flight (Popen objects): kill_active_builds() stops them (warmup on Ctrl-C/SIGTERM).
_ACTIVE: set = set()
_ACTIVE_LOCK = threading.Lock()


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def kill_active_builds() -> int:
    """Kill the process group of every build in flight; returns how many were killed."""
    with _ACTIVE_LOCK:
        procs = list(_ACTIVE)
    for proc in procs:
        _kill_group(proc)
    return len(procs)


_PDEATHSIG = None


def _die_with_parent_fn():
    """preexec_fn for Linux: SIGTERM the build (ninja kills its nvcc jobs on SIGTERM) when the
    thread that started it dies, e.g. when `warmup` is SIGKILLed."""
    global _PDEATHSIG
    if not sys.platform.startswith("linux"):
        return None
    if _PDEATHSIG is None:
        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            return None
        _PDEATHSIG = lambda: prctl(1, signal.SIGTERM)  # noqa: E731 (PR_SET_PDEATHSIG = 1)
    return _PDEATHSIG


def _run_in_own_group(cmd: list[str]) -> tuple[int, str]:
    """Run cmd in a new session (its own process group); kill the group if we are
    interrupted while waiting. Returns (returncode, stdout + stderr)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=_die_with_parent_fn())
    with _ACTIVE_LOCK:
        _ACTIVE.add(proc)
    try:
        out, _ = proc.communicate()
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.discard(proc)
    return proc.returncode, out or ""


def _cuda_version(nvcc_version: str) -> str:
    """'13.0.88' -> '13.0' (the CUDA release the toolkit belongs to)."""
    return ".".join(nvcc_version.split(".")[:2])


def _metadata(spec: KernelSpec, digest: str) -> dict:
    from .. import __version__  # noqa: PLC0415

    nvcc = env.nvcc_version()
    meta = {"name": spec.name, "hash": digest, "family": spec.family, "arch": spec.arch,
            "nvcc_version": nvcc, "cuda_version": _cuda_version(nvcc),
            "flags": _hashed_flags(spec), "mla_wrapper_version": __version__,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if spec.use_cutlass:
        meta["cutlass_version"] = env.cutlass_version()
    return meta


def read_metadata(entry: Path) -> dict:
    """An entry's meta.json ({} when missing or unreadable: entries built before it existed)."""
    try:
        return json.loads((entry / "meta.json").read_text())
    except (OSError, ValueError):
        return {}


def build(spec: KernelSpec) -> Path:
    """Build spec into the cache (if not already there) and return the library's path.

    A complete entry is returned without touching nvcc or writing to the cache (a prebuilt,
    even read-only, cache works on a machine without a CUDA toolkit)."""
    source, digest = entry_key(spec)
    entry = env.cache_dir() / f"{spec.name}-{digest}"
    lib = entry / "lib.so"
    if is_complete(entry):
        return lib
    try:
        nvcc = env.nvcc_path()
    except RuntimeError as e:   # checked before anything is written: no stray entry
        raise JitBuildError(f"cannot build kernel {spec.name}: it is not in the cache "
                            f"({entry}) and {e}") from e
    root = _ensure_cache_root()
    with FileLock(str(root / f"{spec.name}-{digest}.lock")):
        if is_complete(entry):  # another process built it while we waited
            return lib
        entry.mkdir(parents=True, exist_ok=True)
        clean_stale_temps(entry)
        (entry / "COMPLETE").unlink(missing_ok=True)
        src = entry / ("source.cpp" if spec.is_host else "source.cu")
        _atomic_write(src, source)
        tmp_lib = f"lib.so.tmp.{os.getpid()}"
        flags = " ".join(_ninja_escape(str(f)) for f in compile_flags(spec))
        ninja_file = (
            "ninja_required_version = 1.3\n"
            f"nvcc = {_ninja_escape(str(nvcc))}\n"
            f"flags = {flags}\n"
            "rule nvcc\n"
            "  command = $nvcc $flags $in -o $out\n"
            "  description = nvcc " + spec.name + "\n"
            f"build {tmp_lib}: nvcc {src.name}\n"
        )
        _atomic_write(entry / "build.ninja", ninja_file)
        log_path = entry / "build.log"
        log.info("mla_wrapper: compiling kernel %s (not in the cache %s) ...", spec.name,
                 env.cache_dir())
        start = time.monotonic()
        try:
            returncode, output = _run_in_own_group(
                [_ninja_binary(), "-C", str(entry), "-f", "build.ninja"])
        except OSError as e:
            raise JitBuildError(f"could not run ninja for {spec.name}: {e}") from e
        log_path.write_text(output)
        if returncode != 0:
            (entry / tmp_lib).unlink(missing_ok=True)
            raise JitBuildError(
                f"building kernel {spec.name} failed:\n{_first_errors(output)}\n"
                f"full log: {log_path}"
            )
        os.replace(entry / tmp_lib, lib)
        _atomic_write(entry / "meta.json", json.dumps(_metadata(spec, digest), indent=1) + "\n")
        _atomic_write(entry / "COMPLETE", f"{lib.stat().st_size} {_file_digest(lib)}\n")
        log.info("mla_wrapper: compiled kernel %s in %.1f s; pre-build kernels with "
                 "`python -m mla_wrapper warmup` to avoid compiling on first use",
                 spec.name, time.monotonic() - start)
    return lib


def export_entries(specs, dest: Path) -> list[Path]:
    """Copy the complete cache entries of specs into dest (a self-contained cache: point
    MLA_WRAPPER_CACHE_DIR at it, no nvcc needed) and write dest/MANIFEST.json. Returns the
    copied entries; raises JitCacheError naming the specs that are not built."""
    from .. import __version__  # noqa: PLC0415

    missing = [s.name for s in specs if not is_complete(entry_dir(s))]
    if missing:
        raise JitCacheError(f"--export: not built: {', '.join(missing)}")
    dest.mkdir(parents=True, exist_ok=True)
    copied = []
    for spec in specs:
        src = entry_dir(spec)
        target = dest / src.name
        if not is_complete(target):
            tmp = dest / f".{src.name}.tmp.{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            for name in ("lib.so", "meta.json", "source.cu", "source.cpp", "build.ninja"):
                if (src / name).exists():
                    shutil.copy2(src / name, tmp / name)
            shutil.copy2(src / "COMPLETE", tmp / "COMPLETE")   # last: marks it complete
            shutil.rmtree(target, ignore_errors=True)
            os.replace(tmp, target)
        copied.append(target)
    manifest = {"mla_wrapper_version": __version__,
                "entries": [dict(read_metadata(t), entry=t.name) for t in copied]}
    _atomic_write(dest / "MANIFEST.json", json.dumps(manifest, indent=1) + "\n")
    return copied
