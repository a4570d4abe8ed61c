"""Where things are: data files, the cache, nvcc, CUTLASS headers, target archs, parallelism.

Environment variables (all optional):
  MLA_WRAPPER_CACHE_DIR       cache of compiled kernels (default ~/.cache/mla_wrapper)
  MLA_WRAPPER_CUDA_ARCH_LIST  archs to build for, e.g. "9.0a,10.0a" (default: this GPU's)
  MLA_WRAPPER_MAX_JOBS        kernels compiled in parallel by `warmup` (default: CPU count)
  MLA_WRAPPER_NVCC_THREADS    nvcc --threads for one kernel (default 1)
  CUDA_HOME / CUDA_PATH       CUDA toolkit; else nvcc on PATH; else /usr/local/cuda
"""
from __future__ import annotations

import functools
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


def max_jobs() -> int:
    env = os.environ.get("MLA_WRAPPER_MAX_JOBS")
    if env:
        return max(1, int(env))
    return max(1, os.cpu_count() or 1)


def nvcc_threads() -> int:
    return max(1, int(os.environ.get("MLA_WRAPPER_NVCC_THREADS", "1")))


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
    """'13.0.48'-like release string, or 'none' where no nvcc exists (prebuilt caches)."""
    try:
        out = subprocess.run([str(nvcc_path()), "--version"], capture_output=True, text=True,
                             check=True).stdout
    except (RuntimeError, OSError, subprocess.CalledProcessError):
        return os.environ.get("MLA_WRAPPER_NVCC_VERSION", "none")
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
    """Arch of a CUDA device (torch device or index); honours MLA_WRAPPER_CUDA_ARCH_LIST's
    first entry matching the device's major version."""
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
