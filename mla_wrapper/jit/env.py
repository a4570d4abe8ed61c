"""Where things are: data files, the cache, nvcc, CUTLASS headers, target archs, parallelism.

Environment variables (all optional):
  MLA_WRAPPER_CACHE_DIR       cache of compiled kernels (default ~/.cache/mla_wrapper); a
                              prebuilt cache (``warmup --export DIR``) loads without nvcc
  MLA_WRAPPER_CUDA_ARCH_LIST  archs `warmup` builds for, e.g. "9.0a,10.0a" (default: this
                              GPU's); at run time kernels are always built for the device's arch
  MLA_WRAPPER_MAX_JOBS        kernels compiled in parallel by `warmup` (default: CPU count,
                              capped at one job per 4 GB of available memory)
  MLA_WRAPPER_NVCC_THREADS    nvcc --threads for one kernel (default 1)
  MLA_WRAPPER_DEBUG_CHECKS    1: plan()/run() check page ids against the cache (syncs; debug)
  CUDA_HOME / CUDA_PATH       CUDA toolkit; else nvcc on PATH; else /usr/local/cuda
Malformed integer values are ignored with a warning (the default is used).
"""
from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import subprocess
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """Folder holding include/ and jit_templates/: the wheel's _data, else the source tree."""
    packaged = PACKAGE_DIR / "_data"
    if (packaged / "jit_templates").is_dir():
        return packaged
    return PACKAGE_DIR.parent


def include_dir() -> Path:
    return data_dir() / "include"


def templates_dir() -> Path:
    return data_dir() / "jit_templates"


