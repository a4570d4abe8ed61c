"""Sparse (top-k) MLA, DeepSeek V3.2 style (DSA): every query token attends to its own list of
``topk`` cache slots, chosen per layer by the indexer.

* ``flash_mla_sparse_fwd(q, kv, indices, sm_scale, d_v=512, attn_sink=None, topk_length=None)``
  -> ``(out, max_logits, lse)``: FlashMLA's sparse prefill contract (MQA mode).
* ``BatchSparseMLAWrapper``: plan() once per step on the host (token counts, topk),
  run(q_nope, q_pe, ckv_cache, kpe_cache, indices, ...) once per layer; split-KV across the
  top-k list when the tokens do not fill the GPU; CUDA-graph mode.
* ``flash_mla_with_kvcache`` / ``get_mla_metadata``: FlashMLA's decode call; sparse with
  ``indices`` (here), dense without them (ops.flash_mla_dense: a plan written on the GPU).
* ``cp_gather_cache`` / ``gather_and_maybe_dequant_cache``: vLLM's paged -> contiguous copies,
  re-exported from ``mla_wrapper.cache_ops`` (with ``cp_gather_and_upconvert_fp8_kv_cache``).

Slot ids: the latent cache viewed flat, slot = page id * page_size + offset; -1 (any id < 0
or >= the number of slots) is skipped, as are ids at positions >= topk_length[token]. A
duplicated id counts once per occurrence (gather-then-attend).

LSE convention of both attention entry points (FlashMLA's): natural log; a row with no valid
slot gets out = 0, lse = +inf and max_logits = -inf. The dense BatchMLAPagedAttentionWrapper
instead writes lse = -inf for an empty row (and base 2 by default); vLLM's merge kernels
(merge_state_v2, merge_attn_states) treat both infinities as an empty state.

Kernel: the planned attention kernel the dense wrapper would pick (sm90 on Hopper, else sm80)
in its gather mode (include/mla_wrapper/sparse/); the plan is the dense planner's, with every
query token one request of qo_len 1, kv_len topk, page table = its row of slot ids and
page_size 1 (include/mla_wrapper/sparse/sparse.h). Two fp8 caches run on sm90 only: an e4m3
cache with per-part scales (plan kv_data_type=torch.float8_e4m3fn, run ckv_scale / kpe_scale),
and FlashMLA's 656-byte fp8 rows with their own scales (plan kv_data_type="fp8_ds_mla", run
with the rows as ckv_cache and kpe_cache=None), the cache vLLM and SGLang keep for DeepSeek
V3.2 (its format: reference.ds_mla_pack).
"""
from __future__ import annotations

import ctypes
import math
from typing import Optional

import numpy as np
import torch

from . import backends, sparse_specs
from ._validate import check_tensor, device_index
from .backends import sm80
from .backends.planned import PlannedKernel, _pack_args, apply_kv_scales
from .cache_ops import cp_gather_cache, gather_and_maybe_dequant_cache  # noqa: F401 (re-export)
from .ops import FlashMLASchedMeta, _rows_view, flash_mla_dense
from .planner import CostModel, Planner
from .wrapper import _current_device_getter, _raw_stream_getter

HEAD_DIM_CKV = sm80.HEAD_DIM_CKV
HEAD_DIM_KPE = sm80.HEAD_DIM_KPE
HEAD_DIM_QK = HEAD_DIM_CKV + HEAD_DIM_KPE
MAX_HEADS = sm80.MAX_HEADS
MAX_TOPK = sparse_specs.MAX_TOPK
_ATTN_DTYPES = (torch.bfloat16, torch.float16)
DS_MLA = sparse_specs.DS_MLA
_NO_SPLIT = CostModel(allow_split=False)


class _NoIndices:
    """Stands in for the dense plan's kv_indices: the sparse indices come with run()."""

    @staticmethod
    def data_ptr() -> int:
        return 0


def _flat_slots(name: str, t: torch.Tensor, dim: int):
    """(number of slots, elements between slots) of a cache viewed flat: [slots, dim],
    [slots, 1, dim] or [pages, page_size, dim] whose pages are page_size slots apart."""
    if t.dim() == 2:
        return t.shape[0], t.stride(0)
    if t.dim() == 3 and t.shape[-1] == dim:
        if t.shape[1] == 1:
            return t.shape[0], t.stride(0)
        if t.shape[0] == 1 or t.stride(0) == t.shape[1] * t.stride(1):
            return t.shape[0] * t.shape[1], t.stride(1)
        raise ValueError(f"{name}: pages must be page_size slots apart to index slots flat "
                         f"(stride(0) == shape[1] * stride(1)), got shape {list(t.shape)} "
                         f"strides {t.stride()}")
    raise ValueError(f"{name}: expected [num_slots, {dim}] or [num_pages, page_size, {dim}], "
                     f"got shape {list(t.shape)}")


GATHER_L2_PREFETCH_ENV = "MLA_WRAPPER_GATHER_L2_PREFETCH"


def gather_l2_prefetch(device_name: str, fp8: bool) -> bool:
    """Whether sm90's gather mode has its consumers prefetch the rows of tile i + 2 into L2
    (MlaSparseArgs.l2_prefetch_rows). On for an fp8 cache: its producer waits for its copies
    before it widens them. On for a 16-bit cache except on an H200, where the copies keep up from
    DRAM and the prefetch lengthened the scorer's chain (~3900 clocks a tile against ~3560;
    sparse decode H=128 1.02-1.07x and prefill H=128 1.10-1.14x faster without it, H=16 1.03-1.07x
    at 32 tokens and 0.98-0.99x at 128, session 47). On an H100 it ran 1.06-1.2x faster with it
    (session 12). The name test also matches a GH200. MLA_WRAPPER_GATHER_L2_PREFETCH=0 / 1
    overrides both."""
    return backends._env_switch(GATHER_L2_PREFETCH_ENV, fp8 or "H200" not in device_name)


