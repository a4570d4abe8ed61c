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

from typing import Optional

import numpy as np
import torch

from . import backends
from ._validate import check_tensor, device_index
from .backends.planned import apply_kv_scales

HEAD_DIM_CKV = 512
HEAD_DIM_KPE = 64
_INDEX_DTYPES = (torch.int32,)


def _current_device_getter():
    fast = getattr(torch._C, "_cuda_getDevice", None)
    return fast if fast is not None else torch.cuda.current_device


def _raw_stream_getter():
    fast = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if fast is not None:
        return fast
    return lambda index: torch.cuda.current_stream(index).cuda_stream


def _host_int32(name: str, t) -> np.ndarray:
    """A host int32 numpy view of an index array (one D2H copy if it lives on the device)."""
    if type(t) is torch.Tensor and t.dtype is torch.int32 and not t.is_cuda and t.dim() == 1:
        return t.numpy()
    if isinstance(t, np.ndarray):
        if t.dtype != np.int32:
            raise ValueError(f"{name}: expected dtype int32, got {t.dtype} (convert with .astype(np.int32))")
        if t.ndim != 1:
            raise ValueError(f"{name}: expected a 1-d array, got shape {t.shape} (pass .reshape(-1) "
                             "if it holds one value per request)")
        return t
    check_tensor(name, t, dtypes=_INDEX_DTYPES, ndim=1)
    if t.device.type != "cpu":
        t = t.cpu()
    return t.numpy()


def _to_host_once(qo_indptr, kv_indptr, kv_len_arr):
    """Device index tensors -> host tensors with ONE device-to-host copy (a sync)."""
    named = (("qo_indptr", qo_indptr), ("kv_indptr", kv_indptr), ("kv_len_arr", kv_len_arr))
    for name, t in named:
        check_tensor(name, t, dtypes=_INDEX_DTYPES, ndim=1)
    dev = next(t.device for _, t in named if t.is_cuda)
    host = torch.cat([t.to(dev, non_blocking=True) for _, t in named]).cpu()
    a, b = qo_indptr.numel(), kv_indptr.numel()
    return host[:a], host[a:a + b], host[a + b:]


