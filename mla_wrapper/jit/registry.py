"""Kernel families known to `warmup`: each module exposes warmup_specs(arch, dtypes)."""
from __future__ import annotations

import importlib

from .env import arch_major, normalize_arch
from .spec import KernelSpec

# family name -> module with `warmup_specs(arch: str, dtypes: list[str]) -> list[KernelSpec]`
FAMILIES = {
    "merge": "mla_wrapper.kernels",
    "planner": "mla_wrapper.planner",
    "sm80": "mla_wrapper.backends.sm80",
    "sm90": "mla_wrapper.backends.sm90",
    "cutlass": "mla_wrapper.backends.cutlass",
    "sparse": "mla_wrapper.sparse_specs",
}

ALL_DTYPES = ("bf16", "fp16")

# family -> (module attribute listing its dtypes, or None: dtype-independent)
_DTYPES_ATTR = {"merge": "MERGE_DTYPE_NAMES", "planner": None, "sm80": "DTYPES",
                "sm90": "WARMUP_DTYPES", "cutlass": "DTYPES", "sparse": "DTYPES"}
# Families of device code (the host planner is built once, whatever the arch).
_DEVICE_FAMILIES = ("merge", "sm80", "sm90", "cutlass", "sparse")
MIN_ARCH_MAJOR = 8
# Archs the CUTLASS SM100 kernel is built for: sm100.warmup_specs takes sm_100a / sm_103a (built
# as the family-portable sm_100f); sm_100f asks for that family build directly.
CUTLASS_ARCHS = {"sm_100a": "sm_100a", "sm_103a": "sm_103a", "sm_100f": "sm_103a"}


def family_dtypes(family: str) -> tuple[str, ...] | None:
    attr = _DTYPES_ATTR[family]
    return None if attr is None else tuple(getattr(importlib.import_module(FAMILIES[family]), attr))


def _skip_reason(family: str, arch: str) -> str | None:
    """Why family builds nothing for arch (None: it builds)."""
    if family not in _DEVICE_FAMILIES or arch == "host":
        return None
    if arch_major(arch) < MIN_ARCH_MAJOR:
        return f"mla_wrapper's GPU kernels need sm_80 or newer, {arch} is older"
    if family == "sm90" and arch != "sm_90a":
        return f"the sm90 kernel runs on Hopper only (sm_90a), not {arch}"
    if family == "cutlass" and arch not in CUTLASS_ARCHS:
        return (f"the CUTLASS SM100 MLA kernel runs on Blackwell only "
                f"({', '.join(CUTLASS_ARCHS)}), not {arch}")
    return None


def _check_dtypes(dtypes: list[str], names: list[str]) -> list[str]:
    """Reject dtypes no selected family has; return notes for those some families skip."""
    supported = {fam: family_dtypes(fam) for fam in names}
    typed = {fam: d for fam, d in supported.items() if d is not None}
    valid = sorted({d for ds in typed.values() for d in ds})
    notes = []
    for d in dtypes:
        if typed and all(d not in ds for ds in typed.values()):
            per_family = "; ".join(f"{fam}: {','.join(ds)}" for fam, ds in typed.items())
            raise ValueError(f"--dtype: unknown dtype {d!r}; valid: {', '.join(valid)} "
                             f"({per_family})")
        skipped = [fam for fam, ds in typed.items() if d not in ds]
        if skipped:
            notes.append(f"{d}: no {'/'.join(skipped)} kernels for it (skipped)")
    return notes


def warmup_plan(archs: list[str], dtypes: list[str] | None = None,
                families: list[str] | None = None) -> tuple[list[KernelSpec], list[str]]:
    """(specs, notes): the specs a serving engine needs on these archs, filtered by dtype and
    family, and one line per requested (family, arch) or dtype that builds nothing, saying why.
    Raises ValueError for unknown families or dtypes."""
    dtypes = list(dict.fromkeys(dtypes or ALL_DTYPES))
    names = list(dict.fromkeys(families or FAMILIES))
    unknown = [f for f in names if f not in FAMILIES]
    if unknown:
        raise ValueError(f"--family: unknown kernel family {unknown}; known: {sorted(FAMILIES)}")
    notes = _check_dtypes(dtypes, names)
    specs: list[KernelSpec] = []
    seen = set()
    for arch in (normalize_arch(a) for a in archs):
        for fam in names:
            reason = _skip_reason(fam, arch)
            if reason is not None:
                notes.append(f"{arch}: skipped {fam}: {reason}")
                continue
            module = importlib.import_module(FAMILIES[fam])
            fam_arch = CUTLASS_ARCHS[arch] if fam == "cutlass" else arch
            for spec in module.warmup_specs(fam_arch, dtypes):
                if spec not in seen:
                    seen.add(spec)
                    specs.append(spec)
    return specs, notes


def warmup_specs(archs: list[str], dtypes: list[str] | None = None,
                 families: list[str] | None = None) -> list[KernelSpec]:
    """The specs a serving engine needs on these archs, filtered by dtype and family."""
    return warmup_plan(archs, dtypes, families)[0]