def cache_dir() -> Path:
    env = os.environ.get("MLA_WRAPPER_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mla_wrapper"


def env_int(name: str, default: int, minimum: int = 1) -> int:
    """An integer environment variable; unset or empty gives ``default``, a malformed or too
    small value warns (one line naming the variable) and gives ``default``."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or value < minimum:
        if (name, raw) not in _WARNED:
            _WARNED.add((name, raw))
            logging.getLogger("mla_wrapper").warning(
                "mla_wrapper: ignoring %s=%r (expected an integer >= %d); using %d",
                name, raw, minimum, default)
        return default
    return value


_WARNED: set = set()


# Peak host memory of one nvcc compile of a CUTLASS SM100 kernel (measured ~4 GB).
COMPILE_MEMORY_BYTES = 4 << 30


def available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where it cannot be read)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def default_jobs() -> int:
    """CPU count, capped at one compile per COMPILE_MEMORY_BYTES of available memory."""
    jobs = max(1, os.cpu_count() or 1)
    mem = available_memory_bytes()
    if mem is not None:
        jobs = min(jobs, max(1, mem // COMPILE_MEMORY_BYTES))
    return jobs


def max_jobs() -> int:
    return env_int("MLA_WRAPPER_MAX_JOBS", default_jobs())


def nvcc_threads() -> int:
    return env_int("MLA_WRAPPER_NVCC_THREADS", 1)


def debug_checks() -> bool:
    """MLA_WRAPPER_DEBUG_CHECKS=1: validate page ids against the cache size (syncs)."""
    return os.environ.get("MLA_WRAPPER_DEBUG_CHECKS", "").strip() not in ("", "0")


@functools.lru_cache(maxsize=None)
def cuda_home() -> Path | None:
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return Path(os.environ[var])
    nvcc = shutil.which("nvcc")
    if nvcc:
        return Path(nvcc).resolve().parent.parent
    default = Path("/usr/local/cuda")
    return default if default.exists() else None


def nvcc_path() -> Path:
    home = cuda_home()
    if home is not None and (home / "bin" / "nvcc").exists():
        return home / "bin" / "nvcc"
    found = shutil.which("nvcc")
    if found:
        return Path(found)
    raise RuntimeError(
        "nvcc not found: mla_wrapper JIT-compiles its kernels. Set CUDA_HOME to a CUDA "
        "toolkit (12.8 or newer) or put nvcc on PATH, or ship a prebuilt cache via "
        "MLA_WRAPPER_CACHE_DIR."
    )


@functools.lru_cache(maxsize=None)
def nvcc_version() -> str:
    """'13.0.48'-like release string, or 'none' where no nvcc exists. Recorded in each cache
    entry's meta.json; not part of the entry's hash (a prebuilt cache loads without nvcc)."""
    try:
        out = subprocess.run([str(nvcc_path()), "--version"], capture_output=True, text=True,
                             check=True).stdout
    except (RuntimeError, OSError, subprocess.CalledProcessError):
        return "none"
    m = re.search(r"V(\d+\.\d+\.\d+)", out) or re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1]


@functools.lru_cache(maxsize=None)
def cutlass_include_dirs() -> tuple[Path, ...]:
    """CUTLASS/CuTe include paths from the installed nvidia-cutlass package."""
    try:
        import cutlass_library  # noqa: PLC0415 (imported only when a CUTLASS kernel is built)
    except ImportError as e:
        raise RuntimeError(
            "nvidia-cutlass is not installed: `pip install nvidia-cutlass` provides the "
            "CUTLASS/CuTe headers that the kernels are built with."
        ) from e
    src = Path(cutlass_library.__file__).resolve().parent / "source"
    dirs = [src / "include", src / "tools" / "util" / "include", src / "examples"]
    return tuple(d for d in dirs if d.is_dir())


@functools.lru_cache(maxsize=None)
def cutlass_version() -> str:
    try:
        from importlib.metadata import version  # noqa: PLC0415
        return version("nvidia-cutlass")
    except Exception:  # noqa: BLE001 (no package metadata: not installed)
        return "none"


_ARCH_RE = re.compile(r"^(?:sm_)?(\d+)\.?(\d)([af]?)$")


def normalize_arch(arch: str) -> str:
    """'9.0a' / '90a' / 'sm_90a' -> 'sm_90a'; 'host' stays 'host'."""
    arch = arch.strip()
    if arch == "host":
        return arch
    m = _ARCH_RE.match(arch.replace("sm_", "").replace("compute_", ""))
    if not m:
        raise ValueError(f"arch: expected something like '9.0a', 'sm_90a' or '10.0a', got {arch!r}")
    major, minor, suffix = m.groups()
    return f"sm_{major}{minor}{suffix}"


def arch_for_capability(major: int, minor: int) -> str:
    """The arch we compile for on a GPU of this compute capability."""
    if major == 9 and minor == 0:
        return "sm_90a"
    if major == 10 and minor in (0, 3):
        return f"sm_10{minor}a"
    return f"sm_{major}{minor}"


def device_arch(device=None) -> str:
    """The arch kernels are built for on a CUDA device (torch device or index): always the
    device's own (arch_for_capability). MLA_WRAPPER_CUDA_ARCH_LIST only chooses what `warmup`
    pre-builds (requested_archs)."""
    import torch  # noqa: PLC0415

    major, minor = torch.cuda.get_device_capability(device)
    arch = arch_for_capability(major, minor)
    return arch


def requested_archs() -> list[str]:
    """Archs from MLA_WRAPPER_CUDA_ARCH_LIST, else the current GPU's, else []."""
    env = os.environ.get("MLA_WRAPPER_CUDA_ARCH_LIST")
    if env:
        return [normalize_arch(a) for a in re.split(r"[,;\s]+", env) if a]
    try:
        import torch  # noqa: PLC0415

        if torch.cuda.is_available():
            return [device_arch()]
    except ImportError:
        pass
    return []


def arch_major(arch: str) -> int:
    m = re.match(r"sm_(\d+)\d[af]?$", arch)
    if not m:
        raise ValueError(f"not a CUDA arch: {arch!r}")
    return int(m.group(1))