class BatchMLAPagedAttentionWrapper:
    """MLA attention over a paged KV cache (decode and causal incremental prefill / MTP).

    Args:
        float_workspace_buffer: CUDA tensor (any dtype) of scratch memory for split-KV partial
            outputs; 128 MB is plenty (a too-small buffer raises at plan() with the size needed).
        use_cuda_graph: fixed-address buffers and a fixed grid so run() can be captured.
        qo_indptr, kv_indptr, kv_indices, kv_len_arr: with use_cuda_graph, the user's device
            buffers ([B+1], [B+1], [max_pages], [B] int32); B is the graph's batch capacity and
            kv_indices is the page-table buffer the captured kernel reads.
        backend: "auto" (default: cutlass on SM100, sm90 on SM90 unless MLA_WRAPPER_SM90=0,
            sm80 elsewhere; falls back with a log line where the preferred one cannot serve),
            "sm80" (alias "fa2"; any SM80+ GPU), "sm90" (Hopper only) or "cutlass" (Blackwell
            only): an explicit one that cannot serve raises. "fa3" follows "auto" (sm90 first
            where it is picked automatically).
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
        self._device_index = device_index(self.device)
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
        self._current_device = _current_device_getter()
        self._impl = None         # backend implementation object, made at the first plan()
        self._planned = None      # plan facts that run() checks (see plan())
        self._plan_config = None  # plan()'s validated scalar arguments
        self._backends = {}       # max_qo_len -> backend name, for _plan_config
        self._graph_config = None  # CUDA-graph mode: the scalars fixed by the first plan()

    # ------------------------------------------------------------------ plan
    def plan(self, qo_indptr: torch.Tensor, kv_indptr: torch.Tensor, kv_indices: torch.Tensor,
             kv_len_arr: torch.Tensor, num_heads: int, head_dim_ckv: int, head_dim_kpe: int,
             page_size: int, causal: bool, sm_scale: float, q_data_type: torch.dtype,
             kv_data_type: torch.dtype, use_profiler: bool = False) -> None:
        """Plan one step (host work; no device sync for host index tensors).

        qo_indptr [B+1] int32, starting at 0, non-decreasing: query tokens of request r are
            qo_indptr[r]:qo_indptr[r+1] (decode: arange(B+1)).
        kv_indptr [B+1] int32, non-decreasing: request r's pages are
            kv_indices[kv_indptr[r]:kv_indptr[r+1]].
        kv_indices [>= kv_indptr[-1]] int32 CUDA tensor: page ids, any order. Ids must be valid
            pages of the cache passed to run() (< ckv_cache.shape[0]): that is NOT checked
            (it would need a device sync, as in FlashInfer) unless MLA_WRAPPER_DEBUG_CHECKS=1,
            which makes run() read them back and raise on an out-of-range id.
        kv_len_arr [B] int32: KV tokens of each request (0 allowed).
        num_heads: 1..128; head_dim_ckv 512, head_dim_kpe 64; page_size 1..1024 (cutlass:
        power of two); causal: for qo_len > 1, query i sees KV tokens 0..kv_len - qo_len + i.
        sm_scale: softmax scale (DeepSeek: 1/sqrt(192)). q/kv data types: bf16 or fp16, the
        same; or kv_data_type torch.float8_e4m3fn (an fp8 cache, bf16/fp16 q; the sm90 kernel on
        Hopper only: run() takes its ckv_scale / kpe_scale).
        qo_indptr / kv_indptr / kv_len_arr may be host or device tensors: device ones cost one
        device-to-host copy (a sync), so serving loops should pass host copies.
        """
        if self._current_device() != self._device_index:
            with torch.cuda.device(self._device_index):   # our launchers use the current device
                return self.plan(qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads,
                                 head_dim_ckv, head_dim_kpe, page_size, causal, sm_scale,
                                 q_data_type, kv_data_type, use_profiler)
        causal = bool(causal)
        config = (num_heads, head_dim_ckv, head_dim_kpe, page_size, causal, q_data_type,
                  kv_data_type)
        if config != self._plan_config:
            self._check_plan_config(*config)
        if self._use_cuda_graph:
            self._check_graph_config(config + (float(sm_scale),))
        if not (type(kv_indices) is torch.Tensor and kv_indices.dtype is torch.int32
                and kv_indices.dim() == 1 and kv_indices.get_device() == self._device_index):
            check_tensor("kv_indices", kv_indices, dtypes=_INDEX_DTYPES, ndim=1, device=self.device)
            raise ValueError("kv_indices: unexpected layout")  # unreachable: check_tensor raised
        if any(isinstance(t, torch.Tensor) and t.is_cuda for t in (qo_indptr, kv_indptr, kv_len_arr)):
            qo_indptr, kv_indptr, kv_len_arr = _to_host_once(qo_indptr, kv_indptr, kv_len_arr)
        qo_h = _host_int32("qo_indptr", qo_indptr)
        kv_h = _host_int32("kv_indptr", kv_indptr)
        len_h = _host_int32("kv_len_arr", kv_len_arr)
        batch = len_h.shape[0]
        if qo_h.shape[0] != batch + 1 or kv_h.shape[0] != batch + 1:
            raise ValueError(f"qo_indptr / kv_indptr: expected [{batch + 1}] entries for "
                             f"kv_len_arr's batch of {batch}, got {qo_h.shape[0]} / {kv_h.shape[0]}")
        if self._graph_capacity is not None and batch > self._graph_capacity:
            raise ValueError(f"batch size {batch} exceeds the CUDA-graph capacity "
                             f"{self._graph_capacity} set at construction (qo_indptr buffer of "
                             f"{self._graph_capacity + 1}); make a wrapper with larger buffers")
        num_kv_indices = kv_indices.numel()
        if batch and (qo_h[0] != 0 or kv_h[-1] > num_kv_indices or kv_h[0] < 0):
            _check_index_bounds(qo_h, kv_h, num_kv_indices)
        self._debug_pages = (kv_indices, int(kv_h[0]), int(kv_h[-1])) \
            if batch and _debug_checks() else None
        num_tokens = int(qo_h[-1]) if batch else 0
        # The backend depends on the query lengths only where the cutlass backend may serve
        # (decode only): skip that scan elsewhere.
        max_qo_len = int(np.diff(qo_h).max()) if batch and self._capability[0] == 10 else 1
        name = self._backend_for(max_qo_len)
        if self._impl is None or self._impl.name != name:
            self._impl = backends.make_impl(name, self)
        if self._use_cuda_graph:
            kv_indices = self._stage_graph_kv_indices(kv_indices)
        self._impl.plan(qo_h, kv_h, len_h, kv_indices, num_heads, page_size, causal,
                        float(sm_scale), q_data_type, kv_data_type)
        self._planned = (num_tokens, num_heads, q_data_type, kv_data_type, page_size,
                         torch.Size((num_tokens, num_heads, HEAD_DIM_CKV)),
                         torch.Size((num_tokens, num_heads, HEAD_DIM_KPE)))

    def _check_plan_config(self, num_heads, head_dim_ckv, head_dim_kpe, page_size, causal,
                           q_data_type, kv_data_type) -> None:
        """Validate plan()'s scalar arguments (once per configuration, not per step)."""
        if head_dim_ckv != HEAD_DIM_CKV:
            raise ValueError(f"head_dim_ckv: expected {HEAD_DIM_CKV}, got {head_dim_ckv}")
        if head_dim_kpe != HEAD_DIM_KPE:
            raise ValueError(f"head_dim_kpe: expected {HEAD_DIM_KPE}, got {head_dim_kpe}")
        if not isinstance(num_heads, int) or not 1 <= num_heads <= 128:
            raise ValueError(f"num_heads: expected an int in 1..128, got {num_heads!r}")
        if not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size: expected a positive int, got {page_size!r}")
        if q_data_type not in (torch.bfloat16, torch.float16):
            raise ValueError(f"q_data_type: expected torch.bfloat16 or torch.float16, got "
                             f"{q_data_type}")
        if kv_data_type not in (torch.bfloat16, torch.float16, torch.float8_e4m3fn):
            raise ValueError(f"kv_data_type: expected torch.bfloat16, torch.float16 or "
                             f"torch.float8_e4m3fn (sm90), got {kv_data_type}")
        self._plan_config = (num_heads, head_dim_ckv, head_dim_kpe, page_size, causal,
                             q_data_type, kv_data_type)
        self._backends = {}

    def _check_graph_config(self, config: tuple) -> None:
        """A captured graph bakes in the scalars of the plan it was captured with (heads, page
        size, causal, dtypes, sm_scale): later plans of a CUDA-graph wrapper must keep them."""
        if self._graph_config is None:
            self._graph_config = config
        elif config != self._graph_config:
            names = ("num_heads", "head_dim_ckv", "head_dim_kpe", "page_size", "causal",
                     "q_data_type", "kv_data_type", "sm_scale")
            diff = [f"{n}: {a!r} -> {b!r}" for n, a, b in zip(names, self._graph_config, config)
                    if a != b]
            raise ValueError("use_cuda_graph=True: " + ", ".join(diff) + " changed since the "
                             "first plan(); these are fixed for a CUDA-graph wrapper (make one "
                             "wrapper per configuration)")

    def _backend_for(self, max_qo_len: int) -> str:
        """The backend for the current configuration (resolved once per config and qo shape)."""
        name = self._backends.get(max_qo_len)
        if name is None:
            num_heads, _, _, page_size, causal, q_dt, kv_dt = self._plan_config
            problem = backends.Problem(num_heads, page_size, q_dt, kv_dt, max_qo_len, causal,
                                       self._use_cuda_graph)
            name = self._backends[max_qo_len] = backends.resolve(self._backend_request, problem,
                                                                 self.device)
        return name

    def _stage_graph_kv_indices(self, kv_indices):
        """The captured kernels read page ids from the kv_indices buffer given at construction:
        copy this step's into it (async, same stream) unless they are already there. The other
        construction buffers are accepted for FlashInfer compatibility; the plan itself lives
        in the wrapper's int workspace at a fixed address."""
        buf = self._user_bufs["kv_indices"]
        if kv_indices.data_ptr() != buf.data_ptr():
            n = kv_indices.numel()
            if n > buf.numel():
                raise ValueError(f"kv_indices: {n} entries exceed the CUDA-graph kv_indices "
                                 f"buffer of {buf.numel()} given at construction")
            buf[:n].copy_(kv_indices, non_blocking=True)
        return buf

    # ------------------------------------------------------------------- run
    def run(self, q_nope: torch.Tensor, q_pe: torch.Tensor, ckv_cache: torch.Tensor,
            kpe_cache: torch.Tensor, out: Optional[torch.Tensor] = None,
            lse: Optional[torch.Tensor] = None, return_lse: bool = False,
            profiler_buffer: Optional[torch.Tensor] = None, kv_len: Optional[torch.Tensor] = None,
            page_table: Optional[torch.Tensor] = None, return_lse_base_on_e: bool = False,
            *, ckv_scale: Optional[float] = None, kpe_scale: Optional[float] = None):
        """Attention for the planned batch (launches on the current stream; capturable).

        q_nope [T, H, 512], q_pe [T, H, 64] (T = qo_indptr[-1]); ckv_cache [P, page_size, 512],
        kpe_cache [P, page_size, 64] (separate tensors or two views of one [P, page_size, 576]
        buffer; never copied); out [T, H, 512] (q's dtype), lse [T, H] float32.
        An fp8 cache (planned with kv_data_type=torch.float8_e4m3fn): float8_e4m3fn caches whose
        token and page strides are multiples of 16 elements; ckv_scale / kpe_scale (Python
        floats, finite, > 0; default 1.0) give real value = stored value x scale (FlashInfer's
        names and meaning); a captured graph keeps the scales of its capture.
        Returns out, or (out, lse) with return_lse. lse is base 2 (FlashInfer's convention);
        return_lse_base_on_e=True gives natural log. Rows with no visible KV: o = 0, lse = -inf.
        kv_len / page_table / profiler_buffer are accepted for FlashInfer compatibility and unused.
        """
        if torch.compiler.is_compiling():   # traced as torch.ops.mla_wrapper.run (torch_ops.py)
            from .torch_ops import run as op_run  # noqa: PLC0415
            return op_run(self, q_nope, q_pe, ckv_cache, kpe_cache, out, lse, return_lse,
                          return_lse_base_on_e, ckv_scale, kpe_scale)
        p = self._planned
        if p is None:
            raise RuntimeError("run() called before plan(): call wrapper.plan(...) for this batch first")
        T, H, dtype, kv_dtype, ps, o_shape, pe_shape = p
        dev = self._device_index
        if self._current_device() != dev:
            with torch.cuda.device(dev):   # our launchers use the current device
                return self.run(q_nope, q_pe, ckv_cache, kpe_cache, out, lse, return_lse,
                                profiler_buffer, kv_len, page_table, return_lse_base_on_e,
                                ckv_scale=ckv_scale, kpe_scale=kpe_scale)
        # Fast path: one stride() tuple per tensor serves both the check and the launch; the
        # slow path (check_tensor) only runs to name what is wrong.
        try:
            qn_st, qp_st = q_nope.stride(), q_pe.stride()
            ckv_st, kpe_st = ckv_cache.stride(), kpe_cache.stride()
        except (AttributeError, TypeError):
            for name, t in (("q_nope", q_nope), ("q_pe", q_pe), ("ckv_cache", ckv_cache),
                            ("kpe_cache", kpe_cache)):
                check_tensor(name, t)
            raise
        if not (q_nope.dtype is dtype and q_nope.shape == o_shape and qn_st[-1] == 1
                and q_pe.dtype is dtype and q_pe.shape == pe_shape and qp_st[-1] == 1
                and q_nope.get_device() == dev and q_pe.get_device() == dev):
            _check_run_tensor("q_nope", q_nope, dtype, (T, H, HEAD_DIM_CKV), self.device)
            _check_run_tensor("q_pe", q_pe, dtype, (T, H, HEAD_DIM_KPE), self.device)
        if not (_fits_cache(ckv_cache, kv_dtype, ps, HEAD_DIM_CKV, dev) and ckv_st[-1] == 1
                and _fits_cache(kpe_cache, kv_dtype, ps, HEAD_DIM_KPE, dev) and kpe_st[-1] == 1):
            _check_cache("ckv_cache", ckv_cache, kv_dtype, ps, HEAD_DIM_CKV, self.device)
            _check_cache("kpe_cache", kpe_cache, kv_dtype, ps, HEAD_DIM_KPE, self.device)
        if out is None:
            out = torch.empty(o_shape, dtype=dtype, device=self.device)
            out_st = out.stride()
        else:
            out_st = out.stride()
            if not (out.dtype is dtype and out.shape == o_shape and out_st[-1] == 1
                    and out.get_device() == dev):
                _check_run_tensor("out", out, dtype, (T, H, HEAD_DIM_CKV), self.device)
        if return_lse or lse is not None:
            if lse is None:
                lse = torch.empty((T, H), dtype=torch.float32, device=self.device)
            elif not (lse.dtype is torch.float32 and lse.shape == o_shape[:2]
                      and lse.get_device() == dev and lse.stride(-1) == 1):
                check_tensor("lse", lse, dtypes=(torch.float32,), shape=(T, H), device=self.device,
                             last_dim_contiguous=True)
        apply_kv_scales(self._impl, kv_dtype is torch.float8_e4m3fn, kv_dtype, ckv_scale,
                        kpe_scale)
        if self._debug_pages is not None:    # MLA_WRAPPER_DEBUG_CHECKS=1 (syncs)
            check_page_ids(*self._debug_pages, min(ckv_cache.shape[0], kpe_cache.shape[0]))
        self._impl.run(q_nope, q_pe, ckv_cache, kpe_cache, out, lse, return_lse_base_on_e,
                       self._stream(dev), (qn_st, qp_st, ckv_st, kpe_st, out_st))
        return (out, lse) if return_lse else out