def plan_inputs(num_tokens: int, topk: int):
    """The dense planner's (qo_indptr, kv_indptr, kv_len_arr) for a sparse step: every query
    token is a request of one token whose "pages" (page_size 1) are its row of topk slot ids."""
    tok = np.arange(num_tokens + 1, dtype=np.int32)
    return tok, tok * np.int32(topk), np.full(num_tokens, topk, dtype=np.int32)


class _SparseKernel(PlannedKernel):
    """The planned family's gather mode (sm90 or sm80): one request per query token (see the
    module doc)."""

    GRAPH_TOKENS_PER_REQUEST = 1

    def __init__(self, wrapper):
        # The attention kernel family in gather mode: the planned family auto would pick for
        # this GPU (sm90 on Hopper unless MLA_WRAPPER_SM90=0, see backends.sm90_disabled; else
        # sm80). Both take the same plan (64-row tiles, 64-token splits, one CTA per SM).
        fam = backends.routed_family(wrapper._capability)
        super().__init__("sparse", wrapper, fam)
        self.kernel = fam.__name__.rsplit(".", 1)[-1]
        self.sparse_args = sparse_specs.MlaSparseArgsStruct()
        self.sparse_ptr = ctypes.addressof(self.sparse_args)
        self.args.page_size = 1
        self.args.causal = 0
        # natural log, +inf for a row without a valid slot (FlashMLA's convention, written by
        # the kernels: q_rows.cuh lse_out_base)
        self.args.lse_base_e = self.lse_base_e = 2
        self._index_arrays = (-1, None)

    def plan_tokens(self, num_tokens: int, topk: int, num_heads: int, sm_scale: float, dtype,
                    kv_dtype, lens: Optional[np.ndarray], allow_split: bool) -> None:
        self._ensure_layout(num_tokens, num_tokens, num_heads)
        if self._index_arrays[0] != (num_tokens, topk):
            self._index_arrays = ((num_tokens, topk),) + plan_inputs(num_tokens, topk)
        _, qo_h, kv_h, full = self._index_arrays
        self.plan_and_upload(
            (num_heads, allow_split),
            lambda: Planner(self.layout, num_heads, 1, False, None if allow_split else _NO_SPLIT),
            qo_h, kv_h, full if lens is None else lens)
        self.args.num_heads = num_heads
        self.args.sm_scale = sm_scale
        w = self.wrapper
        fp8 = kv_dtype is torch.float8_e4m3fn or kv_dtype == DS_MLA
        self.sparse_args.l2_prefetch_rows = int(gather_l2_prefetch(w._device_name, fp8))
        self.use_module((dtype, str(kv_dtype)) if fp8 else dtype, lambda: sparse_specs.spec(
            sm80.dtype_name(dtype), self.arch, device=w.device, kernel=self.kernel,
            kv_dtype=kv_dtype if fp8 else None), sparse_specs.RUN)

    def launch(self, q_nope, q_pe, ckv_ptr, ckv_slot_stride, kpe_ptr, kpe_slot_stride, indices,
               out, lse, topk_length, max_logits, num_slots, stream, lse_seq_tokens=1) -> None:
        """lse: [T, H], or with lse_seq_tokens n > 1 FlashMLA's [T / n, H, n] (the kernels
        write either: plan.h MlaRunArgs lse_seq_tokens)."""
        qn, qp, o = q_nope.stride(), q_pe.stride(), out.stride()
        lse_ptr, lse_stride = (0, 0) if lse is None else (lse.data_ptr(), lse.stride(0))
        self.args.lse_seq_tokens = lse_seq_tokens
        _pack_args(self.args, 0, q_nope.data_ptr(), q_pe.data_ptr(), ckv_ptr,
                   kpe_ptr, out.data_ptr(), lse_ptr, indices.data_ptr(), qn[0], qn[1],
                   qp[0], qp[1], ckv_slot_stride, 0, kpe_slot_stride, 0, o[0], o[1], lse_stride)
        if q_nope.shape[0] != self.num_q_tokens:  # bounds of q for sm90's Q tensor maps
            self.num_q_tokens = self.args.num_q_tokens = q_nope.shape[0]
        sa = self.sparse_args
        sa.topk_length = 0 if topk_length is None else topk_length.data_ptr()
        sa.max_logits = 0 if max_logits is None else max_logits.data_ptr()
        sa.max_logits_stride_token = 0 if max_logits is None else max_logits.stride(0)
        sa.num_slots = num_slots
        status = self.fn(self.plan_ptr, self.args_ptr, self.sparse_ptr, stream)
        if status:
            raise self.module.error(sparse_specs.RUN, status)


