"""Kernel libraries of sparse (top-k) MLA, torch-free (so `warmup` stays fast).

  sparse_mla   the sm80 attention kernel in its gather mode (jit_templates/sparse_mla.cu.jinja,
               include/mla_wrapper/sparse/gather.cuh): one library per (dtype, arch, config)
               exporting mlaw_sparse_mla_run(plan, args, sparse_args, stream)
  cache_ops    vLLM's cache-gather kernels (cp_gather_cache, gather_and_maybe_dequant_cache,
               cp_gather_and_upconvert_fp8_kv_cache; jit_templates/cache_ops.cu.jinja, the
               Python side in cache_ops.py): one library per arch

and the ctypes mirrors of include/mla_wrapper/sparse/sparse.h (MlaSparseArgs) and
cache_ops.cuh (GatherCacheParams). The tile constants and shared-memory configurations are
the sm80 family's (sm80.py): the gather mode is a template parameter of that kernel.
"""
from __future__ import annotations

import ctypes
import dataclasses

from .backends import sm80, sm90
from .backends.planned import is_fp8_kv
from .jit.spec import Export, KernelSpec

RUN = "mlaw_sparse_mla_run"
GATHER_CACHE = "mlaw_gather_cache"
_RUN_EXPORTS = (Export(RUN, ("ptr", "ptr", "ptr", "stream")),)
_CACHE_EXPORTS = (Export(GATHER_CACHE, ("ptr", "stream")),)
MAX_TOPK = 32768
DS_MLA = "fp8_ds_mla"   # FlashMLA's fp8 rows as a kv dtype (vLLM's kv_cache_dtype name)
DTYPES = sm80.DTYPES


def spec(dtype: str, arch: str, config: str | None = None, device=None,
         kernel: str = "sm80", kv_dtype=None) -> KernelSpec:
    """The sparse attention library for ``dtype`` ('bf16' / 'fp16') queries on ``arch``: the
    gather mode of the ``kernel`` family, "sm80" (sm_80+; config as in sm80.spec, None: picked
    from ``device`` or ``arch``) or "sm90" (sm_90a only, no config). ``kv_dtype``
    torch.float8_e4m3fn (or 'fp8_e4m3'): over an fp8 e4m3 cache (sm90 only, as sm90.spec);
    'fp8_ds_mla': over FlashMLA's 656-byte fp8 rows (sm90 only); None or ``dtype``: the 16-bit
    cache's."""
    if kv_dtype == DS_MLA:
        if kernel != "sm90":
            raise ValueError(f"sparse MLA: FlashMLA's fp8 rows ({DS_MLA!r}) are read by the "
                             f"sm90 kernel (Hopper) only, not {kernel}")
        base = sm90.spec(dtype, arch)                                # validates arch
        base = dataclasses.replace(base, params=base.params + (("kv_dtype", "ds_mla"),))
    elif kernel == "sm90":
        base = sm90.spec(dtype, arch, kv_dtype=kv_dtype)             # validates arch, kv_dtype
    elif kernel == "sm80" and is_fp8_kv(kv_dtype):
        raise ValueError("sparse MLA: an fp8 (e4m3) cache is read by the sm90 kernel (Hopper) "
                         "only, not sm80")
    elif kernel == "sm80":
        base = sm80.spec(dtype, arch, config=config, device=device)  # validates arch / config
    else:
        raise ValueError(f"kernel: expected 'sm80' or 'sm90', got {kernel!r}")
    return KernelSpec(family="sparse", template="sparse_mla.cu.jinja", arch=base.arch,
                      params=(("kernel", kernel),) + base.params, exports=_RUN_EXPORTS,
                      header_dirs=tuple(dict.fromkeys(base.header_dirs + ("sm80", "sparse"))),
                      use_cutlass=True)


def cache_ops_spec(arch: str) -> KernelSpec:
    """The cache-gather library (byte copies and fp8 dequantizing gathers) for ``arch``."""
    from .jit.env import normalize_arch  # noqa: PLC0415

    return KernelSpec(family="cache_ops", template="cache_ops.cu.jinja",
                      arch=normalize_arch(arch), exports=_CACHE_EXPORTS,
                      header_dirs=("common", "sparse"))


def warmup_specs(arch: str, dtypes: list[str]) -> list[KernelSpec]:
    """What `warmup` builds for sparse MLA on ``arch``: the sm80 gather mode, and on sm_90a
    the sm90 one for each library sm90.warmup_specs lists (an fp8 cache's with 'fp8_e4m3')."""
    specs = sm80.warmup_specs(arch, dtypes)
    out = [spec(dict(s.params)["dtype"], s.arch) for s in specs]
    s90 = sm90.warmup_specs(arch, dtypes)
    out += [spec(dict(s.params)["dtype"], s.arch, kernel="sm90",
                 kv_dtype=dict(s.params).get("kv_dtype")) for s in s90]
    # FlashMLA's fp8 rows: with fp8_e4m3, for each query dtype of the 16-bit libraries
    out += [spec(dict(s.params)["dtype"], s.arch, kernel="sm90", kv_dtype=DS_MLA)
            for s in s90 if "kv_dtype" in dict(s.params)]
    return out + [cache_ops_spec(arch)] if out else []


_p = ctypes.c_void_p
_i64 = ctypes.c_int64


class MlaSparseArgsStruct(ctypes.Structure):
    """Mirror of sparse.h ``MlaSparseArgs``."""

    _fields_ = [("topk_length", _p), ("max_logits", _p), ("max_logits_stride_token", _i64),
                ("num_slots", _i64), ("l2_prefetch_rows", ctypes.c_int32),
                ("reserved", ctypes.c_int32)]


class GatherCacheParamsStruct(ctypes.Structure):
    """Mirror of cache_ops.cuh ``GatherCacheParams``."""

    _fields_ = [(n, _p) for n in ("src", "dst", "block_table", "cu_seq_lens", "token_to_seq",
                                  "seq_starts", "scale")] + \
        [(n, _i64) for n in ("num_tokens", "batch", "block_size", "entry_bytes",
                             "src_stride_block", "src_stride_token", "dst_stride_token",
                             "block_table_stride")] + \
        [(n, ctypes.c_int32) for n in ("kind", "fp8_format", "out_type", "starts_only")]


# cache_ops.cuh GatherKind, GatherFp8, GatherOut
GATHER_COPY, GATHER_DEQUANT, GATHER_DS_MLA = 0, 1, 2
FP8_E4M3, FP8_E5M2 = 0, 1
OUT_BF16, OUT_F16, OUT_F32 = 0, 1, 2
DS_MLA_ROW_BYTES = 656   # FlashMLA's fp8 row: 512 e4m3, 4 fp32 scales, 64 bf16 rope values
DS_MLA_ROPE_BYTE = 528   # ... its rope values' first byte (sm90/config.h kDsRopeByte)
