"""KernelSpec: what to compile (family, template, arch, template parameters) and how to call it.

A spec's readable name says what the kernel is (``merge_bf16_sm_90a``); its hash (computed at
build time, see builder.py) covers everything that changes the binary.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

# Argument kinds of the extern "C" launchers, mapped to ctypes types. Every launcher returns
# an int status: 0 = success, > 0 = a cudaError_t, < 0 = a library error whose message
# mlaw_status_string() returns.
ARG_TYPES: dict[str, Any] = {
    "ptr": ctypes.c_void_p,
    "stream": ctypes.c_void_p,
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "u64": ctypes.c_uint64,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}


@dataclass(frozen=True)
class Export:
    """One extern "C" function of a kernel library: its name and argument kinds."""

    name: str
    args: tuple[str, ...]
    restype: str = "i32"


@dataclass(frozen=True)
class KernelSpec:
    """Everything that identifies one JIT-compiled kernel library.

    family:      kernel family ("merge", "sm80", "sm90", "cutlass", "planner").
    template:    file name under jit_templates/ (``*.cu.jinja``; ``*.cpp.jinja`` for host code).
    arch:        "sm_90a", "sm_100a", "sm_80", ... or "host" (no device code).
    params:      template parameters as (key, value) pairs; values appear in the name.
    exports:     the launchers the library exports, with their argument kinds.
    header_dirs: sub-folders of include/mla_wrapper/ the sources include (hashed).
    use_cutlass: add the nvidia-cutlass include paths.
    extra_flags: more nvcc flags.
    """

    family: str
    template: str
    arch: str
    params: tuple[tuple[str, Any], ...] = ()
    exports: tuple[Export, ...] = ()
    header_dirs: tuple[str, ...] = ("common",)
    use_cutlass: bool = False
    extra_flags: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        parts = [self.family] + [_slug(v) for _, v in self.params] + [self.arch]
        return "_".join(p for p in parts if p)

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def is_host(self) -> bool:
        return self.arch == "host"


def _slug(value: Any) -> str:
    if isinstance(value, bool):
        return "t" if value else "f"
    return str(value).replace(".", "p").replace("-", "m").replace(" ", "")
