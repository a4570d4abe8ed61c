"""Standalone kernel ops with the sgl-kernel / vLLM APIs.

Sections, one per kernel family: its KernelSpec factory, its entry in ``warmup_specs`` and
its public functions. Kernel libraries are built/loaded on first use and cached per (dtype,
device), so the per-call cost is validation plus one ctypes call.

LSE conventions (they differ between the functions on purpose, matching their origins):
  merge_state        base 2 (log2-sum-exp), s [N, H]        -- FlashInfer / sgl-kernel
  merge_state_v2     natural log, s [N, H]                  -- vLLM kernel via sgl-kernel
  merge_attn_states  natural log, lse [H, N] (heads first)  -- vLLM
"""
from __future__ import annotations

import ctypes
from typing import Optional, Tuple

import torch

from ._validate import check_int, check_same_device, check_tensor, device_index, dtype_name
from .jit import KernelModule, load
from .jit.env import device_arch
from . import backends, kernels, workspace as ws_mod
from .backends import cutlass, sm80, sm90
from .backends.planned import _pack_args
from .kernels import MERGE_BASE2 as _MERGE_BASE2, MERGE_BASE_E as _MERGE_BASE_E, merge_spec
from .wrapper import _current_device_getter, _raw_stream_getter

_current_device = _current_device_getter()   # () -> the current CUDA device's index
_raw_stream = _raw_stream_getter()           # (index) -> its current stream, a cudaStream_t int

__all__ = ["merge_state", "merge_state_v2", "merge_attn_states", "merge_spec",
           "cutlass_mla_decode", "cutlass_mla_get_workspace_size"]


# ------------------------------------------------------------------------------------------
# merge ops: merge_state, merge_state_v2 (sgl-kernel), merge_attn_states (vLLM)
# Kernels: include/mla_wrapper/merge/merge_ops.cuh; instantiation: jit_templates/merge.cu.jinja
# ------------------------------------------------------------------------------------------

MERGE_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
_LSE_IN_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)

_MERGE_MODULES: dict[tuple[torch.dtype, torch.device], KernelModule] = {}


def _merge_module(dtype: torch.dtype, device: torch.device) -> KernelModule:
    mod = _MERGE_MODULES.get((dtype, device))
    if mod is None:
        mod = load(merge_spec(dtype_name(dtype), device_arch(device)))
        _MERGE_MODULES[(dtype, device)] = mod
    return mod


def _check_cuda(**tensors) -> torch.device:
    """The CUDA checks, run after every dtype/shape/stride check so those fire on CPU too."""
    for name, t in tensors.items():
        if t is not None:
            check_tensor(name, t, cuda=True)
    return check_same_device(**tensors)


def _run_merge(base_e: bool, out: torch.Tensor, out_lse: Optional[torch.Tensor],
               a: torch.Tensor, a_lse: torch.Tensor, b: torch.Tensor, b_lse: torch.Tensor,
               lse_token_dim: int, tokens_with_context: int) -> None:
    """Launch the merge kernel. lse_token_dim: the lse tensors' token dim (0: [N, H], 1: [H, N])."""
    num_tokens, num_heads, head_dim = out.shape
    if num_tokens * num_heads == 0:
        return
    device = out.device
    mod = _merge_module(out.dtype, device)
    name = _MERGE_BASE_E if base_e else _MERGE_BASE2
    head_dim_of_lse = 1 - lse_token_dim
    out_lse_strides = ((out_lse.stride(lse_token_dim), out_lse.stride(head_dim_of_lse))
                       if out_lse is not None else (0, 0))
    args = (out.data_ptr(), out_lse.data_ptr() if out_lse is not None else None,
            a.data_ptr(), a_lse.data_ptr(), b.data_ptr(), b_lse.data_ptr(),
            num_tokens, num_heads, head_dim,
            out.stride(0), out.stride(1), a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            *out_lse_strides,
            a_lse.stride(lse_token_dim), a_lse.stride(head_dim_of_lse),
            b_lse.stride(lse_token_dim), b_lse.stride(head_dim_of_lse),
            tokens_with_context)
    fn = getattr(mod, name)
    if device.index != torch.cuda.current_device():
        with torch.cuda.device(device):
            status = fn(*args, torch.cuda.current_stream(device).cuda_stream)
    else:
        status = fn(*args, torch.cuda.current_stream(device).cuda_stream)
    if status != 0:
        raise mod.error(name, status)


def check_merge_state_args(v_a, s_a, v_b, s_b, v_merged=None, s_merged=None):
    """merge_state / merge_state_v2 dtype and shape checks (no device checks: also serve the
    fake implementations in torch_ops). Returns (N, H, D)."""
    check_tensor("v_a", v_a, dtypes=MERGE_DTYPES, ndim=3, last_dim_contiguous=True)
    n, h, d = v_a.shape
    check_tensor("v_b", v_b, dtypes=(v_a.dtype,), shape=(n, h, d), last_dim_contiguous=True)
    check_tensor("s_a", s_a, dtypes=_LSE_IN_DTYPES, shape=(n, h))
    check_tensor("s_b", s_b, dtypes=_LSE_IN_DTYPES, shape=(n, h))
    if v_merged is not None:
        check_tensor("v_merged", v_merged, dtypes=(v_a.dtype,), shape=(n, h, d),
                     last_dim_contiguous=True)
    if s_merged is not None:
        check_tensor("s_merged", s_merged, dtypes=(torch.float32,), shape=(n, h))
    return n, h, d


def _merge_state_impl(base_e: bool, v_a, s_a, v_b, s_b, v_merged, s_merged):
    n, h, d = check_merge_state_args(v_a, s_a, v_b, s_b, v_merged, s_merged)
    device = _check_cuda(v_a=v_a, s_a=s_a, v_b=v_b, s_b=s_b, v_merged=v_merged,
                         s_merged=s_merged)
    s_a = s_a.to(torch.float32)
    s_b = s_b.to(torch.float32)
    if v_merged is None:
        v_merged = torch.empty((n, h, d), dtype=v_a.dtype, device=device)
    if s_merged is None:
        s_merged = torch.empty((n, h), dtype=torch.float32, device=device)
    _run_merge(base_e, v_merged, s_merged, v_a, s_a, v_b, s_b, lse_token_dim=0,
               tokens_with_context=n)
    return v_merged, s_merged


