"""vLLM's cache-gather ops: rows of a paged cache copied to a contiguous buffer, as they are or
dequantized from fp8 on the way (one kernel: include/mla_wrapper/sparse/cache_ops.cuh).

* ``cp_gather_cache``: bytes as they are, sequences given by ``cu_seq_lens``.
* ``gather_and_maybe_dequant_cache``: the same rows by ``token_to_seq``; ``kv_cache_dtype``
  "auto" copies, "fp8" / "fp8_e4m3" / "fp8_e5m2" dequantize (value times ``scale``) into a
  bf16, fp16 or fp32 ``dst`` (vLLM's MLA prefill over an fp8 cache gathers its context so).
* ``cp_gather_and_upconvert_fp8_kv_cache``: FlashMLA's fp8 rows (vLLM's "fp8_ds_mla" cache:
  656 bytes a token) to 576 bf16 values, sequences given by ``workspace_starts`` (what vLLM's
  sparse MLA does on Hopper before its bf16 attention).

Each fp8 value widens exactly; its product with the scale is rounded once to ``dst``'s dtype,
as ``x.float() * scale`` then ``.to(dst.dtype)`` in torch. Nothing here syncs the device: the
scales and the index tensors stay on the GPU, and the ops capture into CUDA graphs.
"""
from __future__ import annotations

import ctypes
from typing import Optional

import numpy as np
import torch

from . import sparse_specs as _specs
from ._validate import check_int, check_tensor, device_index

_MODULES: dict[int, object] = {}
_FP8_BYTES = (torch.uint8, torch.float8_e4m3fn, torch.float8_e5m2)
_FP8_NAMES = {"fp8": _specs.FP8_E4M3, "fp8_e4m3": _specs.FP8_E4M3,
              "fp8_e5m2": _specs.FP8_E5M2}
_COPY_NAMES = ("auto", "bfloat16", "bf16", "float16", "fp16", "half")
_OUT_TYPES = {torch.bfloat16: _specs.OUT_BF16, torch.float16: _specs.OUT_F16,
              torch.float32: _specs.OUT_F32}
_DS_MLA_DST = 576   # 512 latent + 64 rope values


def _module(device: torch.device):
    index = device_index(device)
    mod = _MODULES.get(index)
    if mod is None:
        from .jit import load  # noqa: PLC0415
        from .jit.env import device_arch  # noqa: PLC0415

        mod = _MODULES[index] = load(_specs.cache_ops_spec(device_arch(device)))
    return index, mod


def _check_src(src_cache) -> None:
    check_tensor("src_cache", src_cache)   # (on CUDA: checked last, in _launch)
    if src_cache.dim() < 3:
        raise ValueError(f"src_cache: expected [num_blocks, block_size, entries...], got shape "
                         f"{list(src_cache.shape)}")
    if src_cache.shape[0] and src_cache.shape[1] and not src_cache[0, 0].is_contiguous():
        raise ValueError("src_cache: each entry (dims 2..) must be contiguous")


def _check_dst(dst, dtypes, entry_shape, device) -> None:
    check_tensor("dst", dst, dtypes=dtypes, device=device)
    if dst.dim() < 1 or tuple(dst.shape[1:]) != tuple(entry_shape):
        raise ValueError(f"dst: expected [tokens, {', '.join(map(str, entry_shape))}], got "
                         f"{list(dst.shape)}")
    if dst.shape[0] and not dst[0].is_contiguous():
        raise ValueError("dst: each row (dims 1..) must be contiguous")


def _check_index(name: str, t, device, min_len: int, optional: bool = False) -> None:
    if t is None and optional:
        return
    if t is None:
        raise ValueError(f"{name}: expected an int32 CUDA tensor, got None")
    check_tensor(name, t, dtypes=(torch.int32,), ndim=1, device=device)
    if not t.is_contiguous() or t.numel() < min_len:
        raise ValueError(f"{name}: expected a contiguous int32 [>= {min_len}] tensor, got shape "
                         f"{list(t.shape)} (contiguous: {t.is_contiguous()})")


