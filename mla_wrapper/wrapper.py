"""BatchMLAPagedAttentionWrapper: a drop-in for ``flashinfer.mla.BatchMLAPagedAttentionWrapper``.

One decode step::

    wrapper.plan(qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads, 512, 64, page_size,
                 causal, sm_scale, torch.bfloat16, torch.bfloat16)     # once per step, host
    for layer in layers:
        out = wrapper.run(q_nope, q_pe, ckv_cache, kpe_cache)          # once per layer, GPU

plan() runs the split-KV planner on the CPU, packs the plan into a pinned staging buffer and
issues ONE async host-to-device copy into the int workspace on the current stream; it never
synchronizes the device (unless index tensors are given on the device: then one D2H copy).
run() only validates, fills a small argument struct and launches the kernels on the current
stream. With ``use_cuda_graph=True`` every array run() reads has a fixed address and the grid is
fixed, so run() can be captured once and replayed after each new plan().
"""
from __future__ import annotations

import ctypes
import math
from typing import Optional

import numpy as np
import torch

from . import backends
from ._validate import check_tensor, dtype_name

HEAD_DIM_CKV = 512
HEAD_DIM_KPE = 64
_INDEX_DTYPES = (torch.int32,)


def _raw_stream_getter():
    fast = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if fast is not None:
        return fast
    return lambda index: torch.cuda.current_stream(index).cuda_stream


def _host_int32(name: str, t) -> np.ndarray:
    """A host int32 numpy view of an index array (one D2H copy if it lives on the device)."""
    if isinstance(t, np.ndarray):
        if t.dtype != np.int32:
            raise ValueError(f"{name}: expected dtype int32, got {t.dtype} (convert with .astype(np.int32))")
        return t
    check_tensor(name, t, dtypes=_INDEX_DTYPES, ndim=1)
    if t.device.type != "cpu":
        t = t.cpu()
    return t.numpy()


