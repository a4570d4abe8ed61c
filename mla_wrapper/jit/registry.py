"""Kernel families known to `warmup`: each module exposes warmup_specs(arch, dtypes)."""
from __future__ import annotations

import importlib

from .spec import KernelSpec

# family name -> module with `warmup_specs(arch: str, dtypes: list[str]) -> list[KernelSpec]`
FAMILIES = {
    "merge": "mla_wrapper.kernels",
    "planner": "mla_wrapper.planner",
    "sm80": "mla_wrapper.sm80",
    "cutlass": "mla_wrapper.sm100",
    "sparse": "mla_wrapper.sparse_specs",
}

ALL_DTYPES = ("bf16", "fp16")


def warmup_specs(archs: list[str], dtypes: list[str] | None = None,
                 families: list[str] | None = None) -> list[KernelSpec]:
    """The specs a serving engine needs on these archs, filtered by dtype and family."""
    dtypes = list(dtypes or ALL_DTYPES)
    names = list(families or FAMILIES)
    unknown = [f for f in names if f not in FAMILIES]
    if unknown:
        raise ValueError(f"--family: unknown kernel family {unknown}; known: {sorted(FAMILIES)}")
    specs: list[KernelSpec] = []
    seen = set()
    for arch in archs:
        for fam in names:
            module = importlib.import_module(FAMILIES[fam])
            for spec in module.warmup_specs(arch, dtypes):
                if spec not in seen:
                    seen.add(spec)
                    specs.append(spec)
    return specs