def _launch(src_cache, dst, block_table, starts, token_to_seq, seq_starts, num_tokens: int,
            batch: int, *, kind: int = _specs.GATHER_COPY, scale=None, fp8_format: int = 0,
            out_type: int = 0, starts_only: bool = False) -> None:
    """Checks what every op shares (block_table, seq_starts, a CUDA cache) and launches the
    kernel."""
    device = src_cache.device
    check_tensor("block_table", block_table, dtypes=(torch.int32,), ndim=2, device=device,
                 last_dim_contiguous=True)
    _check_index("seq_starts", seq_starts, device, batch, optional=True)
    check_tensor("src_cache", src_cache, cuda=True)
    num_tokens = min(int(num_tokens), dst.shape[0])
    if num_tokens <= 0 or batch <= 0:
        return
    esize = src_cache.element_size()
    p = _specs.GatherCacheParamsStruct(
        src=src_cache.data_ptr(), dst=dst.data_ptr(), block_table=block_table.data_ptr(),
        cu_seq_lens=starts.data_ptr(),
        token_to_seq=0 if token_to_seq is None else token_to_seq.data_ptr(),
        seq_starts=0 if seq_starts is None else seq_starts.data_ptr(),
        scale=0 if scale is None else scale.data_ptr(),
        num_tokens=num_tokens, batch=batch, block_size=src_cache.shape[1],
        entry_bytes=int(np.prod(src_cache.shape[2:])) * esize,
        src_stride_block=src_cache.stride(0) * esize, src_stride_token=src_cache.stride(1) * esize,
        dst_stride_token=dst.stride(0) * dst.element_size(),
        block_table_stride=block_table.stride(0), kind=kind, fp8_format=fp8_format,
        out_type=out_type, starts_only=int(starts_only))
    index, mod = _module(device)
    with torch.cuda.device(index):
        mod.call(_specs.GATHER_CACHE, ctypes.addressof(p),
                 torch.cuda.current_stream(index).cuda_stream)


def cp_gather_cache(src_cache: torch.Tensor, dst: torch.Tensor, block_table: torch.Tensor,
                    cu_seq_lens: torch.Tensor, batch_size: int,
                    seq_starts: Optional[torch.Tensor] = None) -> None:
    """vLLM's cp_gather_cache: dst[cu_seq_lens[b] + i] = src_cache[block_table[b, p //
    block_size], p % block_size] with p = i + seq_starts[b] (0 without seq_starts), for every
    sequence b < batch_size.

    src_cache [num_blocks, block_size, entries...] (any dtype), dst [tokens, entries...] of the
    same dtype, block_table int32 [batch, max_blocks], cu_seq_lens int32 [>= batch_size + 1],
    seq_starts int32 [batch_size] or None. Rows of dst past cu_seq_lens[batch_size] are left
    alone."""
    _check_src(src_cache)
    _check_dst(dst, (src_cache.dtype,), src_cache.shape[2:], src_cache.device)
    batch = check_int("batch_size", batch_size, 0)
    _check_index("cu_seq_lens", cu_seq_lens, src_cache.device, batch + 1)
    _launch(src_cache, dst, block_table, cu_seq_lens, None, seq_starts, dst.shape[0], batch)


def gather_and_maybe_dequant_cache(src_cache: torch.Tensor, dst: torch.Tensor,
                                   block_table: torch.Tensor, cu_seq_lens: torch.Tensor,
                                   token_to_seq: torch.Tensor, num_tokens: int,
                                   kv_cache_dtype: str, scale: Optional[torch.Tensor] = None,
                                   seq_starts: Optional[torch.Tensor] = None) -> None:
    """vLLM's gather_and_maybe_dequant_cache: like cp_gather_cache for the first num_tokens
    rows of dst, token t belonging to sequence token_to_seq[t].

    kv_cache_dtype "auto" (or the cache's own 16-bit dtype name): rows copied, dst of
    src_cache's dtype. "fp8" / "fp8_e4m3" / "fp8_e5m2": src_cache holds fp8 bytes (uint8 or
    the matching torch.float8 dtype), dst is bf16, fp16 or fp32 with the same entry shape, and
    each value is dequantized as fp8 * scale[0] (scale: a float32 CUDA tensor, vLLM's k_scale).
    token_to_seq int32 [>= num_tokens], cu_seq_lens int32 [batch + 1], seq_starts int32
    [batch] or None."""
    _check_src(src_cache)
    device = src_cache.device
    if not isinstance(cu_seq_lens, torch.Tensor):
        raise ValueError(f"cu_seq_lens: expected an int32 CUDA tensor, got "
                         f"{type(cu_seq_lens).__name__}")
    batch = cu_seq_lens.numel() - 1
    num_tokens = check_int("num_tokens", num_tokens, 0)
    _check_index("cu_seq_lens", cu_seq_lens, device, 1)
    _check_index("token_to_seq", token_to_seq, device, min(num_tokens, _rows(dst)))
    if kv_cache_dtype in _COPY_NAMES:
        _check_dst(dst, (src_cache.dtype,), src_cache.shape[2:], device)
        _launch(src_cache, dst, block_table, cu_seq_lens, token_to_seq, seq_starts, num_tokens,
                batch)
        return
    fmt = _FP8_NAMES.get(kv_cache_dtype)
    if fmt is None:
        hint = (" (FlashMLA's 656-byte rows: use cp_gather_and_upconvert_fp8_kv_cache)"
                if kv_cache_dtype == "fp8_ds_mla" else "")
        raise ValueError(f"kv_cache_dtype: expected 'auto', 'fp8', 'fp8_e4m3' or 'fp8_e5m2', "
                         f"got {kv_cache_dtype!r}{hint}")
    typed = torch.float8_e4m3fn if fmt == _specs.FP8_E4M3 else torch.float8_e5m2
    check_tensor("src_cache", src_cache, dtypes=(torch.uint8, typed))
    _check_dst(dst, tuple(_OUT_TYPES), src_cache.shape[2:], device)
    if int(np.prod(src_cache.shape[2:])) % 8:
        raise ValueError(f"src_cache: fp8 entries must be whole groups of 8 values, got "
                         f"{list(src_cache.shape[2:])}")
    _check_aligned("src_cache", src_cache, 8, "fp8 rows")
    _check_aligned("dst", dst, 16, "dequantized rows")
    _check_scale(scale, device)
    _launch(src_cache, dst, block_table, cu_seq_lens, token_to_seq, seq_starts, num_tokens,
            batch, kind=_specs.GATHER_DEQUANT, scale=scale, fp8_format=fmt,
            out_type=_OUT_TYPES[dst.dtype])