class BatchMLAPagedAttentionWrapper:
    """MLA attention over a paged KV cache (decode and causal incremental prefill / MTP).

    Args:
        float_workspace_buffer: CUDA tensor (any dtype) of scratch memory for split-KV partial
            outputs; 128 MB is plenty (a too-small buffer raises at plan() with the size needed).
        use_cuda_graph: fixed-address buffers and a fixed grid so run() can be captured.
        qo_indptr, kv_indptr, kv_indices, kv_len_arr: with use_cuda_graph, the user's device
            buffers ([B+1], [B+1], [max_pages], [B] int32); B is the graph's batch capacity and
            kv_indices is the page-table buffer the captured kernel reads.
        backend: "auto" (default: cutlass on SM100, sm80 elsewhere), "sm80" (alias "fa2"),
            "cutlass" (Blackwell only) or "sm90" (not available yet).
    """

    def __init__(self, float_workspace_buffer: torch.Tensor, use_cuda_graph: bool = False,
                 qo_indptr: Optional[torch.Tensor] = None, kv_indptr: Optional[torch.Tensor] = None,
                 kv_indices: Optional[torch.Tensor] = None, kv_len_arr: Optional[torch.Tensor] = None,
                 backend: str = "auto"):
        if backend not in backends.KNOWN and backend not in backends.ALIASES:
            raise ValueError(f"backend: expected one of {backends.KNOWN + tuple(backends.ALIASES)}, "
                             f"got {backend!r}")
        check_tensor("float_workspace_buffer", float_workspace_buffer, cuda=True)
        if not float_workspace_buffer.is_contiguous():
            raise ValueError("float_workspace_buffer: must be contiguous")
        self.device = float_workspace_buffer.device
        self._device_index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        self._float_ws = float_workspace_buffer
        self._float_ws_bytes = float_workspace_buffer.numel() * float_workspace_buffer.element_size()
        self._backend_request = backend
        self._use_cuda_graph = bool(use_cuda_graph)
        self._graph_capacity: Optional[int] = None
        self._user_bufs = {"qo_indptr": qo_indptr, "kv_indptr": kv_indptr,
                           "kv_indices": kv_indices, "kv_len_arr": kv_len_arr}
        if self._use_cuda_graph:
            for name in ("qo_indptr", "kv_indptr", "kv_indices", "kv_len_arr"):
                buf = self._user_bufs[name]
                if buf is None:
                    raise ValueError(f"{name}: use_cuda_graph=True needs the {name} buffer at "
                                     "construction (its address is baked into the captured graph)")
                check_tensor(name, buf, dtypes=_INDEX_DTYPES, ndim=1, device=self.device)
            self._graph_capacity = qo_indptr.numel() - 1
            if kv_indptr.numel() != qo_indptr.numel() or kv_len_arr.numel() != self._graph_capacity:
                raise ValueError(
                    f"kv_indptr / kv_len_arr: expected [{self._graph_capacity + 1}] / "
                    f"[{self._graph_capacity}] to match qo_indptr's batch capacity, got "
                    f"{list(kv_indptr.shape)} / {list(kv_len_arr.shape)}")
        props = torch.cuda.get_device_properties(self.device)
        self._sm_count = props.multi_processor_count
        self._capability = (props.major, props.minor)
        self._stream = _raw_stream_getter()
        self._impl = None         # backend implementation object, made at the first plan()
        self._planned = None      # dict of plan facts that run() checks

    # ------------------------------------------------------------------ plan
    def plan(self, qo_indptr: torch.Tensor, kv_indptr: torch.Tensor, kv_indices: torch.Tensor,
             kv_len_arr: torch.Tensor, num_heads: int, head_dim_ckv: int, head_dim_kpe: int,
             page_size: int, causal: bool, sm_scale: float, q_data_type: torch.dtype,
             kv_data_type: torch.dtype, use_profiler: bool = False) -> None:
        """Plan one step (host work; no device sync for host index tensors).

        qo_indptr [B+1] int32: query tokens of request r are qo_indptr[r]:qo_indptr[r+1]
            (decode: arange(B+1)).
        kv_indptr [B+1] int32: request r's pages are kv_indices[kv_indptr[r]:kv_indptr[r+1]].
        kv_indices [>= kv_indptr[-1]] int32 CUDA tensor: page ids, any order.
        kv_len_arr [B] int32: KV tokens of each request (0 allowed).
        num_heads: 1..128; head_dim_ckv 512, head_dim_kpe 64; page_size 1..1024 (cutlass:
        power of two); causal: for qo_len > 1, query i sees KV tokens 0..kv_len - qo_len + i.
        sm_scale: softmax scale (DeepSeek: 1/sqrt(192)). q/kv data types: bf16 or fp16.
        qo_indptr / kv_indptr / kv_len_arr may be host or device tensors: device ones cost one
        device-to-host copy (a sync), so serving loops should pass host copies.
        """
        if head_dim_ckv != HEAD_DIM_CKV:
            raise ValueError(f"head_dim_ckv: expected {HEAD_DIM_CKV}, got {head_dim_ckv}")
        if head_dim_kpe != HEAD_DIM_KPE:
            raise ValueError(f"head_dim_kpe: expected {HEAD_DIM_KPE}, got {head_dim_kpe}")
        if not isinstance(num_heads, int) or not 1 <= num_heads <= 128:
            raise ValueError(f"num_heads: expected an int in 1..128, got {num_heads!r}")
        if not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size: expected a positive int, got {page_size!r}")
        for name, dt in (("q_data_type", q_data_type), ("kv_data_type", kv_data_type)):
            if dt not in (torch.bfloat16, torch.float16):
                raise ValueError(f"{name}: expected torch.bfloat16 or torch.float16, got {dt}")
        check_tensor("kv_indices", kv_indices, dtypes=_INDEX_DTYPES, ndim=1, device=self.device)
        qo_h, kv_h = _host_int32("qo_indptr", qo_indptr), _host_int32("kv_indptr", kv_indptr)
        len_h = _host_int32("kv_len_arr", kv_len_arr)
        batch = len_h.shape[0]
        if qo_h.shape[0] != batch + 1 or kv_h.shape[0] != batch + 1:
            raise ValueError(f"qo_indptr / kv_indptr: expected [{batch + 1}] entries for "
                             f"kv_len_arr's batch of {batch}, got {qo_h.shape[0]} / {kv_h.shape[0]}")
        if self._graph_capacity is not None and batch > self._graph_capacity:
            raise ValueError(f"batch size {batch} exceeds the CUDA-graph capacity "
                             f"{self._graph_capacity} set at construction (qo_indptr buffer of "
                             f"{self._graph_capacity + 1}); make a wrapper with larger buffers")
        qo_lens = np.diff(qo_h)
        max_qo_len = int(qo_lens.max()) if batch else 1
        problem = backends.Problem(num_heads, page_size, q_data_type, kv_data_type, max_qo_len,
                                   bool(causal), self._use_cuda_graph)
        name = backends.resolve(self._backend_request, problem, self.device)
        if self._impl is None or self._impl.name != name:
            self._impl = _make_impl(name, self)
        if self._use_cuda_graph:
            kv_indices = self._stage_graph_inputs(qo_indptr, kv_indptr, kv_indices, kv_len_arr)
        self._impl.plan(qo_h, kv_h, len_h, kv_indices, num_heads, page_size, bool(causal),
                        float(sm_scale), q_data_type)
        self._planned = {
            "num_tokens": int(qo_h[-1]) if batch else 0,
            "num_heads": num_heads, "dtype": q_data_type, "kv_dtype": kv_data_type,
            "page_size": page_size, "backend": name,
        }

    def _stage_graph_inputs(self, qo_indptr, kv_indptr, kv_indices, kv_len_arr):
        """Copy this step's index arrays into the construction buffers (async, same stream)."""
        bufs = self._user_bufs
        if kv_indices.data_ptr() != bufs["kv_indices"].data_ptr():
            n = kv_indices.numel()
            if n > bufs["kv_indices"].numel():
                raise ValueError(f"kv_indices: {n} entries exceed the CUDA-graph kv_indices "
                                 f"buffer of {bufs['kv_indices'].numel()} given at construction")
            bufs["kv_indices"][:n].copy_(kv_indices, non_blocking=True)
        for name, t in (("qo_indptr", qo_indptr), ("kv_indptr", kv_indptr), ("kv_len_arr", kv_len_arr)):
            if isinstance(t, torch.Tensor) and t.data_ptr() != bufs[name].data_ptr():
                bufs[name][: t.numel()].copy_(t, non_blocking=True)
        return bufs["kv_indices"]

    # ------------------------------------------------------------------- run
    def run(self, q_nope: torch.Tensor, q_pe: torch.Tensor, ckv_cache: torch.Tensor,
            kpe_cache: torch.Tensor, out: Optional[torch.Tensor] = None,
            lse: Optional[torch.Tensor] = None, return_lse: bool = False,
            profiler_buffer: Optional[torch.Tensor] = None, kv_len: Optional[torch.Tensor] = None,
            page_table: Optional[torch.Tensor] = None, return_lse_base_on_e: bool = False):
        """Attention for the planned batch (launches on the current stream; capturable).

        q_nope [T, H, 512], q_pe [T, H, 64] (T = qo_indptr[-1]); ckv_cache [P, page_size, 512],
        kpe_cache [P, page_size, 64] (separate tensors or two views of one [P, page_size, 576]
        buffer; never copied); out [T, H, 512] (q's dtype), lse [T, H] float32.
        Returns out, or (out, lse) with return_lse. lse is base 2 (FlashInfer's convention);
        return_lse_base_on_e=True gives natural log. Rows with no visible KV: o = 0, lse = -inf.
        kv_len / page_table / profiler_buffer are accepted for FlashInfer compatibility and unused.
        """
        p = self._planned
        if p is None:
            raise RuntimeError("run() called before plan(): call wrapper.plan(...) for this batch first")
        T, H = p["num_tokens"], p["num_heads"]
        dtype, ps = p["dtype"], p["page_size"]
        _check_run_tensor("q_nope", q_nope, dtype, (T, H, HEAD_DIM_CKV), self.device)
        _check_run_tensor("q_pe", q_pe, dtype, (T, H, HEAD_DIM_KPE), self.device)
        _check_cache("ckv_cache", ckv_cache, p["kv_dtype"], ps, HEAD_DIM_CKV, self.device)
        _check_cache("kpe_cache", kpe_cache, p["kv_dtype"], ps, HEAD_DIM_KPE, self.device)
        if out is None:
            out = torch.empty((T, H, HEAD_DIM_CKV), dtype=dtype, device=self.device)
        else:
            _check_run_tensor("out", out, dtype, (T, H, HEAD_DIM_CKV), self.device)
        want_lse = return_lse or lse is not None
        if want_lse:
            if lse is None:
                lse = torch.empty((T, H), dtype=torch.float32, device=self.device)
            else:
                check_tensor("lse", lse, dtypes=(torch.float32,), shape=(T, H), device=self.device,
                             last_dim_contiguous=True)
        self._impl.run(q_nope, q_pe, ckv_cache, kpe_cache, out, lse if want_lse else None,
                       bool(return_lse_base_on_e), self._stream(self._device_index))
        return (out, lse) if return_lse else out


