"""A tiny kernel spec exercising the JIT end to end (used by `info --check` and the tests)."""
from __future__ import annotations

from .spec import Export, KernelSpec


def selftest_spec(arch: str = "sm_80", scale: float = 2.0) -> KernelSpec:
    return KernelSpec(family="selftest", template="selftest.cu.jinja", arch=arch,
                      params=(("scale", scale),),
                      exports=(Export("mlaw_selftest_scale", ("ptr", "ptr", "i32", "stream")),))