class BatchSparseMLAWrapper:
    """Sparse (top-k) MLA over a paged latent cache for the serving loop.

    One step::

        wrapper.plan(num_tokens, topk, num_heads, sm_scale, torch.bfloat16)   # host, per step
        for layer in layers:                                                   # per layer
            out = wrapper.run(q_nope, q_pe, cache[..., :512], cache[..., 512:], indices[layer])

    Args:
        float_workspace_buffer: CUDA tensor of scratch memory for split-KV partials (about
            2 * SMs * 128 KiB; plan() raises with the size needed when it is too small).
        use_cuda_graph: fixed addresses and grid so run() can be captured; needs
            max_num_tokens (the capacity). Replays read the q / cache / indices / topk_length /
            out tensors captured: write each layer's indices into the captured buffer.
        max_num_tokens: query-token capacity of a CUDA-graph wrapper.
    """

    def __init__(self, float_workspace_buffer: torch.Tensor, use_cuda_graph: bool = False,
                 max_num_tokens: Optional[int] = None):
        check_tensor("float_workspace_buffer", float_workspace_buffer, cuda=True)
        if not float_workspace_buffer.is_contiguous():
            raise ValueError("float_workspace_buffer: must be contiguous")
        if use_cuda_graph and (not isinstance(max_num_tokens, int) or max_num_tokens < 1):
            raise ValueError(f"max_num_tokens: use_cuda_graph=True needs the token capacity (an "
                             f"int >= 1), got {max_num_tokens!r}")
        self.device = float_workspace_buffer.device
        self._device_index = device_index(self.device)
        self._float_ws = float_workspace_buffer
        self._float_ws_bytes = float_workspace_buffer.numel() * float_workspace_buffer.element_size()
        self._graph_capacity = int(max_num_tokens) if use_cuda_graph else None
        props = torch.cuda.get_device_properties(self.device)
        self._sm_count = props.multi_processor_count
        self._capability = (props.major, props.minor)
        self._device_name = props.name
        self._stream = _raw_stream_getter()
        self._current_device = _current_device_getter()
        self._impl: Optional[_SparseKernel] = None
        self._planned = None
        self._graph_config = None
        self._checked_key = None    # run()'s argument layout validated last, and its result
        self._checked_slots = None

    def plan(self, qo_indptr, topk: int, num_heads: int, sm_scale: float,
             q_data_type: torch.dtype = torch.bfloat16, kv_data_type: Optional[torch.dtype] = None,
             topk_length=None, allow_split: bool = True) -> None:
        """Plan one step (host work, no device sync).

        qo_indptr: the number of query tokens (int), or a host int32 [B+1] indptr (only its
            total counts: every token has its own index list). topk: index-list length
            (1..32768). num_heads: 1..128. sm_scale: softmax scale. Data types: bf16 / fp16
            queries over a cache of the same dtype, or (sm90, Hopper) kv_data_type
            torch.float8_e4m3fn: an e4m3 cache whose scales run() takes, or "fp8_ds_mla":
            FlashMLA's fp8 rows (656 bytes a slot, scales inside).
        topk_length: optional host [num_tokens] upper bounds of the lengths run() will get,
            for load balance: positions at or past them are never attended (the run()'s
            topk_length tensor masks within them). allow_split: False never splits a token's
            list (one CTA pass per 64 heads of a token).
        """
        if self._current_device() != self._device_index:
            with torch.cuda.device(self._device_index):
                return self.plan(qo_indptr, topk, num_heads, sm_scale, q_data_type,
                                 kv_data_type, topk_length, allow_split)
        num_tokens = _num_tokens(qo_indptr)
        kv_data_type = q_data_type if kv_data_type is None else kv_data_type
        if q_data_type not in _ATTN_DTYPES or not (kv_data_type in (q_data_type,
                                                                    torch.float8_e4m3fn)
                                                   or kv_data_type == DS_MLA):
            raise ValueError(f"q_data_type / kv_data_type: expected both torch.bfloat16 or both "
                             f"torch.float16, or a bf16 / fp16 query over a torch.float8_e4m3fn "
                             f"cache or {DS_MLA!r} (FlashMLA's fp8 rows), got {q_data_type} / "
                             f"{kv_data_type}")
        _check_int("num_heads", num_heads, 1, MAX_HEADS)
        _check_int("topk", topk, 1, MAX_TOPK)
        if not (isinstance(sm_scale, (int, float)) and sm_scale > 0 and math.isfinite(sm_scale)):
            raise ValueError(f"sm_scale: expected a positive float, got {sm_scale!r}")
        if num_tokens * topk >= 2 ** 31:
            raise ValueError(f"num_tokens * topk = {num_tokens * topk} index entries overflow "
                             "int32 offsets; plan fewer tokens per call")
        cap = self._graph_capacity
        if cap is not None:
            if num_tokens > cap:
                raise ValueError(f"num_tokens {num_tokens} exceeds the CUDA-graph capacity "
                                 f"max_num_tokens={cap} set at construction")
            config = (topk, num_heads, float(sm_scale), q_data_type, kv_data_type)
            if self._graph_config is None:
                self._graph_config = config
            elif config != self._graph_config:
                raise ValueError(f"use_cuda_graph=True: (topk, num_heads, sm_scale, q / kv dtype) "
                                 f"changed from {self._graph_config} to {config}; they are fixed "
                                 "for a CUDA-graph wrapper")
        lens = None
        if topk_length is not None:
            lens = np.clip(_host_lens(topk_length, num_tokens), 0, topk).astype(np.int32)
        if self._impl is None:
            self._impl = _SparseKernel(self)
        if kv_data_type is torch.float8_e4m3fn and self._impl.kernel != "sm90":
            raise ValueError(f"kv_data_type: an fp8 (e4m3) cache is read by the sm90 kernel "
                             f"(Hopper) only; this GPU runs {self._impl.kernel} (plan with a "
                             f"bf16 / fp16 cache, or dequantize it with "
                             f"mla_wrapper.gather_and_maybe_dequant_cache)")
        if kv_data_type == DS_MLA and self._impl.kernel != "sm90":
            raise ValueError(f"kv_data_type: FlashMLA's fp8 rows ({DS_MLA!r}) are read by the "
                             f"sm90 kernel (Hopper) only; this GPU runs {self._impl.kernel} "
                             f"(convert them to bf16 with "
                             f"mla_wrapper.cp_gather_and_upconvert_fp8_kv_cache)")
        self._impl.plan_tokens(num_tokens, topk, num_heads, float(sm_scale), q_data_type,
                               kv_data_type, lens, bool(allow_split))
        self._planned = (num_tokens, topk, num_heads, q_data_type, kv_data_type)

    def run(self, q_nope: torch.Tensor, q_pe: torch.Tensor, ckv_cache: torch.Tensor,
            kpe_cache: Optional[torch.Tensor], indices: torch.Tensor,
            topk_length: Optional[torch.Tensor] = None, out: Optional[torch.Tensor] = None,
            lse: Optional[torch.Tensor] = None, return_lse: bool = False, *,
            ckv_scale: Optional[float] = None, kpe_scale: Optional[float] = None):
        """Attention of one layer. q_nope [T, H, 512], q_pe [T, H, 64]; ckv_cache / kpe_cache:
        [num_pages, page_size, 512 / 64] (views of one 576-wide cache are fine) or flat
        [num_slots, ...]; indices [T, topk] or [T, 1, topk] int32 slot ids (rows contiguous);
        topk_length [T] int32 or None. Returns out [T, H, 512] (and lse [T, H] float32,
        natural log, +inf for a row with no valid slot, when return_lse or lse is given).

        An fp8 cache (planned with kv_data_type=torch.float8_e4m3fn; sm90): float8_e4m3fn
        caches whose slots are 16-byte aligned (slot strides multiples of 16 elements);
        ckv_scale / kpe_scale (Python floats, default 1.0): real value = stored value x scale,
        as the dense wrapper's run().

        FlashMLA's fp8 rows (planned with kv_data_type="fp8_ds_mla"; sm90): ckv_cache uint8
        (or float8_e4m3fn) [num_pages, page_size, 656], FlashMLA's [num_pages, page_size, 1,
        656] or flat [num_slots, 656], 16-byte aligned slots; kpe_cache None (the rows hold the
        rope values); no ckv_scale / kpe_scale (the rows hold their scales). The kernel widens
        each value times its scale, and the rope values, to f16 in shared memory: values past
        f16's range (65504) do not fit."""
        return self._run(q_nope, q_pe, ckv_cache, kpe_cache, indices, topk_length, out, lse,
                         return_lse, None, ckv_scale, kpe_scale)

    def _run(self, q_nope, q_pe, ckv_cache, kpe_cache, indices, topk_length, out, lse,
             return_lse, max_logits, ckv_scale=None, kpe_scale=None, lse_seq_tokens=1):
        """run() with flash_mla_sparse_fwd's max_logits [T, H] (or None) and, for
        flash_mla_with_kvcache's MTP calls, lse in FlashMLA's [T / n, H, n] layout
        (lse_seq_tokens n > 1: requests of n query tokens; written in place by the kernels)."""
        if self._planned is None:
            raise RuntimeError("run(): call plan() first")
        T, topk, H, dtype, kv_dtype = self._planned
        if T == 0:
            out = q_nope.new_empty((0, H, HEAD_DIM_CKV)) if out is None else out
            lse = q_nope.new_empty((0, H), dtype=torch.float32) if lse is None else lse
            return (out, lse) if (return_lse or max_logits is not None) else out
        dev = self._device_index
        if self._current_device() != dev:
            with torch.cuda.device(dev):
                return self._run(q_nope, q_pe, ckv_cache, kpe_cache, indices, topk_length, out,
                                 lse, return_lse, max_logits, ckv_scale, kpe_scale,
                                 lse_seq_tokens)
        # Fast path: the arguments' layout is the one validated last time (a serving loop
        # calls run() per layer with the same shapes): skip the checks.
        try:
            key = (self._planned, return_lse, lse_seq_tokens) + tuple(
                None if t is None else (t.shape, t.stride(), t.dtype, t.get_device())
                for t in (q_nope, q_pe, ckv_cache, kpe_cache, indices, topk_length, out, lse))
        except (AttributeError, TypeError):
            key = None
        if key is None or key != self._checked_key:
            self._checked_slots = self._validate(q_nope, q_pe, ckv_cache, kpe_cache, indices,
                                                 topk_length, out, lse, lse_seq_tokens)
            self._checked_key = key
        slots = self._checked_slots
        if kv_dtype == DS_MLA:
            if ckv_scale is not None or kpe_scale is not None:
                raise ValueError(f"{'ckv_scale' if ckv_scale is not None else 'kpe_scale'}: "
                                 f"FlashMLA's fp8 rows hold their own scales; leave it None")
            self._impl.set_kv_scales(1.0, 1.0)
            ckv_ptr = ckv_cache.data_ptr()
            kpe_ptr = ckv_ptr + sparse_specs.DS_MLA_ROPE_BYTE
        else:
            apply_kv_scales(self._impl, kv_dtype is torch.float8_e4m3fn, kv_dtype, ckv_scale,
                            kpe_scale)
            ckv_ptr, kpe_ptr = ckv_cache.data_ptr(), kpe_cache.data_ptr()
        if out is None:
            out = torch.empty((T, H, HEAD_DIM_CKV), dtype=dtype, device=self.device)
        if return_lse and lse is None:
            lse = torch.empty((T, H), dtype=torch.float32, device=self.device)
        self._impl.launch(q_nope, q_pe, ckv_ptr, slots[0][1], kpe_ptr, slots[1][1], indices,
                          out, lse, topk_length, max_logits, slots[0][0], self._stream(dev),
                          lse_seq_tokens)
        return (out, lse) if (return_lse or max_logits is not None) else out

    def _validate(self, q_nope, q_pe, ckv_cache, kpe_cache, indices, topk_length, out, lse,
                  lse_seq_tokens=1):
        """Full argument checks of run(); returns ((slots, ckv slot stride), (slots, kpe ...))."""
        T, topk, H, dtype, kv_dtype = self._planned
        for name, t, dim in (("q_nope", q_nope, HEAD_DIM_CKV), ("q_pe", q_pe, HEAD_DIM_KPE)):
            check_tensor(name, t, dtypes=(dtype,), shape=(T, H, dim), device=self.device,
                         last_dim_contiguous=True)
        if kv_dtype == DS_MLA:   # one tensor: the rows hold the rope values
            slots = [_ds_mla_slots(ckv_cache, kpe_cache, self.device)] * 2
        else:
            slots = []
            for name, t, dim in (("ckv_cache", ckv_cache, HEAD_DIM_CKV),
                                 ("kpe_cache", kpe_cache, HEAD_DIM_KPE)):
                check_tensor(name, t, dtypes=(kv_dtype,), device=self.device,
                             last_dim_contiguous=True)
                slots.append(_flat_slots(name, t, dim))
                if kv_dtype is torch.float8_e4m3fn and (slots[-1][1] % 16 or t.data_ptr() % 16):
                    raise ValueError(f"{name}: an fp8 cache's slots must be 16-byte aligned "
                                     f"(slot stride {slots[-1][1]} elements, address "
                                     f"{t.data_ptr()}); keep each slot's 576 bytes 16-byte "
                                     f"aligned")
            if slots[0][0] != slots[1][0]:
                raise ValueError(f"ckv_cache / kpe_cache: {slots[0][0]} vs {slots[1][0]} slots")
        check_tensor("indices", indices, dtypes=(torch.int32,))
        idx = indices
        if indices.dim() == 3:
            check_tensor("indices", indices, dtypes=(torch.int32,), shape=(T, 1, topk),
                         device=self.device)
            idx = indices[:, 0]
        check_tensor("indices", idx, dtypes=(torch.int32,), shape=(T, topk), device=self.device,
                     last_dim_contiguous=True)
        if T > 1 and idx.stride(0) != topk:
            raise ValueError(f"indices: rows must be {topk} entries apart (contiguous rows), got "
                             f"strides {tuple(indices.stride())} (call .contiguous())")
        if topk_length is not None:
            check_tensor("topk_length", topk_length, dtypes=(torch.int32,), shape=(T,),
                         device=self.device, last_dim_contiguous=True)
        if out is not None:
            check_tensor("out", out, dtypes=(dtype,), shape=(T, H, HEAD_DIM_CKV),
                         device=self.device, last_dim_contiguous=True)
        if lse is not None:
            n = lse_seq_tokens
            if n > 1 and (T % n or not lse.is_contiguous()):
                raise ValueError(f"lse: a [{T // n}, {H}, {n}] contiguous tensor is needed "
                                 f"for {T} tokens in requests of {n}, got {list(lse.shape)}")
            check_tensor("lse", lse, dtypes=(torch.float32,),
                         shape=(T, H) if n <= 1 else (T // n, H, n), device=self.device,
                         last_dim_contiguous=True)
        return slots


def _ds_mla_slots(cache, kpe_cache, device):
    """(number of slots, bytes between slots) of FlashMLA's fp8 rows given as ckv_cache."""
    if kpe_cache is not None:
        raise ValueError("kpe_cache: FlashMLA's fp8 rows (kv_data_type 'fp8_ds_mla') hold the "
                         "rope values; pass None")
    check_tensor("ckv_cache", cache, dtypes=(torch.uint8, torch.float8_e4m3fn), device=device,
                 last_dim_contiguous=True)
    row = sparse_specs.DS_MLA_ROW_BYTES
    if cache.dim() == 4 and cache.shape[2] == 1:   # FlashMLA's [pages, page_size, 1, 656]
        cache = cache[:, :, 0]
    if cache.dim() not in (2, 3) or cache.shape[-1] != row:
        raise ValueError(f"ckv_cache: FlashMLA's fp8 rows are [num_pages, page_size, {row}], "
                         f"[num_pages, page_size, 1, {row}] or [num_slots, {row}] bytes, got "
                         f"shape {list(cache.shape)}")
    n, stride = _flat_slots("ckv_cache", cache, row)
    if stride % 16 or cache.data_ptr() % 16:
        raise ValueError(f"ckv_cache: FlashMLA's fp8 rows must be 16-byte aligned (slot stride "
                         f"{stride} bytes, address {cache.data_ptr()}); keep the cache "
                         f"contiguous")
    return n, stride


def _check_int(name: str, v, lo: int, hi: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"{name}: expected an int in {lo}..{hi}, got {v!r}")


def _num_tokens(qo_indptr) -> int:
    if isinstance(qo_indptr, (int, np.integer)) and not isinstance(qo_indptr, bool):
        if qo_indptr < 0:
            raise ValueError(f"qo_indptr: a token count must be >= 0, got {qo_indptr}")
        return int(qo_indptr)
    if isinstance(qo_indptr, torch.Tensor):
        check_tensor("qo_indptr", qo_indptr, dtypes=(torch.int32,), ndim=1)
        qo_indptr = qo_indptr.cpu().numpy()
    a = np.asarray(qo_indptr)
    if a.ndim != 1 or a.shape[0] < 1 or a.dtype.kind not in "iu":
        raise ValueError(f"qo_indptr: expected a token count or a 1-d int32 indptr, got "
                         f"{type(qo_indptr).__name__} of shape {list(a.shape)}")
    return int(a[-1]) - int(a[0])


def _host_lens(topk_length, num_tokens: int) -> np.ndarray:
    if isinstance(topk_length, torch.Tensor):
        topk_length = topk_length.cpu().numpy()
    a = np.asarray(topk_length)
    if a.shape != (num_tokens,) or a.dtype.kind not in "iu":
        raise ValueError(f"topk_length: expected [{num_tokens}] integers, got {a.dtype} of "
                         f"shape {list(a.shape)}")
    return a


# ------------------------------------------------------------------ flash_mla_sparse_fwd
_FWD_WRAPPERS: dict[tuple, BatchSparseMLAWrapper] = {}


def _new_float_workspace(index: int) -> torch.Tensor:
    """A float workspace for the function entry points' cached wrappers on GPU ``index``: a
    whole GPU's split-KV partials (its size does not depend on the batch)."""
    from .workspace import WorkspaceLayout  # noqa: PLC0415

    sms = torch.cuda.get_device_properties(index).multi_processor_count
    need = WorkspaceLayout(max_batch=1, max_row_tiles=1,
                           num_ctas=sms * sm80.CTAS_PER_SM).float_workspace_bytes
    return torch.empty(need, dtype=torch.uint8, device=torch.device("cuda", index))


def _fwd_wrapper(device: torch.device) -> BatchSparseMLAWrapper:
    index = device_index(device)
    # (keyed with sm90_disabled: the family a new wrapper picks follows MLA_WRAPPER_SM90)
    key = (index, backends.sm90_disabled())
    w = _FWD_WRAPPERS.get(key)
    if w is None:
        w = _FWD_WRAPPERS[key] = BatchSparseMLAWrapper(_new_float_workspace(index))
    return w


def flash_mla_sparse_fwd(q: torch.Tensor, kv: torch.Tensor, indices: torch.Tensor,
                         sm_scale: float, d_v: int = 512, attn_sink: Optional[torch.Tensor] = None,
                         topk_length: Optional[torch.Tensor] = None):
    """FlashMLA's sparse prefill (MQA mode): ``(out, max_logits, lse)``.

    q [s_q, h_q, 576] bf16/fp16 (h_q 1..128), kv [s_kv, 1, 576] (the latent cache viewed flat,
    same dtype) or, on Hopper (sm90), FlashMLA's fp8 rows [s_kv, 1, 656] (uint8 or
    float8_e4m3fn, "fp8_ds_mla": read as they are, no upconvert to bf16 first), indices
    [s_q, 1, topk] int32 slot ids into kv (-1 or out of range: skipped),
    topk_length [s_q] int32 (only the first n ids of a row are valid), attn_sink [h_q] float32
    (a per-head logit that joins the softmax denominator only). Returns out [s_q, h_q, d_v]
    (q's dtype), max_logits [s_q, h_q] float32 (max of sm_scale * q.k, -inf for an empty row)
    and lse [s_q, h_q] float32 (natural log, without the sink; +inf for an empty row, whose
    out is 0). Only d_v = 512. Never splits a token's list (max_logits needs whole rows).
    """
    check_tensor("q", q, dtypes=_ATTN_DTYPES, ndim=3, last_dim_contiguous=True)
    if q.shape[-1] != HEAD_DIM_QK:
        raise ValueError(f"q: expected last dim {HEAD_DIM_QK}, got shape {list(q.shape)}")
    if d_v != HEAD_DIM_CKV:
        raise ValueError(f"d_v: only {HEAD_DIM_CKV} is supported, got {d_v}")
    s_q, h_q, _ = q.shape
    fp8_rows = kv.dtype in (torch.uint8, torch.float8_e4m3fn)
    check_tensor("kv", kv, dtypes=(q.dtype, torch.uint8, torch.float8_e4m3fn), ndim=3,
                 last_dim_contiguous=True)
    row = sparse_specs.DS_MLA_ROW_BYTES if fp8_rows else HEAD_DIM_QK
    if kv.shape[1:] != (1, row):
        what = "FlashMLA's fp8 rows" if fp8_rows else f"a {q.dtype} cache"
        raise ValueError(f"kv: expected [s_kv, 1, {row}] ({what}), got {list(kv.shape)}")
    check_tensor("indices", indices, dtypes=(torch.int32,), ndim=3)
    if indices.shape[:2] != (s_q, 1):
        raise ValueError(f"indices: expected [{s_q}, 1, topk], got {list(indices.shape)}")
    topk = indices.shape[2]
    if attn_sink is not None:
        check_tensor("attn_sink", attn_sink, dtypes=(torch.float32,), shape=(h_q,))
    device = q.device
    if device.type != "cuda":
        raise ValueError(f"q: expected a CUDA tensor, got one on {device}")
    for name, t in (("kv", kv), ("indices", indices), ("topk_length", topk_length),
                    ("attn_sink", attn_sink)):
        if t is not None and t.device != device:
            raise ValueError(f"{name}: expected device {device}, got {t.device}")
    if indices.stride(-1) != 1 or (s_q > 1 and indices.stride(0) != topk):
        indices = indices.contiguous()
    out = torch.empty((s_q, h_q, d_v), dtype=q.dtype, device=device)
    lse = torch.empty((s_q, h_q), dtype=torch.float32, device=device)
    max_logits = torch.empty((s_q, h_q), dtype=torch.float32, device=device)
    if s_q == 0 or topk == 0:
        lse.fill_(math.inf)
        max_logits.fill_(-math.inf)
        return out.zero_(), max_logits, lse
    w = _fwd_wrapper(device)
    w.plan(s_q, topk, h_q, float(sm_scale), q.dtype, kv_data_type=DS_MLA if fp8_rows else None,
           allow_split=False)
    cache = kv[:, 0] if fp8_rows else kv
    w._run(q[..., :HEAD_DIM_CKV], q[..., HEAD_DIM_CKV:], *_cache_pair(cache, fp8_rows), indices,
           topk_length, out, lse, True, max_logits)
    _apply_sink(out, lse, attn_sink)
    return out, max_logits, lse


def _cache_pair(cache: torch.Tensor, fp8_rows: bool):
    """(ckv_cache, kpe_cache) for run(): a 16-bit [..., 576] cache's two column views, or
    FlashMLA's fp8 rows and None (the rows hold the rope values)."""
    return (cache, None) if fp8_rows else (cache[..., :HEAD_DIM_CKV], cache[..., HEAD_DIM_CKV:])


def _apply_sink(out: torch.Tensor, lse: torch.Tensor, attn_sink) -> None:
    """attn_sink [H] joins the softmax denominator: out [..., H, 512] *= sum / (sum + e^sink) =
    sigmoid(lse - sink) (lse [..., H], a view of out's rows: natural log, without the sink;
    +inf rows stay 0)."""
    if attn_sink is None:
        return
    scale = torch.sigmoid(lse - attn_sink.to(out.device))
    scale = torch.where(torch.isinf(lse), torch.zeros_like(scale), scale)
    out.copy_(out.float() * scale[..., None])


# ------------------------------ flash_mla_with_kvcache (FlashMLA's decode call: sparse here)
def get_mla_metadata(*args, **kwargs):
    """FlashMLA's get_mla_metadata: ``(FlashMLASchedMeta(), None)`` whatever the arguments."""
    return FlashMLASchedMeta(), None


# (device, tokens, topk, heads, q dtype, kv dtype, sm_scale, sm90_disabled) -> wrapper
_DECODE_PLANS: dict = {}
_DECODE_WORKSPACES: dict = {}  # device -> the float workspace those wrappers share


def _decode_wrapper(key) -> BatchSparseMLAWrapper:
    w = _DECODE_PLANS.get(key)
    if w is not None:
        return w
    index, tokens, topk, heads, dtype, kv, sm_scale, _ = key
    if torch.cuda.is_current_stream_capturing():
        # (a plan made inside a capture would reach the device only when the graph replays)
        raise RuntimeError(f"flash_mla_with_kvcache: the first call with {tokens} query "
                           f"tokens, topk {topk}, {heads} heads is inside a CUDA-graph "
                           "capture; call it once with this shape before capturing (a warm-up "
                           "run) so that its plan is made and uploaded")
    ws = _DECODE_WORKSPACES.get(index)
    if ws is None:
        ws = _DECODE_WORKSPACES[index] = _new_float_workspace(index)
    w = BatchSparseMLAWrapper(ws, use_cuda_graph=True, max_num_tokens=tokens)
    w.plan(tokens, topk, heads, sm_scale, dtype, kv_data_type=kv)
    _DECODE_PLANS[key] = w
    return w


def flash_mla_with_kvcache(q: torch.Tensor, k_cache: torch.Tensor,
                           block_table: Optional[torch.Tensor] = None,
                           cache_seqlens: Optional[torch.Tensor] = None, head_dim_v: int = 512,
                           tile_scheduler_metadata=None, num_splits=None,
                           softmax_scale: Optional[float] = None, causal: bool = False,
                           is_fp8_kvcache: bool = False, indices: Optional[torch.Tensor] = None,
                           attn_sink: Optional[torch.Tensor] = None, extra_k_cache=None,
                           extra_indices_in_kvcache=None,
                           topk_length: Optional[torch.Tensor] = None, extra_topk_length=None,
                           out: Optional[torch.Tensor] = None):
    """FlashMLA's flash_mla_with_kvcache: ``(out, lse)``, sparse decode (``indices`` given, the
    call vLLM's and SGLang's DeepSeek V3.2 backends make) or dense paged decode (no indices,
    their FlashMLA backends' call).

    Both: q [b, s_q, h_q, 576] bf16/fp16 (h_q 1..128: no padding to 64 needed); out [b, s_q,
    h_q, 512] optional. Returns out [b, s_q, h_q, 512] and lse [b, h_q, s_q] float32 (natural
    log, +inf for a row that sees no key, whose out is 0). tile_scheduler_metadata: what
    get_mla_metadata() returned (one per decode step), or None; num_splits is not read.
    DeepSeek V4's extra caches raise.

    Dense (indices None): k_cache [num_blocks, page_block_size, 1, 576] in q's dtype (any page
    size; FlashMLA's kernel takes 64 only), block_table [b, max_blocks] int32 and cache_seqlens
    [b] int32 on the device (read there: no host sync, capturable in CUDA graphs), causal for
    s_q > 1 (query i sees keys [0, seqlen - s_q + i]), softmax_scale default 576 ** -0.5. The
    first call with a scheduling-metadata object writes a balanced plan for its batch on the
    GPU (one small kernel; device_plan/balanced.cuh) into a workspace the object keeps; later
    calls with the same object, lengths and page-table tensors and shape (the step's other
    layers) reuse it, as FlashMLA's metadata is reused: take a new get_mla_metadata() each step
    (or pass None to plan every call). Runs the planned family of the GPU (sm90 on Hopper).
    attn_sink, topk_length and is_fp8_kvcache raise there.

    Sparse (indices given): k_cache [num_blocks, page_block_size, 1, 656] uint8 / float8_e4m3fn
    with is_fp8_kvcache=True (FlashMLA's fp8 rows, sm90 only) or [num_blocks, page_block_size,
    1, 576] in q's dtype; indices [b, s_q, topk] int32 slot ids (block * page_block_size +
    offset; -1 or out of range: skipped); topk_length [b * s_q] (or [b]) int32: only the first
    n ids of a row count; attn_sink [h_q] float32 (joins the softmax denominator only).
    block_table and cache_seqlens are not read (the indices address the cache); causal raises.
    One plan per (tokens, topk, heads, dtypes, scale), made at its shape's first call and
    kept (a few KB each): calls, CUDA-graph captures and replays of that shape reuse it (no
    host work but argument checks; nothing allocated inside a capture after that first call).
    """
    for name, v in (("extra_k_cache", extra_k_cache),
                    ("extra_indices_in_kvcache", extra_indices_in_kvcache),
                    ("extra_topk_length", extra_topk_length)):
        if v is not None:
            raise ValueError(f"{name}: DeepSeek V4's extra cache is not supported; pass None")
    if head_dim_v != HEAD_DIM_CKV:
        raise ValueError(f"head_dim_v: only {HEAD_DIM_CKV} is supported, got {head_dim_v}")
    if indices is None:
        for name, v in (("attn_sink", attn_sink), ("topk_length", topk_length)):
            if v is not None:
                raise ValueError(f"{name}: applies to sparse decode (indices given) only; pass "
                                 "None for dense decode")
        if is_fp8_kvcache:
            raise ValueError("is_fp8_kvcache: dense decode reads a 16-bit cache (FlashMLA's "
                             "dense kernel has no fp8 path either); pass indices for FlashMLA's "
                             "fp8 rows, or use BatchMLAPagedAttentionWrapper with an e4m3 cache")
        return flash_mla_dense(q, k_cache, block_table, cache_seqlens, tile_scheduler_metadata,
                               softmax_scale, causal, out)
    if causal:
        raise ValueError("causal: must be False with indices (the indices select the keys)")
    check_tensor("q", q, dtypes=_ATTN_DTYPES, ndim=4, last_dim_contiguous=True)
    b, s_q, h_q, d = q.shape
    if d != HEAD_DIM_QK:
        raise ValueError(f"q: expected [b, s_q, h_q, {HEAD_DIM_QK}], got {list(q.shape)}")
    row = sparse_specs.DS_MLA_ROW_BYTES if is_fp8_kvcache else HEAD_DIM_QK
    check_tensor("k_cache", k_cache, ndim=4, device=q.device, last_dim_contiguous=True,
                 dtypes=(torch.uint8, torch.float8_e4m3fn) if is_fp8_kvcache else (q.dtype,))
    if k_cache.shape[2] != 1 or k_cache.shape[3] != row:
        raise ValueError(f"k_cache: expected [num_blocks, page_block_size, 1, {row}] "
                         f"({'FlashMLA fp8 rows' if is_fp8_kvcache else 'a 16-bit cache'}: "
                         f"is_fp8_kvcache={is_fp8_kvcache}), got {list(k_cache.shape)}")
    check_tensor("indices", indices, dtypes=(torch.int32,), ndim=3, device=q.device)
    if tuple(indices.shape[:2]) != (b, s_q):
        raise ValueError(f"indices: expected [{b}, {s_q}, topk], got {list(indices.shape)}")
    T, topk = b * s_q, indices.shape[2]
    idx = _rows_view("indices", indices, (T, topk))
    if topk_length is not None:
        check_tensor("topk_length", topk_length, dtypes=(torch.int32,), device=q.device)
        if topk_length.numel() == b and s_q > 1:
            topk_length = topk_length.reshape(b, 1).expand(b, s_q)
        if topk_length.numel() != T:
            raise ValueError(f"topk_length: expected {T} (b * s_q) or {b} (b) entries, got "
                             f"shape {list(topk_length.shape)}")
        topk_length = topk_length.reshape(T)
    if attn_sink is not None:
        check_tensor("attn_sink", attn_sink, dtypes=(torch.float32,), shape=(h_q,),
                     device=q.device)
    if out is None:
        out = torch.empty((b, s_q, h_q, HEAD_DIM_CKV), dtype=q.dtype, device=q.device)
    else:
        check_tensor("out", out, dtypes=(q.dtype,), shape=(b, s_q, h_q, HEAD_DIM_CKV),
                     device=q.device)
    lse = torch.empty((b, h_q, s_q), dtype=torch.float32, device=q.device)
    if T == 0 or topk == 0:
        lse.fill_(math.inf)
        return out.zero_(), lse
    sm_scale = float(softmax_scale) if softmax_scale is not None else HEAD_DIM_QK ** -0.5
    kv = DS_MLA if is_fp8_kvcache else q.dtype
    # (sm90_disabled: the family a new wrapper would pick, so a switch of MLA_WRAPPER_SM90
    # gets its own plans)
    w = _decode_wrapper((device_index(q.device), T, topk, h_q, q.dtype, kv, sm_scale,
                         backends.sm90_disabled()))
    q3 = _rows_view("q", q, (T, h_q, HEAD_DIM_QK))
    o3 = _rows_view("out", out, (T, h_q, HEAD_DIM_CKV))
    # lse [b, h_q, s_q] written in place by the kernels (lse_seq_tokens = s_q)
    w._run(q3[..., :HEAD_DIM_CKV], q3[..., HEAD_DIM_CKV:],
           *_cache_pair(k_cache[:, :, 0], is_fp8_kvcache), idx, topk_length, o3,
           lse.view(T, h_q) if s_q == 1 else lse, True, None, lse_seq_tokens=s_q)
    _apply_sink(out, lse.transpose(1, 2), attn_sink)
    return out, lse


__all__ = ["BatchSparseMLAWrapper", "flash_mla_sparse_fwd", "flash_mla_with_kvcache",
           "get_mla_metadata", "FlashMLASchedMeta", "cp_gather_cache",
           "gather_and_maybe_dequant_cache"]