def _check_run_tensor(name, t, dtype, shape, device):
    if not isinstance(t, torch.Tensor) or t.dtype != dtype or tuple(t.shape) != shape \
            or t.device != device or (t.stride(-1) != 1 and shape[-1] > 1):
        check_tensor(name, t, dtypes=(dtype,), shape=shape, device=device, last_dim_contiguous=True)
        raise ValueError(f"{name}: does not match the plan")  # unreachable: check_tensor raised


def _check_cache(name, t, dtype, page_size, dim, device):
    if not isinstance(t, torch.Tensor) or t.dtype != dtype or t.dim() != 3 or t.shape[1] != page_size \
            or t.shape[2] != dim or t.device != device or t.stride(-1) != 1:
        if isinstance(t, torch.Tensor) and t.dim() == 3 and t.shape[1] != page_size:
            raise ValueError(f"{name}: page size {t.shape[1]} (dim 1) differs from the planned "
                             f"page_size {page_size}")
        check_tensor(name, t, dtypes=(dtype,), shape=(None, page_size, dim), device=device,
                     last_dim_contiguous=True)


class _PlannedKernel:
    """A backend driven by our CPU planner (sm80 today): planner -> pinned staging buffer ->
    one async copy into the int workspace -> the family's launcher reads MlaPlan/MlaRunArgs.

    Staging is double-buffered: plan() refills the buffer whose previous copy has completed
    (an event per buffer), so a plan() issued while the last step's copy or kernels are still
    in flight corrupts nothing; the copy itself is stream-ordered after earlier kernels.
    """

    # MTP / speculative decoding: query tokens per request the CUDA-graph layout makes room for
    GRAPH_TOKENS_PER_REQUEST = 8

    def __init__(self, name: str, wrapper: "BatchMLAPagedAttentionWrapper"):
        from . import planner as planner_mod, workspace  # noqa: PLC0415
        from . import sm80  # noqa: PLC0415

        self.name = name
        self.family = sm80
        self.wrapper = wrapper
        self._planner_mod = planner_mod
        self._workspace = workspace
        self.num_ctas = wrapper._sm_count * sm80.CTAS_PER_SM
        self.layout = None
        self.planner = None
        self.planner_key = None
        self.int_ws = None
        self.staging = []
        self.events = []
        self.next_staging = 0
        self.plan_struct = None
        self.plan_ptr = 0
        self.args = workspace.MlaRunArgsStruct()
        self.args_ptr = ctypes.addressof(self.args)
        self.modules = {}
        self.fn = None
        self.module = None

    def _ensure_layout(self, batch: int, num_tokens: int, num_heads: int) -> None:
        ws = self._workspace
        w = self.wrapper
        R, K = self.family.ROWS_PER_TILE, self.family.KV_TILE
        if w._graph_capacity is not None:
            cap = w._graph_capacity
            need = ws.WorkspaceLayout.for_batch(cap, cap * self.GRAPH_TOKENS_PER_REQUEST, 128,
                                                self.num_ctas, R, K)
            if self.layout is not None:
                if ws.row_tiles_bound(batch, num_tokens, num_heads, R) > self.layout.max_row_tiles:
                    raise ValueError(
                        f"qo_indptr: {num_tokens} query tokens x {num_heads} heads exceed the "
                        f"CUDA-graph capacity of {cap} requests x {self.GRAPH_TOKENS_PER_REQUEST} "
                        "tokens set at construction")
                return
        else:
            need = ws.WorkspaceLayout.for_batch(max(batch, 1), max(num_tokens, 1), num_heads,
                                                self.num_ctas, R, K)
            if self.layout is not None and self.layout.fits(need):
                return
            if self.layout is not None:  # grow geometrically so steps rarely reallocate
                need = ws.WorkspaceLayout.for_batch(
                    max(batch, 2 * self.layout.max_batch), max(num_tokens, 2 * self.layout.max_batch),
                    128, self.num_ctas, R, K)
        ws.check_float_workspace(need, w._float_ws_bytes)
        if self.events:
            for ev in self.events:      # old staging buffers may still be read by a copy
                ev.synchronize()
        self.layout = need
        dev = w.device
        self.int_ws = torch.empty(need.int_workspace_bytes, dtype=torch.uint8, device=dev)
        self.staging = [torch.empty(need.int_workspace_elems, dtype=torch.int32, pin_memory=True)
                        for _ in range(2)]
        self.staging_np = [t.numpy() for t in self.staging]
        self.staging_bytes = [t.view(torch.uint8) for t in self.staging]
        self.events = [torch.cuda.Event() for _ in range(2)]
        self.event_used = [False, False]
        self.plan_struct = ws.make_plan_struct(need, self.int_ws.data_ptr(), w._float_ws.data_ptr())
        self.plan_ptr = ctypes.addressof(self.plan_struct)
        self.planner = None

    def plan(self, qo_h, kv_h, len_h, kv_indices, num_heads, page_size, causal, sm_scale, dtype):
        batch = len_h.shape[0]
        num_tokens = int(qo_h[-1]) - int(qo_h[0]) if batch else 0
        self._ensure_layout(batch, num_tokens, num_heads)
        key = (num_heads, page_size, causal)
        if self.planner is None or self.planner_key != key:
            self.planner = self._planner_mod.Planner(self.layout, num_heads, page_size, causal)
            self.planner_key = key
        i = self.next_staging
        self.next_staging ^= 1
        if self.event_used[i]:
            self.events[i].synchronize()   # the copy issued two plans ago has finished reading
        res = self.planner.plan(qo_h, kv_h, len_h, self.staging_np[i])
        n = res.copy_bytes
        self.int_ws[:n].copy_(self.staging_bytes[i][:n], non_blocking=True)
        self.events[i].record()
        self.event_used[i] = True
        a = self.args
        a.kv_indices = kv_indices.data_ptr()
        a.num_heads = num_heads
        a.page_size = page_size
        a.sm_scale = sm_scale
        a.causal = int(causal)
        mod = self.modules.get(dtype)
        if mod is None:
            from .jit import load  # noqa: PLC0415
            from .jit.env import device_arch  # noqa: PLC0415
            mod = self.modules[dtype] = load(self.family.spec(dtype_name(dtype),
                                                              device_arch(self.wrapper.device)))
        self.module = mod
        self.fn = mod.mlaw_sm80_mla_run
        self.last_plan = res

    def run(self, q_nope, q_pe, ckv, kpe, out, lse, lse_base_e, stream):
        a = self.args
        a.q_nope = q_nope.data_ptr()
        a.q_pe = q_pe.data_ptr()
        a.ckv = ckv.data_ptr()
        a.kpe = kpe.data_ptr()
        a.out = out.data_ptr()
        a.q_nope_stride_token, a.q_nope_stride_head = q_nope.stride(0), q_nope.stride(1)
        a.q_pe_stride_token, a.q_pe_stride_head = q_pe.stride(0), q_pe.stride(1)
        a.ckv_stride_page, a.ckv_stride_token = ckv.stride(0), ckv.stride(1)
        a.kpe_stride_page, a.kpe_stride_token = kpe.stride(0), kpe.stride(1)
        a.out_stride_token, a.out_stride_head = out.stride(0), out.stride(1)
        if lse is not None:
            a.lse = lse.data_ptr()
            a.lse_stride_token = lse.stride(0)
        else:
            a.lse = None
        a.lse_base_e = int(lse_base_e)
        status = self.fn(self.plan_ptr, self.args_ptr, stream)
        if status:
            raise self.module.error("mlaw_sm80_mla_run", status)