def _check_index_bounds(qo_h: np.ndarray, kv_h: np.ndarray, num_kv_indices: int) -> None:
    """plan()'s host-side bounds checks (no device sync): the kernels index q / out by the
    absolute qo_indptr[r] and kv_indices by the absolute kv_indptr[r], so qo_indptr must start
    at 0 (q / out have qo_indptr[-1] rows) and kv_indices must hold kv_indptr[-1] entries.
    Monotonicity, page counts against kv_len_arr and int32 row totals are the planner's checks."""
    if qo_h[0] != 0:
        raise ValueError(f"qo_indptr: must start at 0 (q and out rows are indexed by "
                         f"qo_indptr[r]), got qo_indptr[0] = {int(qo_h[0])}; subtract "
                         f"qo_indptr[0] and pass q[qo_indptr[0]:] instead")
    if kv_h[0] < 0:
        raise ValueError(f"kv_indptr: first entry must be >= 0, got {int(kv_h[0])}")
    if kv_h[-1] > num_kv_indices:
        raise ValueError(f"kv_indices: kv_indptr[-1] = {int(kv_h[-1])} pages are referenced "
                         f"but kv_indices has {num_kv_indices} entries")


def _debug_checks() -> bool:
    from .jit.env import debug_checks  # noqa: PLC0415

    return debug_checks()