def merge_state(v_a: torch.Tensor, s_a: torch.Tensor, v_b: torch.Tensor, s_b: torch.Tensor,
                v_merged: Optional[torch.Tensor] = None,
                s_merged: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Merge two partial attention states; LSE in **base 2** (sgl-kernel ``merge_state``,
    FlashInfer's cascade ``merge_state``).

    Args:
        v_a, v_b: partial outputs ``[N, H, D]``, bf16 / fp16 / fp32 (one dtype for both, and
            for ``v_merged``); any strides with a contiguous last dim (no copies are made).
        s_a, s_b: their log2-sum-exp ``[N, H]``, any float dtype (converted to float32; any
            strides). -inf marks an empty side (contributes nothing); +inf is treated as
            empty too, as vLLM does. Both sides empty gives v = 0 and s = -inf.
        v_merged: optional output ``[N, H, D]`` of v_a's dtype (contiguous last dim).
        s_merged: optional output ``[N, H]`` float32.

    Returns:
        ``(v_merged, s_merged)``: ``[N, H, D]`` in v_a's dtype and ``[N, H]`` float32, with
        ``s_merged = log2(2^s_a + 2^s_b)`` and ``v_merged`` the matching weighted average.
    """
    return _merge_state_impl(False, v_a, s_a, v_b, s_b, v_merged, s_merged)


def merge_state_v2(v_a: torch.Tensor, s_a: torch.Tensor, v_b: torch.Tensor, s_b: torch.Tensor,
                   v_merged: Optional[torch.Tensor] = None,
                   s_merged: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Merge two partial attention states; LSE in **natural log** (sgl-kernel
    ``merge_state_v2``, vLLM's merge kernel with sgl-kernel's ``[N, H]`` LSE layout).

    Args:
        v_a, v_b: partial outputs ``[N, H, D]``, bf16 / fp16 / fp32 (one dtype for both, and
            for ``v_merged``); any strides with a contiguous last dim (no copies are made).
        s_a, s_b: their log-sum-exp (natural log) ``[N, H]``, any float dtype (converted to
            float32; any strides). -inf marks an empty side; +inf is treated as empty too
            (vLLM's convention for a partial that saw no token). Both empty: v = 0, s = -inf.
        v_merged: optional output ``[N, H, D]`` of v_a's dtype (contiguous last dim).
        s_merged: optional output ``[N, H]`` float32.

    Returns:
        ``(v_merged, s_merged)``: ``[N, H, D]`` in v_a's dtype and ``[N, H]`` float32, with
        ``s_merged = ln(e^s_a + e^s_b)``.
    """
    return _merge_state_impl(True, v_a, s_a, v_b, s_b, v_merged, s_merged)


def merge_attn_states(output: torch.Tensor, prefix_output: torch.Tensor,
                      prefix_lse: torch.Tensor, suffix_output: torch.Tensor,
                      suffix_lse: torch.Tensor, output_lse: Optional[torch.Tensor] = None,
                      prefill_tokens_with_context: Optional[int] = None) -> None:
    """Merge prefix (KV cache) and suffix (new tokens) partial attention into ``output``
    (vLLM's ``merge_attn_states``); LSE in **natural log**, laid out **[H, N]**.

    Args:
        output: ``[N, H, D]`` bf16 / fp16 / fp32, written in place.
        prefix_output, suffix_output: ``[N, H, D]``, output's dtype.
        prefix_lse, suffix_lse: ``[H, N]`` float32 (any strides).
        output_lse: optional ``[H, N]`` float32 (any strides) receiving the merged LSE.
        prefill_tokens_with_context: tokens with index >= this value take ``suffix_output``
            (and ``suffix_lse`` into ``output_lse``) unchanged, bit for bit; None means all N
            tokens are merged; values above N count as N.

    All value tensors may be views with any token/head strides; their last dim must be
    contiguous. Nothing is copied. -inf marks an empty side, +inf counts as empty too (as in
    vLLM); a merged token with both sides empty gets output 0 and LSE -inf.
    """
    tokens_with_context = check_merge_attn_args(output, prefix_output, prefix_lse, suffix_output,
                                                suffix_lse, output_lse, prefill_tokens_with_context)
    _check_cuda(output=output, prefix_output=prefix_output, prefix_lse=prefix_lse,
                suffix_output=suffix_output, suffix_lse=suffix_lse, output_lse=output_lse)
    _run_merge(True, output, output_lse, prefix_output, prefix_lse, suffix_output, suffix_lse,
               lse_token_dim=1, tokens_with_context=tokens_with_context)


def check_merge_attn_args(output, prefix_output, prefix_lse, suffix_output, suffix_lse,
                          output_lse=None, prefill_tokens_with_context=None) -> int:
    """merge_attn_states dtype / shape / argument checks (no device checks). Returns the
    number of tokens to merge."""
    check_tensor("output", output, dtypes=MERGE_DTYPES, ndim=3, last_dim_contiguous=True)
    n, h, d = output.shape
    for name, t in (("prefix_output", prefix_output), ("suffix_output", suffix_output)):
        check_tensor(name, t, dtypes=(output.dtype,), shape=(n, h, d), last_dim_contiguous=True)
    for name, t in (("prefix_lse", prefix_lse), ("suffix_lse", suffix_lse),
                    ("output_lse", output_lse)):
        if t is not None:
            check_tensor(name, t, dtypes=(torch.float32,), shape=(h, n))
    if prefill_tokens_with_context is None:
        tokens_with_context = n
    else:
        tokens_with_context = min(check_int("prefill_tokens_with_context",
                                            prefill_tokens_with_context, 0, hint=" (or None)"), n)
    return tokens_with_context


# ------------------------------------------------------------------------------------------
# sgl-kernel MLA decode: cutlass_mla_decode, cutlass_mla_get_workspace_size
# On SM100 these run CUTLASS's MLA kernel (backends/cutlass.py). Elsewhere they route to a
# planned family (sm90 on Hopper, sm80 on other SM80+ GPUs: backends.routed_family) with the
# same semantics: a plan written on the GPU from seq_lens on every call (the call has no
# per-step object to keep one in) into the caller's workspace, so nothing reads the lengths on
# the host and the call stays capturable in a CUDA graph. The plan is the balanced one of
# FlashMLA's dense call (device_plan/balanced.cuh: near-equal shares of the batch's work,
# lockstep groups at H > 64), which a call with unchanged lengths keeps (the workspace's memo:
# a step's later layers); a workspace too small for it (sized by hand, not with
# cutlass_mla_get_workspace_size), and a batch of one request, get the uniform split plan
# (common/device_plan.cuh: the same number of pieces a request; for a batch of several it ran
# 0.5-0.9x the balanced plan's speed on an H200, session 72).
# ------------------------------------------------------------------------------------------

# The routed families share the row tile, CTAs per SM and head limit, so the workspace size
# does not depend on which one runs.
assert (sm80.ROWS_PER_TILE, sm80.CTAS_PER_SM, sm80.MAX_HEADS) == \
    (sm90.ROWS_PER_TILE, sm90.CTAS_PER_SM, sm90.MAX_HEADS)
_ROWS_PER_TILE = sm80.ROWS_PER_TILE
_MAX_HEADS = sm80.MAX_HEADS
_MIN_SPLIT_TOKENS = 256      # shortest kv chunk worth a split (its partial + merge cost)
_MAX_SPLITS = cutlass.MAX_KV_SPLITS       # same range as the CUTLASS path accepts


def _is_sm100(device_index: Optional[int] = None) -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability(device_index)[0] == 10


def _routed_num_splits(max_seq_len: int, num_batches: int, sm_count: int, num_kv_splits: int,
                       num_heads: int = _MAX_HEADS, min_split: int = _MIN_SPLIT_TOKENS) -> int:
    """Splits per request of the uniform plan on the routed (non-SM100) path: the caller's
    num_kv_splits when >= 1, else enough to give every SM a tile (at most one split per
    min_split kv tokens of max_seq_len)."""
    if num_kv_splits >= 1:
        return min(int(num_kv_splits), _MAX_SPLITS)
    tiles = max(1, num_batches * -(-num_heads // _ROWS_PER_TILE))
    by_sms = -(-sm_count // tiles)
    by_len = max(1, -(-max_seq_len // min_split))
    return max(1, min(by_sms, by_len, _MAX_SPLITS))


def _gpu_plan_layout(arrays, slots: int):
    """(int32 element offsets, partial_o byte offset, partial_lse byte offset, total bytes) of a
    plan written on the GPU into one workspace: the (name, int32 elements) arrays in order, each
    128-byte aligned, then `slots` partial slots of float32 rows (a 16-bit family's fit)."""
    off, offsets = 0, {}
    for name, n in arrays:
        offsets[name] = off
        off = -(-(off + n) // 32) * 32            # 128-byte aligned arrays
    partial_o = off * 4
    partial_lse = partial_o + slots * _ROWS_PER_TILE * ws_mod.HEAD_DIM_CKV * 4
    return offsets, partial_o, partial_lse, partial_lse + slots * _ROWS_PER_TILE * 4


def _routed_layout(num_batches: int, num_heads: int, num_splits: int, num_ctas: int):
    """(int32 element offsets, partial_o byte offset, partial_lse byte offset, total bytes) of
    the routed path's plan inside the caller's workspace."""
    tiles = num_batches * -(-num_heads // _ROWS_PER_TILE)
    items = tiles * num_splits
    # room for num_ctas records at least: the sm90 kernel reads record blockIdx.x as a guess of
    # its CTA's first item before cta_work_indptr arrives (sm90/work.cuh CtaStart)
    work = max(items, num_ctas)
    merges = tiles if num_splits > 1 else 0
    return _gpu_plan_layout((("counts", ws_mod.NUM_COUNTS), ("cta_work_indptr", num_ctas + 1),
                             ("request_info", ws_mod.REQUEST_FIELDS * num_batches),
                             ("merge_info", ws_mod.MERGE_FIELDS * merges),
                             ("work_info", ws_mod.WORK_FIELDS * work)),
                            items if num_splits > 1 else 0)


def cutlass_mla_get_workspace_size(max_seq_len: int, num_batches: int, sm_count: int = 0,
                                   num_kv_splits: int = 1) -> int:
    """Bytes of ``workspace`` that ``cutlass_mla_decode`` needs (sgl-kernel's function).

    Computed on the host from sizes alone. sm_count=0 asks the current CUDA device. On an SM100
    GPU this is CUTLASS's MLA workspace (split-KV partials, 0 without splits); on other GPUs it
    is what the routed sm80 / sm90 path needs for the same call (plan arrays + partials); with no
    GPU visible it is the larger of the two, so a caller that sizes with it never runs short.
    """
    max_seq_len = check_int("max_seq_len", max_seq_len, 1)
    num_batches = check_int("num_batches", num_batches, 1)
    sm_count = check_int("sm_count", sm_count, 0, hint=" (0: the current device's)")
    num_kv_splits = check_int("num_kv_splits", num_kv_splits, -(1 << 31), _MAX_SPLITS,
                              hint=" (<= 0: chosen by the library)")
    has_gpu = torch.cuda.is_available()
    if sm_count == 0:
        if not has_gpu:
            raise ValueError("sm_count: 0 means 'ask the current device', but no CUDA device is "
                             "visible; pass the GPU's SM count")
        sm_count = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    cutlass_bytes = cutlass.get_workspace_size(max_seq_len, num_batches, sm_count, num_kv_splits)
    if has_gpu and _is_sm100():
        return cutlass_bytes
    routed = _routed_balanced_bytes(num_batches, sm_count)
    return routed if has_gpu else max(routed, cutlass_bytes)


def _routed_balanced_bytes(num_batches: int, num_ctas: int) -> int:
    """Workspace bytes of the routed path's balanced plan for any head count (1..128: one or
    two row tiles a request)."""
    return max(_balanced_layout(num_batches, tiles, num_ctas)[3]
               for tiles in range(1, -(-_MAX_HEADS // _ROWS_PER_TILE) + 1))


_DEVICE_PLAN_MODULES: dict = {}


def cutlass_mla_decode(q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c_and_k_pe_cache: torch.Tensor,
                       seq_lens: torch.Tensor, page_table: torch.Tensor, workspace: torch.Tensor,
                       sm_scale: float, num_kv_splits: int = 1) -> torch.Tensor:
    """MLA decode with sgl-kernel's ``cutlass_mla_decode`` contract.

    q_nope [B, H, 512], q_pe [B, H, 64] (fp16/bf16, any strides with a contiguous last dim; no
    concatenation); kv_c_and_k_pe_cache [num_blocks, page_size, 576] (page_size a power of two;
    never copied); seq_lens [B] int32; page_table [B, max_blocks] int32; workspace: a CUDA byte
    buffer of >= cutlass_mla_get_workspace_size(max_seq_len, B, sm_count, num_kv_splits) bytes;
    num_kv_splits: KV splits per request on SM100 (1..256; <= 0 lets the library choose).
    Returns out [B, H, 512] in q's dtype. Rows with seq_len 0 give zeros.

    On SM100 this runs CUTLASS's MLA kernel (H < 128 is padded to its 128-row tile and sliced
    back). On other SM80+ GPUs it runs the sm90 kernel (Hopper, unless MLA_WRAPPER_SM90=0) or
    the sm80 kernel on a balanced plan written on the GPU from seq_lens by a small kernel
    before it (no host sync, CUDA-graph capturable); there num_kv_splits is read only where
    the workspace is smaller than cutlass_mla_get_workspace_size asks (then each request is cut
    in at most num_kv_splits even pieces, fewer if the workspace needs it). The workspace keeps
    the balanced plan it holds with a memo of what it was made from (balanced.cuh: arguments,
    lengths, a checksum of the records): a call whose arguments and lengths match keeps it (a
    step's later layers), anything else plans again. A call with the
    layout of the previous one on its device (the step's other layers: same shapes, strides,
    dtypes, seq_lens / workspace tensors, scale) skips the checks and the plan's set-up. The
    kernels run on q_nope's GPU whatever the current device.
    """
    index = q_nope.get_device() if type(q_nope) is torch.Tensor else -1
    if index >= 0 and index != _current_device():
        with torch.cuda.device(index):   # (the plan and attention kernels launch there)
            return cutlass_mla_decode(q_nope, q_pe, kv_c_and_k_pe_cache, seq_lens, page_table,
                                      workspace, sm_scale, num_kv_splits)
    last = _ROUTED_LAST.get(index)
    if last is not None and last.sig == _routed_sig(q_nope, q_pe, kv_c_and_k_pe_cache, seq_lens,
                                                    page_table, workspace, sm_scale,
                                                    num_kv_splits):
        return last.launch(q_nope, q_pe, kv_c_and_k_pe_cache, page_table)
    page_size = check_decode_args(q_nope, q_pe, kv_c_and_k_pe_cache, seq_lens, page_table)
    check_tensor("workspace", workspace, cuda=True)
    H = q_nope.shape[1]
    if not 1 <= H <= _MAX_HEADS:
        raise ValueError(f"q_nope: num_heads must be in 1..{_MAX_HEADS}, got {H}")
    device = check_same_device(q_nope=q_nope, q_pe=q_pe, kv_c_and_k_pe_cache=kv_c_and_k_pe_cache,
                               seq_lens=seq_lens, page_table=page_table, workspace=workspace)
    if _is_sm100(device.index):
        return cutlass.run(q_nope, q_pe, kv_c_and_k_pe_cache, seq_lens, page_table, workspace,
                           sm_scale, num_kv_splits)
    return _routed_decode(q_nope, q_pe, kv_c_and_k_pe_cache, seq_lens, page_table, workspace,
                          float(sm_scale), int(num_kv_splits), page_size, device)


def check_decode_args(q_nope, q_pe, kv_c_and_k_pe_cache, seq_lens, page_table) -> int:
    """cutlass_mla_decode dtype / shape checks (no device checks: also serve the fake
    implementation in torch_ops). Returns the page size."""
    check_tensor("q_nope", q_nope, dtypes=(torch.bfloat16, torch.float16), ndim=3,
                 last_dim_contiguous=True)
    B, H, d = q_nope.shape
    if d != 512:
        raise ValueError(f"q_nope: head dim must be 512 (kv_lora_rank), got {d}")
    check_tensor("q_pe", q_pe, dtypes=(q_nope.dtype,), shape=(B, H, 64), last_dim_contiguous=True)
    check_tensor("kv_c_and_k_pe_cache", kv_c_and_k_pe_cache, dtypes=(q_nope.dtype,), ndim=3,
                 last_dim_contiguous=True)
    if kv_c_and_k_pe_cache.shape[2] != 576:
        raise ValueError(f"kv_c_and_k_pe_cache: last dim must be 576 (512 latent + 64 rope), "
                         f"got {kv_c_and_k_pe_cache.shape[2]}")
    page_size = int(kv_c_and_k_pe_cache.shape[1])
    if page_size < 1 or page_size & (page_size - 1):
        raise ValueError(f"kv_c_and_k_pe_cache: page size (dim 1) must be a power of two, got {page_size}")
    check_tensor("seq_lens", seq_lens, dtypes=(torch.int32,), shape=(B,))
    check_tensor("page_table", page_table, dtypes=(torch.int32,), ndim=2, last_dim_contiguous=True)
    if page_table.shape[0] != B:
        raise ValueError(f"page_table: expected {B} rows (batch), got {page_table.shape[0]}")
    return page_size


def _routed_family(device):
    """The planned family module the routed path runs on this (non-SM100) device."""
    return backends.routed_family(torch.cuda.get_device_capability(device))


# device index -> the last routed call checked there (a _RoutedCall, with its signature)
_ROUTED_LAST: dict = {}


def _routed_sig(q_nope, q_pe, cache, seq_lens, page_table, workspace, sm_scale, num_kv_splits):
    """The layout of a routed call's arguments (what _routed_decode checked and planned
    for), or None. The q / cache / page-table addresses are not in it (each call passes its
    own); the lengths' and the workspace's are (the plan kernel's arguments)."""
    try:
        return (q_nope.shape, q_nope.stride(), q_nope.dtype, q_pe.shape, q_pe.stride(),
                q_pe.dtype, q_pe.get_device(), cache.shape, cache.stride(), cache.dtype,
                cache.get_device(), seq_lens.data_ptr(), seq_lens.shape, seq_lens.dtype,
                seq_lens.get_device(), page_table.shape, page_table.stride(), page_table.dtype,
                page_table.get_device(), workspace.data_ptr(), workspace.numel(),
                workspace.dtype, workspace.get_device(), sm_scale, num_kv_splits)
    except AttributeError:
        return None


class _PlannedAttention:
    """The attention half of a call planned on the GPU (the routed cutlass_mla_decode, FlashMLA's
    dense call): the MlaPlan and MlaRunArgs (addresses kept), the family's attention export, and
    _pack_args's strides and rope offset for the layout last checked, so that a call packs only
    its tensors' addresses."""

    __slots__ = ("plan", "args", "plan_addr", "args_addr", "attn_mod", "run_export", "run_fn",
                 "strides", "kpe_offset")

    def __init__(self, plan, args, fam, attn_mod):
        self.plan, self.args = plan, args
        self.plan_addr, self.args_addr = ctypes.addressof(plan), ctypes.addressof(args)
        self.attn_mod, self.run_export = attn_mod, fam.RUN_EXPORT
        self.run_fn = getattr(attn_mod, fam.RUN_EXPORT)
        self.strides, self.kpe_offset = None, 0

    def attend(self, q_ptr: int, q_pe_ptr: int, c_ptr: int, out_ptr: int, lse_ptr: int,
               table_ptr: int, stream: int) -> None:
        """Launch attention (and the combine) on stream for these tensors' addresses (the cache's
        rope columns at c_ptr + kpe_offset)."""
        _pack_args(self.args, 0, q_ptr, q_pe_ptr, c_ptr, c_ptr + self.kpe_offset, out_ptr,
                   lse_ptr, table_ptr, *self.strides)
        status = self.run_fn(self.plan_addr, self.args_addr, stream)
        if status:
            raise self.attn_mod.error(self.run_export, status)


class _RoutedCall(_PlannedAttention):
    """A checked routed call's set-up: its plan kernel's export and arguments, and the attention
    half (_PlannedAttention). launch() runs the plan kernel, then attention (and the combine),
    on the device's current stream."""

    __slots__ = ("sig", "plan_mod", "plan_export", "plan_fn", "plan_args", "index", "out_shape",
                 "dtype", "device")

    def __init__(self, sig, plan_mod, plan_export, plan_args, plan, args, fam, attn_mod, index,
                 q_nope, q_pe, cache):
        super().__init__(plan, args, fam, attn_mod)
        self.sig, self.plan_mod, self.plan_export = sig, plan_mod, plan_export
        self.plan_fn, self.plan_args = getattr(plan_mod, plan_export), plan_args
        self.index = index
        B, H, _ = q_nope.shape
        self.out_shape, self.dtype, self.device = (B, H, 512), q_nope.dtype, q_nope.device
        qn, qp, cs = q_nope.stride(), q_pe.stride(), cache.stride()
        # (_pack_args's strides: q_nope, q_pe, ckv, kpe, out (a new [B, H, 512]), lse)
        self.strides = (qn[0], qn[1], qp[0], qp[1], cs[0], cs[1], cs[0], cs[1], H * 512, 512, 0)
        self.kpe_offset = 512 * cache.element_size()

    def launch(self, q_nope, q_pe, cache, page_table) -> torch.Tensor:
        out = torch.empty(self.out_shape, dtype=self.dtype, device=self.device)
        stream = _raw_stream(self.index)
        status = self.plan_fn(*self.plan_args, stream)
        if status:
            raise self.plan_mod.error(self.plan_export, status)
        self.attend(q_nope.data_ptr(), q_pe.data_ptr(), cache.data_ptr(), out.data_ptr(), 0,
                    page_table.data_ptr(), stream)
        return out


def _routed_decode(q_nope, q_pe, cache, seq_lens, page_table, workspace, sm_scale, num_kv_splits,
                   page_size, device):
    B, H, _ = q_nope.shape
    if B == 0:
        return torch.empty(B, H, 512, dtype=q_nope.dtype, device=device)
    sm_count = torch.cuda.get_device_properties(device).multi_processor_count
    ws_bytes = workspace.numel() * workspace.element_size()
    fam = _routed_family(device)
    num_ctas = sm_count * fam.CTAS_PER_SM
    base = workspace.data_ptr()
    if base % 128:
        raise ValueError("workspace: data pointer must be 128-byte aligned (pass a fresh tensor)")
    plan_mod, attn_mod = _device_plan_modules(fam, q_nope.dtype, device)
    layout = _balanced_layout(B, -(-H // _ROWS_PER_TILE), num_ctas) if B > 1 else None
    if B == 1:
        # One request: nothing to balance between requests. The uniform plan cuts it in even
        # pieces of whole kv tiles over the CTAs, the balanced plan's pieces here, and its
        # kernel takes a third of the time (2.7 against 8.1 us a CUDA-graph replay on an H200,
        # session 72; the routed call plans on every call). On sm90, pieces of two tiles from
        # L=1025 on, as its CPU planner's cost model (backends/sm90.py planner_cost) cuts B=1.
        plan, plan_args = _uniform_plan_args(fam, base, ws_bytes, seq_lens, page_table,
                                             page_size, B, H, -1, num_ctas, fam.KV_TILE,
                                             2 if fam is sm90 else 1)
        export = kernels.DEVICE_PLAN
    elif layout[3] <= ws_bytes:
        plan, plan_args = _balanced_plan_args(fam, base, layout, seq_lens, page_table.stride(0),
                                              B, 1, H, False, num_ctas, memo=True)
        export = kernels.DEVICE_PLAN_BALANCED
    else:
        plan, plan_args = _uniform_plan_args(fam, base, ws_bytes, seq_lens, page_table,
                                             page_size, B, H, num_kv_splits, num_ctas)
        export = kernels.DEVICE_PLAN
    index = device_index(device)
    call = _RoutedCall(_routed_sig(q_nope, q_pe, cache, seq_lens, page_table, workspace,
                                   sm_scale, num_kv_splits),
                       plan_mod, export, plan_args, plan,
                       _run_args(q_nope, cache, page_size, sm_scale), fam, attn_mod, index,
                       q_nope, q_pe, cache)
    _ROUTED_LAST[index] = call
    return call.launch(q_nope, q_pe, cache, page_table)


def _uniform_plan_args(fam, base, ws_bytes, seq_lens, page_table, page_size, B, H,
                       num_kv_splits, num_ctas, min_split=_MIN_SPLIT_TOKENS,
                       min_piece_tiles=1):
    """(MlaPlan, its plan kernel's arguments but the stream) of the routed path's uniform plan
    (a batch of one request; a workspace too small for the balanced plan): every request cut in
    the same number of even pieces (common/device_plan.cuh), num_kv_splits of them (<= 0: the
    library's choice, one per SM's row tile, at most one per min_split tokens of the page
    table's width), halved until the plan fits the workspace; pieces of at least
    min(ceil(kv_len / 16), min_piece_tiles kv tiles) tokens (the kernel skips the splits left
    empty)."""
    max_seq_len = page_table.shape[1] * page_size
    splits = _routed_num_splits(max_seq_len, B, num_ctas // fam.CTAS_PER_SM, num_kv_splits, H,
                                min_split)
    while True:   # fewer splits when the caller's workspace was sized for fewer
        offsets, p_o, p_lse, total = _routed_layout(B, H, splits, num_ctas)
        if total <= ws_bytes or splits == 1:
            break
        splits = max(1, splits // 2)
    if total > ws_bytes:
        raise ValueError(f"workspace: needs {total} bytes for batch {B} x {H} heads, got {ws_bytes} "
                         "(size it with cutlass_mla_get_workspace_size)")
    tiles = -(-H // _ROWS_PER_TILE)
    plan = _plan_struct(fam, base, offsets, p_o, p_lse, num_ctas, B * tiles)
    return plan, (seq_lens.data_ptr(), plan.cta_work_indptr, plan.work_info, plan.request_info,
                  plan.merge_info, plan.counts, B, tiles, splits, num_ctas, fam.KV_TILE,
                  min_piece_tiles, page_table.stride(0), _plan_pdl())


def _plan_pdl() -> int:
    """1: the GPU plan kernels launch with programmatic stream serialization (they start while
    the stream's previous kernel ends, and wait for it before their first read), as the sm90
    attention kernel does after them (MLA_WRAPPER_PDL=0 turns both off)."""
    return 1 if backends.pdl_enabled() else 0


def _device_plan_modules(fam, dtype, device):
    """(device-plan library, the family's attention library for dtype) on device, cached."""
    key = (fam.__name__, dtype, device)
    mods = _DEVICE_PLAN_MODULES.get(key)
    if mods is None:
        arch = device_arch(device)
        mods = _DEVICE_PLAN_MODULES[key] = (load(kernels.device_plan_spec(arch)),
                                            load(fam.spec(dtype_name(dtype), arch, device=device)))
    return mods


def _plan_struct(fam, base: int, offsets: dict, p_o: int, p_lse: int, num_ctas: int,
                 max_merge_items: int) -> ws_mod.MlaPlanStruct:
    """The MlaPlan of a plan written on the GPU at workspace address base (int32 element
    offsets of its arrays; partial_o / partial_lse byte offsets)."""
    i32 = lambda name: base + 4 * offsets[name]  # noqa: E731
    plan = ws_mod.MlaPlanStruct()
    plan.cta_work_indptr, plan.work_info = i32("cta_work_indptr"), i32("work_info")
    plan.request_info, plan.merge_info, plan.counts = i32("request_info"), i32("merge_info"), i32("counts")
    plan.partial_o, plan.partial_lse = base + p_o, base + p_lse
    plan.num_ctas, plan.rows_per_tile, plan.kv_tile = num_ctas, fam.ROWS_PER_TILE, fam.KV_TILE
    plan.max_merge_items = max(max_merge_items, 1)
    return plan


def _run_args(q_nope, cache, page_size: int, sm_scale: float) -> ws_mod.MlaRunArgsStruct:
    """MlaRunArgs of a cutlass_mla_decode call but its addresses and strides (packed per call:
    _RoutedCall.launch): q_nope [B, H, 512], the cache [blocks, page_size, 576] (latent then
    rope columns), the page table's rows from kv_indices. The cache's and q's sizes bound sm90's
    TMA maps (its tiles and Q load by TMA where they can); enable_pdl 2: the plan kernel right
    before wrote the plan, so attention waits for it before reading the plan."""
    args = ws_mod.MlaRunArgsStruct()
    args.num_heads, args.page_size, args.sm_scale = q_nope.shape[1], page_size, sm_scale
    args.num_pages, args.num_q_tokens = cache.shape[0], q_nope.shape[0]
    # sm90: launched programmatically after the plan kernel, waiting for it before the plan
    args.enable_pdl = 2 if backends.pdl_enabled() else 0
    return args


# ------------------------------------------------------------------------------------------
# FlashMLA's dense decode (flash_mla_with_kvcache without indices; sparse.py dispatches here):
# a balanced plan written on the GPU (device_plan/balanced.cuh) from the device lengths, once
# per scheduling-metadata object, then the planned family's kernels.
# ------------------------------------------------------------------------------------------

# balanced.cuh kMemoHeader: the memo's words before its per-request lengths
_BALANCED_MEMO_HEADER = 20


def _balanced_layout(batch: int, tiles: int, num_ctas: int):
    """(int32 element offsets, partial_o byte offset, partial_lse byte offset, total bytes) of a
    balanced plan (device_plan/balanced.cuh's capacities) in its workspace."""
    group = tiles if tiles <= num_ctas else 1
    groups = num_ctas // group
    items = max(tiles * (batch + groups), num_ctas)
    # a cut request's pieces: at most groups - 1 boundaries cut at most groups - 1 requests
    return _gpu_plan_layout((("counts", ws_mod.NUM_COUNTS), ("cta_work_indptr", num_ctas + 1),
                             ("request_info", ws_mod.REQUEST_FIELDS * batch),
                             ("merge_info", ws_mod.MERGE_FIELDS * batch * tiles),
                             ("work_info", ws_mod.WORK_FIELDS * items),
                             ("scratch", 2 * (batch + 1)),
                             ("memo", _BALANCED_MEMO_HEADER + batch)),
                            min(items, 2 * groups * tiles))


class FlashMLASchedMeta:
    """Stands in for FlashMLA's scheduling metadata (get_mla_metadata, one per decode step).
    Sparse decode reads nothing from it (flash_mla_with_kvcache keeps one plan per call shape);
    dense decode keeps in it the balanced plan its first call writes on the GPU, which the
    step's later calls (the other layers) reuse: make a new one each step, as with FlashMLA."""

    def __init__(self):
        self._dense: Optional[DenseSchedule] = None
        self._replaced: list = []   # earlier plans of this object (graphs captured with them)

    def __repr__(self) -> str:
        return "FlashMLASchedMeta()"


class DenseSchedule(_PlannedAttention):
    """A balanced plan on the GPU for one (batch, lengths tensor, page table, shape): its
    workspace (kept alive here: CUDA graphs captured with it read it), the attention half
    (_PlannedAttention), and the layout of the last call it checked (sig: the step's later calls
    with the same layout skip the checks and reuse its strides)."""

    __slots__ = ("key", "workspace", "sig", "device_index", "table_ptr", "pdl")

    def __init__(self, key, workspace, plan, fam, attn_mod, device_index: int, table_ptr: int):
        super().__init__(plan, ws_mod.MlaRunArgsStruct(), fam, attn_mod)
        self.key, self.workspace, self.sig = key, workspace, None
        self.device_index, self.table_ptr = device_index, table_ptr
        self.pdl = 1 if backends.pdl_enabled() else 0


def _dense_sig(q, k_cache, block_table, cache_seqlens, out, softmax_scale, causal):
    """The layout of a dense call's arguments (what flash_mla_dense checked), or None."""
    try:
        return (q.shape, q.stride(), q.dtype, q.get_device(), k_cache.shape, k_cache.stride(),
                k_cache.dtype, k_cache.get_device(), block_table.data_ptr(), block_table.shape,
                block_table.stride(), block_table.dtype, cache_seqlens.data_ptr(),
                cache_seqlens.shape, cache_seqlens.dtype,
                None if out is None else (out.shape, out.stride(), out.dtype, out.get_device()),
                softmax_scale, bool(causal))
    except AttributeError:
        return None


def flash_mla_dense(q: torch.Tensor, k_cache: torch.Tensor, block_table: torch.Tensor,
                    cache_seqlens: torch.Tensor, sched, softmax_scale: Optional[float],
                    causal: bool, out: Optional[torch.Tensor]):
    """FlashMLA's dense decode (see sparse.flash_mla_with_kvcache): (out, lse)."""
    if isinstance(q, torch.Tensor) and q.is_cuda and q.get_device() != _current_device():
        with torch.cuda.device(q.device):   # (the plan and attention kernels launch there)
            return flash_mla_dense(q, k_cache, block_table, cache_seqlens, sched, softmax_scale,
                                   causal, out)
    meta = sched if type(sched) is FlashMLASchedMeta else None
    schedule = meta._dense if meta is not None else None
    if schedule is not None and schedule.sig is not None and schedule.sig == _dense_sig(
            q, k_cache, block_table, cache_seqlens, out, softmax_scale, causal):
        return _dense_launch(schedule, q, k_cache, out, fresh=False)   # the step's later calls
    check_tensor("q", q, dtypes=(torch.bfloat16, torch.float16), ndim=4, last_dim_contiguous=True)
    b, s_q, h_q, d = q.shape
    if d != ws_mod.HEAD_DIM_CKV + 64:
        raise ValueError(f"q: expected [b, s_q, h_q, 576], got {list(q.shape)}")
    if not 1 <= h_q <= _MAX_HEADS:
        raise ValueError(f"q: h_q must be in 1..{_MAX_HEADS}, got {h_q}")
    check_tensor("k_cache", k_cache, dtypes=(q.dtype,), ndim=4, last_dim_contiguous=True)
    if k_cache.shape[2] != 1 or k_cache.shape[3] != d:
        raise ValueError(f"k_cache: expected [num_blocks, page_block_size, 1, 576], got "
                         f"{list(k_cache.shape)}")
    page_size = int(k_cache.shape[1])
    if page_size < 1:
        raise ValueError("k_cache: page_block_size (dim 1) must be >= 1")
    if block_table is None or cache_seqlens is None:
        raise ValueError(f"{'block_table' if block_table is None else 'cache_seqlens'}: required "
                         "for dense decode (indices=None)")
    check_tensor("block_table", block_table, dtypes=(torch.int32,), ndim=2,
                 last_dim_contiguous=True)
    if block_table.shape[0] != b:
        raise ValueError(f"block_table: expected {b} rows (batch), got {list(block_table.shape)}")
    check_tensor("cache_seqlens", cache_seqlens, dtypes=(torch.int32,), shape=(b,),
                 last_dim_contiguous=True)
    device = check_same_device(q=q, k_cache=k_cache, block_table=block_table,
                               cache_seqlens=cache_seqlens)
    if device.type != "cuda":
        raise ValueError(f"q: expected a CUDA tensor, got one on {device}")
    if out is not None:
        check_tensor("out", out, dtypes=(q.dtype,), shape=(b, s_q, h_q, 512), device=device,
                     last_dim_contiguous=True)
    T = b * s_q
    if T == 0:
        out = torch.empty((b, s_q, h_q, 512), dtype=q.dtype, device=device) if out is None else out
        return out, torch.empty((b, h_q, s_q), dtype=torch.float32, device=device)
    _rows_view("q", q, (T, h_q, d))                 # (b and s_q must merge without a copy)
    if out is not None:
        _rows_view("out", out, (T, h_q, 512))
    causal_rows = bool(causal) and s_q > 1
    sm_scale = float(softmax_scale) if softmax_scale is not None else d ** -0.5
    fam = _routed_family(device)
    key = (device, fam.__name__, q.dtype, b, s_q, h_q, page_size, causal_rows,
           cache_seqlens.data_ptr(), block_table.data_ptr(), block_table.stride(0))
    fresh = schedule is None or schedule.key != key
    if fresh:
        plan_mod, attn_mod = _device_plan_modules(fam, q.dtype, device)
        schedule = _balanced_plan(plan_mod, fam, attn_mod, key, cache_seqlens, block_table, b,
                                  s_q, h_q, causal_rows, device)
        if meta is not None:
            if meta._dense is not None:   # (a CUDA graph captured with it may still read it)
                meta._replaced.append(meta._dense)
            meta._dense = schedule
    a = schedule.args
    a.num_heads, a.page_size, a.sm_scale = h_q, page_size, sm_scale
    a.causal, a.lse_base_e, a.num_q_tokens, a.lse_seq_tokens = int(causal_rows), 2, T, s_q
    a.num_pages = k_cache.shape[0]
    # q / out rows (token b * s_q + i, head h): token stride stride(1) (b and s_q merge),
    # q_pe at column 512; the cache's rope columns at 512, page / token strides of dims 0 / 1;
    # out made contiguous where None; lse [b, h_q, s_q] written in place by the kernels
    # (args.lse_seq_tokens = s_q). The sig below holds every shape and stride read here.
    qs, cs = q.stride(), k_cache.stride()
    os_ = out.stride() if out is not None else (s_q * h_q * 512, h_q * 512, 512, 1)
    schedule.strides = (qs[1], qs[2], qs[1], qs[2], cs[0], cs[1], cs[0], cs[1], os_[1], os_[2],
                        h_q * s_q)
    schedule.kpe_offset = 512 * q.element_size()
    schedule.sig = _dense_sig(q, k_cache, block_table, cache_seqlens, out, softmax_scale, causal)
    return _dense_launch(schedule, q, k_cache, out, fresh)


def _dense_launch(schedule: DenseSchedule, q, k_cache, out, fresh: bool):
    """Launch a checked dense call on its schedule (its strides set for this call's layout):
    out [b, s_q, h_q, 512] (made if None) and lse [b, h_q, s_q] (natural log, +inf for a row
    that sees no key: lse_base_e = 2)."""
    b, s_q, h_q, _ = q.shape
    if out is None:
        out = torch.empty((b, s_q, h_q, 512), dtype=q.dtype, device=q.device)
    lse = torch.empty((b, h_q, s_q), dtype=torch.float32, device=out.device)
    schedule.args.enable_pdl = 2 * schedule.pdl if fresh else schedule.pdl
    q_ptr = q.data_ptr()
    schedule.attend(q_ptr, q_ptr + schedule.kpe_offset, k_cache.data_ptr(), out.data_ptr(),
                    lse.data_ptr(), schedule.table_ptr, _raw_stream(schedule.device_index))
    return out, lse


def _balanced_plan(plan_mod, fam, attn_mod, key, cache_seqlens, block_table, b, s_q, h_q, causal,
                   device) -> DenseSchedule:
    """Allocate a workspace and write a balanced plan into it on the current stream (a
    kernel: no host sync, capturable)."""
    index = device_index(device)
    num_ctas = torch.cuda.get_device_properties(device).multi_processor_count * fam.CTAS_PER_SM
    layout = _balanced_layout(b, -(-s_q * h_q // _ROWS_PER_TILE), num_ctas)
    workspace = torch.empty(layout[3], dtype=torch.uint8, device=device)
    plan, plan_args = _balanced_plan_args(fam, workspace.data_ptr(), layout, cache_seqlens,
                                          block_table.stride(0), b, s_q, h_q, causal, num_ctas)
    status = plan_mod.mlaw_device_plan_balanced(*plan_args, _raw_stream(index))
    if status:
        raise plan_mod.error(kernels.DEVICE_PLAN_BALANCED, status)
    return DenseSchedule(key, workspace, plan, fam, attn_mod, index, block_table.data_ptr())


def _balanced_plan_args(fam, base: int, layout, seq_lens, page_table_stride: int, b: int,
                        s_q: int, h_q: int, causal: bool, num_ctas: int, memo: bool = False):
    """(MlaPlan, the arguments of mlaw_device_plan_balanced but the stream) of a balanced plan
    (device_plan/balanced.cuh, one small kernel) for b requests of s_q query tokens and h_q
    heads, lengths seq_lens [b] int32 on the device, in the workspace at address base (layout:
    _balanced_layout's). memo: the kernel keeps the plan already in the workspace where it was
    made from the same arguments and lengths (balanced.cuh's memo; a plan written per call)."""
    offsets, p_o, p_lse, _ = layout
    rows = s_q * h_q
    tiles = -(-rows // _ROWS_PER_TILE)
    plan = _plan_struct(fam, base, offsets, p_o, p_lse, num_ctas, b * tiles)
    # a piece's fixed cost in kv tiles: one for its start, one per 32 rows of its tile (its q
    # load and output), as the CPU planner's cost model (planner.py CostModel)
    fixed = 1 + -(-2 * min(rows, _ROWS_PER_TILE) // fam.KV_TILE)
    return plan, (seq_lens.data_ptr(), plan.cta_work_indptr, plan.work_info, plan.request_info,
                  plan.merge_info, plan.counts, base + 4 * offsets["scratch"],
                  base + 4 * offsets["memo"] if memo else 0, b, s_q, h_q,
                  _ROWS_PER_TILE, fam.KV_TILE, num_ctas, 1 if causal else 0, fixed,
                  1 if fam is sm90 else 0, page_table_stride, _plan_pdl())


def _rows_view(name: str, t: torch.Tensor, shape):
    """t with its first two dims as one (a view: no hidden copy), or a ValueError."""
    try:
        return t.view(shape)
    except RuntimeError:
        raise ValueError(f"{name}: its first two dims must merge into one without a copy "
                         f"(strides {tuple(t.stride())} for shape {list(t.shape)}); call "
                         f".contiguous()") from None
