"""Load a built kernel library with ctypes and call its launchers.

``load(spec)`` builds if needed (see builder.py), loads the library once per process and
declares every export's argtypes/restype. ``KernelModule.check(fn_name, status)`` turns a
launcher's nonzero status into an exception naming the kernel and the CUDA error.
"""
from __future__ import annotations

import ctypes
import threading
from pathlib import Path

from .builder import build as build_library
from .spec import ARG_TYPES, KernelSpec


class KernelError(RuntimeError):
    """A kernel launcher returned an error (CUDA error or a failed can_implement)."""


class KernelModule:
    """A loaded kernel library. Attribute access gives the ctypes function of an export."""

    def __init__(self, spec: KernelSpec, path: Path):
        self.spec = spec
        self.path = path
        self._lib = ctypes.CDLL(str(path))
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
