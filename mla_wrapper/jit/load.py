"""Load a built kernel library with ctypes and call its launchers.

``load(spec)`` builds if needed (see builder.py), loads the library once per process and
declares every export's argtypes/restype. ``KernelModule.check(fn_name, status)`` turns a
launcher's nonzero status into an exception naming the kernel and the CUDA error.

A library built elsewhere (a shipped cache) is refused only for a real mismatch: the
installed NVIDIA driver supports an older CUDA major version than the toolkit that built it
(recorded in the entry's meta.json), or the dynamic loader rejects it; the message says why
and what to do.
"""
from __future__ import annotations

import ctypes
import functools
import threading
from pathlib import Path

from .builder import JitCacheError, build as build_library, read_metadata
from .spec import ARG_TYPES, KernelSpec

# cudaErrorInsufficientDriver, cudaErrorUnsupportedPtxVersion, cudaErrorNoKernelImageForDevice
_DRIVER_MISMATCH_STATUS = {35: "the NVIDIA driver is older than the CUDA toolkit that built it",
                           222: "the NVIDIA driver is older than the CUDA toolkit that built it",
                           209: "it was not built for this GPU's arch"}


@functools.lru_cache(maxsize=None)
def driver_cuda_version() -> tuple[int, int] | None:
    """(major, minor) CUDA version the installed driver supports; None without a driver."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        if libcuda.cuDriverGetVersion(ctypes.byref(version)) != 0 or version.value <= 0:
            return None
    except (OSError, AttributeError):
        return None
    return version.value // 1000, (version.value % 1000) // 10


def _built_with(meta: dict) -> str:
    return (f"built with CUDA {meta.get('cuda_version', '?')} (nvcc "
            f"{meta.get('nvcc_version', '?')}) for {meta.get('arch', '?')}")


def check_driver(spec: KernelSpec, path: Path, meta: dict | None = None) -> None:
    """Raise JitCacheError when this machine's driver is too old for the toolkit that built
    the library (CUDA minor-version compatibility: same major version suffices)."""
    if spec.is_host:
        return
    meta = read_metadata(path.parent) if meta is None else meta
    driver = driver_cuda_version()
    try:
        built_major = int(str(meta.get("cuda_version", "")).split(".")[0])
    except ValueError:
        return
    if driver is not None and driver[0] < built_major:
        raise JitCacheError(
            f"kernel {spec.name} in {path.parent} was {_built_with(meta)}, but the NVIDIA "
            f"driver here supports CUDA {driver[0]}.{driver[1]}: update the driver to one for "
            f"CUDA {built_major}.x, or rebuild the cache with a CUDA {driver[0]}.x nvcc "
            f"(`python -m mla_wrapper clean` then `warmup`)")


class KernelError(RuntimeError):
    """A kernel launcher returned an error (CUDA error or a failed can_implement)."""


class KernelModule:
    """A loaded kernel library. Attribute access gives the ctypes function of an export."""

    def __init__(self, spec: KernelSpec, path: Path):
        self.spec = spec
        self.path = path
        check_driver(spec, path)
        try:
            self._lib = ctypes.CDLL(str(path))
        except OSError as e:
            raise JitCacheError(
                f"kernel {spec.name}: cannot load {path} ({_built_with(read_metadata(path.parent))}"
                f"): {e}. Remove the entry (`python -m mla_wrapper clean {spec.name}`) to "
                "rebuild it here, or ship a cache built for this platform") from e
        self._status_string = self._lib.mlaw_status_string
        self._status_string.argtypes = [ctypes.c_int32]
        self._status_string.restype = ctypes.c_char_p
        for export in spec.exports:
            fn = getattr(self._lib, export.name)
            fn.argtypes = [ARG_TYPES[a] for a in export.args]
            fn.restype = ARG_TYPES[export.restype]
            setattr(self, export.name, fn)

    def error(self, fn_name: str, status: int) -> KernelError:
        msg = self._status_string(status).decode(errors="replace")
        why = _DRIVER_MISMATCH_STATUS.get(status)
        if why is not None:
            msg += (f"; this library was {_built_with(read_metadata(self.path.parent))} and "
                    f"{why} (driver: CUDA {driver_cuda_version() or '?'}): update the driver "
                    f"or rebuild the cache here")
        return KernelError(f"{self.spec.name}: {fn_name} failed: {msg} (status {status})")

    def call(self, fn_name: str, *args) -> int:
        """Call an export and raise KernelError on a nonzero status (for non-hot paths)."""
        status = getattr(self, fn_name)(*args)
        if status != 0:
            raise self.error(fn_name, status)
        return status


_LOADED: dict[KernelSpec, KernelModule] = {}
_LOCK = threading.Lock()


def load(spec: KernelSpec) -> KernelModule:
    """Build (if needed) and load the kernel library for spec; cached per process."""
    mod = _LOADED.get(spec)
    if mod is not None:
        return mod
    with _LOCK:
        mod = _LOADED.get(spec)
        if mod is None:
            mod = KernelModule(spec, build_library(spec))
            _LOADED[spec] = mod
    return mod