class _CutlassKernel:
    """The SM100 backend: CUTLASS's MLA kernel, which takes a dense page table [B, max_pages]
    and device seq_lens. plan() builds both on the device from kv_indptr / kv_indices (a gather
    of page ids, never of the cache) and picks CUTLASS's split heuristic; run() launches.
    Compile-verified for sm_100a; not run on a Blackwell GPU by this project yet."""

    def __init__(self, name: str, wrapper: "BatchMLAPagedAttentionWrapper"):
        if wrapper._use_cuda_graph:
            raise ValueError("backend='cutlass': CUDA-graph mode is not supported by the SM100 "
                             "backend yet; use backend='sm80' (or 'auto') with use_cuda_graph")
        from . import sm100  # noqa: PLC0415

        self.name = name
        self.sm100 = sm100
        self.wrapper = wrapper

    def plan(self, qo_h, kv_h, len_h, kv_indices, num_heads, page_size, causal, sm_scale, dtype):
        dev = self.wrapper.device
        batch = len_h.shape[0]
        pages = (len_h.astype(np.int64) + page_size - 1) // page_size
        width = max(int(pages.max()) if batch else 1, 1)
        cols = np.arange(width, dtype=np.int64)
        idx = kv_h[:-1, None].astype(np.int64) + np.minimum(cols[None, :], np.maximum(pages - 1, 0)[:, None])
        idx = np.minimum(idx, max(kv_indices.numel() - 1, 0))
        self.page_table = kv_indices[torch.from_numpy(idx).to(dev, non_blocking=True)]
        self.seq_lens = torch.from_numpy(len_h.copy()).to(dev, non_blocking=True)
        self.sm_scale = sm_scale
        self.page_size = page_size
        need = self.sm100.get_workspace_size(width * page_size, max(batch, 1),
                                             self.wrapper._sm_count, -1, page_size)
        if need > self.wrapper._float_ws_bytes:
            raise ValueError(f"float_workspace_buffer: the cutlass backend needs {need} bytes for "
                             f"this batch, got {self.wrapper._float_ws_bytes}")

    def run(self, q_nope, q_pe, ckv, kpe, out, lse, lse_base_e, stream):
        ws = self.wrapper._float_ws.view(torch.uint8)
        self.sm100.run(q_nope, q_pe, (ckv, kpe), self.seq_lens, self.page_table, ws,
                       self.sm_scale, -1, out=out, lse=lse, return_lse_base_on_e=lse_base_e)


def _make_impl(name: str, wrapper: BatchMLAPagedAttentionWrapper):
    if name == "sm80":
        return _PlannedKernel(name, wrapper)
    if name == "cutlass":
        return _CutlassKernel(name, wrapper)
    raise ValueError(f"backend {name!r} has no implementation")