def check_page_ids(kv_indices: torch.Tensor, start: int, end: int, num_pages: int) -> None:
    """MLA_WRAPPER_DEBUG_CHECKS=1: page ids kv_indices[start:end] must lie in [0, num_pages)
    (the cache's dim 0). Reads them back from the device: a sync, so debug only."""
    used = kv_indices[start:end]
    if used.numel() == 0:
        return
    lo, hi = int(used.min()), int(used.max())
    if lo < 0 or hi >= num_pages:
        bad = lo if lo < 0 else hi
        raise ValueError(f"kv_indices: page id {bad} is outside the cache's {num_pages} pages "
                         f"(ckv_cache / kpe_cache dim 0); checked because "
                         f"MLA_WRAPPER_DEBUG_CHECKS is set")


def _fits_cache(t, dtype, page_size, dim, dev) -> bool:
    """Fast check of a cache view (details come from _check_cache when it fails)."""
    shape = t.shape
    return (t.dtype is dtype and len(shape) == 3 and shape[1] == page_size and shape[2] == dim
            and t.get_device() == dev)


def _check_run_tensor(name, t, dtype, shape, device):
    check_tensor(name, t, dtypes=(dtype,), shape=shape, device=device, last_dim_contiguous=True)


def _check_cache(name, t, dtype, page_size, dim, device):
    if not isinstance(t, torch.Tensor) or t.dtype != dtype or t.dim() != 3 or t.shape[1] != page_size \
            or t.shape[2] != dim or t.device != device or t.stride(-1) != 1:
        if isinstance(t, torch.Tensor) and t.dim() == 3 and t.shape[1] != page_size:
            raise ValueError(f"{name}: page size {t.shape[1]} (dim 1) differs from the planned "
                             f"page_size {page_size}")
        check_tensor(name, t, dtypes=(dtype,), shape=(None, page_size, dim), device=device,
                     last_dim_contiguous=True)