def cp_gather_and_upconvert_fp8_kv_cache(src_cache: torch.Tensor, dst: torch.Tensor,
                                         block_table: torch.Tensor,
                                         workspace_starts: torch.Tensor, batch_size: int,
                                         seq_starts: Optional[torch.Tensor] = None) -> None:
    """vLLM's cp_gather_and_upconvert_fp8_kv_cache: FlashMLA's fp8 cache rows to bf16.

    src_cache [num_blocks, block_size, 656] of uint8 (or a torch.float8 dtype): per token 512
    e4m3 latent values, 4 float32 scales (one per 128 values), 64 bf16 rope values. dst bf16
    [total_tokens, 576]: latent value i is e4m3 * scale[i // 128], the rope values as they are.
    Sequence b (< batch_size) fills dst rows workspace_starts[b] .. workspace_starts[b + 1] - 1
    (the last one up to total_tokens), from position seq_starts[b] (0 without seq_starts).
    workspace_starts int32 [>= batch_size], non-decreasing, starting at 0."""
    _check_src(src_cache)
    device = src_cache.device
    check_tensor("src_cache", src_cache, dtypes=_FP8_BYTES)
    if src_cache.dim() != 3 or src_cache.shape[2] != _specs.DS_MLA_ROW_BYTES:
        raise ValueError(f"src_cache: expected [num_blocks, block_size, "
                         f"{_specs.DS_MLA_ROW_BYTES}] (FlashMLA's fp8 rows), got shape "
                         f"{list(src_cache.shape)}")
    _check_dst(dst, (torch.bfloat16,), (_DS_MLA_DST,), device)
    _check_aligned("src_cache", src_cache, 16, "FlashMLA's fp8 rows")
    _check_aligned("dst", dst, 16, "the bf16 rows")
    batch = check_int("batch_size", batch_size, 0)
    _check_index("workspace_starts", workspace_starts, device, batch)
    _launch(src_cache, dst, block_table, workspace_starts, None, seq_starts, dst.shape[0], batch,
            kind=_specs.GATHER_DS_MLA, starts_only=True)


def _check_aligned(name: str, t, align: int, what: str) -> None:
    """The fp8 kernels' vector accesses: t's address and its row strides (bytes) multiples of
    ``align``."""
    es = t.element_size()
    strides = [st * es for st, n in zip(t.stride()[:-1], t.shape[:-1]) if n > 1]
    bad = [v for v in [t.data_ptr()] + strides if v % align]
    if bad:
        raise ValueError(f"{name}: {what} need {align}-byte aligned rows (address and row "
                         f"strides in bytes), got address {t.data_ptr()} and strides "
                         f"{[st * es for st in t.stride()]} bytes (use a contiguous or "
                         f"{align}-byte padded tensor)")


def _rows(dst) -> int:
    return dst.shape[0] if isinstance(dst, torch.Tensor) and dst.dim() else 0


def _check_scale(scale, device) -> None:
    if scale is None:
        raise ValueError("scale: an fp8 cache needs its scale, a float32 CUDA tensor (vLLM's "
                         "k_scale), got None")
    check_tensor("scale", scale, dtypes=(torch.float32,), device=device)
    if scale.numel() < 1:
        raise ValueError("scale: expected at least one element (element 0 is the scale)")


__all__ = ["cp_gather_cache", "gather_and_maybe_dequant_cache",
           "cp_gather_and_upconvert_fp8_kv_cache"]
