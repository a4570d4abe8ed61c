"""The planned kernel families (sm80, sm90): what they share on the host.

Both families run the same plan (include/mla_wrapper/common/plan.h, built by our CPU planner)
and export the same C ABI from their JIT library::

    int mlaw_<family>_mla_run(const MlaPlan* plan, const MlaRunArgs* args, cudaStream_t stream)
    int mlaw_<family>_mla_config(int32_t out[8])   # rows_per_tile, kv_tile, 512, 64, smem,
                                                   # threads, kernel kv tile, stages

A family module (backends/sm80.py, backends/sm90.py) supplies ROWS_PER_TILE, KV_TILE,
CTAS_PER_SM, RUN_EXPORT and ``spec(dtype, arch, device=None)``, and takes its exports, dtype
names, problem checks, ``launch`` and ``kernel_config`` from a ``FamilyABI``.
``PlannedKernel`` is the wrapper's backend object for either family: planner -> pinned staging
slot -> one async copy into the int workspace -> the family's run export.

Torch-free at import time (warmup imports the family modules); torch is imported where a
wrapper needs it.
"""
from __future__ import annotations

import ctypes
import math
import struct

from ..jit.spec import Export

HEAD_DIM_CKV = 512
HEAD_DIM_KPE = 64
DTYPES = ("bf16", "fp16")
DTYPE_NAMES = {"bf16": "bf16", "bfloat16": "bf16", "torch.bfloat16": "bf16",
               "fp16": "fp16", "float16": "fp16", "half": "fp16", "torch.float16": "fp16"}
# An fp8 (e4m3) KV cache, for a family that widens it in its kernel (FamilyABI kv_fp8: sm90)
FP8_KV_NAMES = frozenset({"fp8_e4m3", "float8_e4m3fn", "torch.float8_e4m3fn", "e4m3"})
CONFIG_KEYS = ("rows_per_tile", "kv_tile", "head_dim_ckv", "head_dim_kpe", "smem_bytes",
               "threads", "kernel_kv_tile", "stages")


def is_fp8_kv(kv_dtype) -> bool:
    """Whether kv_dtype (a torch dtype or a name) names an fp8 e4m3 cache."""
    return kv_dtype is not None and str(kv_dtype) in FP8_KV_NAMES


def kv_scale(name: str, value) -> float:
    """An fp8 cache's scale as a float (None: 1.0); ValueError unless finite and > 0."""
    if value is None:
        return 1.0
    try:
        v = float(value)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"{name}: expected a float, got {value!r}") from None
    if not (v > 0.0 and math.isfinite(v)):
        raise ValueError(f"{name}: expected a finite scale > 0, got {v}")
    return v


def apply_kv_scales(impl, fp8_cache: bool, kv_dtype, ckv_scale, kpe_scale) -> None:
    """run()'s ckv_scale / kpe_scale (the dense and the sparse wrapper's): for an fp8 cache
    (fp8_cache) they go to impl, a PlannedKernel, for its next launch; given with a 16-bit cache
    (kv_dtype, the plan's) they raise, naming the argument."""
    if fp8_cache:
        impl.set_kv_scales(kv_scale("ckv_scale", ckv_scale), kv_scale("kpe_scale", kpe_scale))
    elif ckv_scale is not None or kpe_scale is not None:
        raise ValueError(f"{'ckv_scale' if ckv_scale is not None else 'kpe_scale'}: applies "
                         f"to an fp8 cache only (this plan's kv_data_type is {kv_dtype}); "
                         "leave it None")


class FamilyABI:
    """The exports, dtype names, problem limits, launch and config query of one planned family."""

    def __init__(self, family: str, max_heads: int = 128, kv_fp8: bool = False):
        self.family = family
        self.max_heads = max_heads
        self.kv_fp8 = kv_fp8   # its kernel also reads an fp8 (e4m3) cache with 16-bit queries
        self.run_export = f"mlaw_{family}_mla_run"
        self.config_export = f"mlaw_{family}_mla_config"
        self.exports = (Export(self.run_export, ("ptr", "ptr", "stream")),
                        Export(self.config_export, ("ptr",)))

    def interface(self):
        """(dtype_name, why_not, supports, launch, kernel_config): the functions a family
        module publishes under these names."""
        return self.dtype_name, self.why_not, self.supports, self.launch, self.kernel_config

    def dtype_name(self, dtype) -> str:
        """'bf16' / 'fp16' for a torch dtype or a name; ValueError otherwise."""
        name = DTYPE_NAMES.get(str(dtype))
        if name is None:
            raise ValueError(f"{self.family} MLA: dtype must be bf16 or fp16, got {dtype}")
        return name

    def why_not(self, num_heads: int, page_size: int, dtype, kv_dtype=None,
                head_dim_ckv: int = HEAD_DIM_CKV, head_dim_kpe: int = HEAD_DIM_KPE) -> str | None:
        """None when the family's kernel serves this problem (any page size, causal or not),
        else the reason (for logs / errors)."""
        kv_dtype = dtype if kv_dtype is None else kv_dtype
        if DTYPE_NAMES.get(str(dtype)) is None:
            return f"dtype {dtype} is not bf16/fp16"
        if is_fp8_kv(kv_dtype):
            if not self.kv_fp8:
                return (f"an fp8 (e4m3) KV cache is served by the sm90 kernel (Hopper) only, "
                        f"not {self.family}")
        elif DTYPE_NAMES.get(str(kv_dtype)) != DTYPE_NAMES.get(str(dtype)):
            return f"q dtype {dtype} differs from kv dtype {kv_dtype}"
        if (head_dim_ckv, head_dim_kpe) != (HEAD_DIM_CKV, HEAD_DIM_KPE):
            return (f"head dims must be ({HEAD_DIM_CKV}, {HEAD_DIM_KPE}), "
                    f"got ({head_dim_ckv}, {head_dim_kpe})")
        if not 1 <= num_heads <= self.max_heads:
            return f"num_heads {num_heads} is outside 1..{self.max_heads}"
        if page_size < 1:
            return f"page_size must be >= 1, got {page_size}"
        return None

    def supports(self, *args, **kwargs) -> bool:
        """Whether the family's kernel serves this problem (why_not's arguments)."""
        return self.why_not(*args, **kwargs) is None

    def launch(self, module, plan_struct_ptr: int, run_args_ptr: int, stream: int) -> None:
        """Run attention + combine; raises KernelError naming the kernel on a nonzero status.

        plan_struct_ptr / run_args_ptr: host addresses of MlaPlan / MlaRunArgs structs (they are
        read during the call only); stream: a cudaStream_t as int (0 = default stream).
        """
        status = getattr(module, self.run_export)(plan_struct_ptr, run_args_ptr, stream)
        if status != 0:
            raise module.error(self.run_export, status)

    def kernel_config(self, module) -> dict[str, int]:
        """The compiled kernel's constants (to check that the family module's mirror matches)."""
        buf = (ctypes.c_int32 * len(CONFIG_KEYS))()
        module.call(self.config_export, ctypes.addressof(buf))
        return dict(zip(CONFIG_KEYS, buf))


# MlaRunArgs starts with 7 pointers and 11 int64 strides (plan.h): run() writes all 18 words in
# one struct.pack_into call (cheaper than 18 ctypes field stores).
_pack_args = struct.Struct("=7Q11q").pack_into


def _capturing() -> bool:
    """Whether this thread's current stream is capturing a CUDA graph."""
    try:
        import torch  # noqa: PLC0415

        return torch.cuda.is_current_stream_capturing()
    except Exception:  # noqa: BLE001 (interpreter shutdown)
        return False


# Staging slots dropped while this thread was capturing a CUDA graph: (pinned tensor, io, event,
# in flight), released by the next plan_and_upload(). Releasing a slot waits for its last upload
# and destroys its event, calls that invalidate a capture in progress: the GPU suite's sparse
# graph tests failed when a wrapper of an earlier test was garbage-collected inside their
# capture (benchmarks/results/logs/sm90_s18_h100_2026-11-26, runs 12-21).
_DEFERRED: list = []


def _release(tensor, io, event, in_flight) -> None:
    del tensor  # (kept alive until its upload has completed)
    if in_flight:
        io.call("mlaw_event_synchronize", event)
    io.mlaw_event_destroy(event)


def _release_deferred() -> None:
    while _DEFERRED and not _capturing():
        _release(*_DEFERRED.pop())


class _StagingSlot:
    """One pinned host copy of the int workspace and the event of its last upload (a raw CUDA
    event made by the plan-upload library: cheaper to record and poll than torch's)."""

    def __init__(self, nelems: int, io):
        import torch  # noqa: PLC0415

        self.tensor = torch.empty(nelems, dtype=torch.int32, pin_memory=True)
        self.array = self.tensor.numpy()
        self.ptr = self.tensor.data_ptr()
        self.io = io
        handle = ctypes.c_void_p()
        io.call("mlaw_event_create", ctypes.addressof(handle))
        self.event = handle.value
        self.in_flight = False

    def busy(self) -> bool:
        if not self.in_flight:
            return False
        status = self.io.mlaw_event_query(self.event)
        if status > 1:
            raise self.io.error("mlaw_event_query", status)
        self.in_flight = status == 1
        return self.in_flight

    def wait(self) -> None:
        if self.in_flight:
            self.io.call("mlaw_event_synchronize", self.event)
            self.in_flight = False

    def __del__(self):
        try:
            if _capturing():  # no synchronizing calls inside a capture: released later
                _DEFERRED.append((self.tensor, self.io, self.event, self.in_flight))
            else:
                _release(self.tensor, self.io, self.event, self.in_flight)
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


# What belongs to one workspace layout (_ensure_layout keeps it per rows per tile).
_LAYOUT_STATE = ("layout", "int_ws", "int_ws_ptr", "slots", "next_slot", "plan_struct", "plan_ptr",
                 "planner", "planner_key")


class PlannedKernel:
    """A backend driven by our CPU planner (the sm80 and sm90 families): planner -> pinned
    staging slot -> one async copy into the int workspace -> the family's launcher reads
    MlaPlan/MlaRunArgs.

    Staging slots form a small ring: plan() takes a slot whose previous upload has completed
    (an event per slot, polled, never waited on while a free slot exists; a new slot is added
    when all are busy, up to MAX_SLOTS). So plan() does not block on the GPU, and a plan()
    issued while earlier copies or kernels are in flight corrupts nothing; the copy itself is
    stream-ordered after the kernels that read the previous plan.
    """

    # MTP / speculative decoding: query tokens per request the CUDA-graph layout makes room for
    GRAPH_TOKENS_PER_REQUEST = 8
    MAX_SLOTS = 8

    def __init__(self, name: str, wrapper, family):
        from .. import planner as planner_mod, workspace  # noqa: PLC0415
        from ..jit import load  # noqa: PLC0415
        from ..jit.env import device_arch  # noqa: PLC0415
        from ..kernels import device_plan_spec  # noqa: PLC0415

        self.name = name
        self.family = family
        self.wrapper = wrapper
        self._planner_mod = planner_mod
        self._workspace = workspace
        self.num_ctas = wrapper._sm_count * family.CTAS_PER_SM
        self.layout = None
        self._layouts = {}   # rows per tile -> the state of a layout not in use (_ensure_layout)
        self.planner = None
        self.planner_key = None
        self.int_ws = None
        self.slots: list[_StagingSlot] = []
        self.next_slot = 0
        self.plan_struct = None
        self.plan_ptr = 0
        self.args = workspace.MlaRunArgsStruct()
        self.args_ptr = ctypes.addressof(self.args)
        # plans reach the device by a copy (upload), never from the stream's previous kernel, so
        # sm90 may read them before its grid-dependency wait (plan.h MlaRunArgs::enable_pdl)
        from . import pdl_enabled  # noqa: PLC0415

        self.args.enable_pdl = 1 if pdl_enabled() else 0
        self.modules = {}
        self.fn = None
        self.module = None
        self.last_plan = None
        self.arch = device_arch(wrapper.device)
        self.io = load(device_plan_spec(self.arch))
        self.upload = self.io.mlaw_plan_upload
        self.kv_indices = None
        self.kv_indices_ptr = 0
        self.lse_base_e = 0
        self.num_pages = 0
        self.num_q_tokens = 0
        self.kv_scales = (1.0, 1.0)

    def _ensure_layout(self, batch: int, num_tokens: int, num_heads: int,
                       rows_per_tile: int | None = None) -> None:
        """A workspace layout for plans of rows_per_tile rows per tile (None: the family's
        ROWS_PER_TILE) that fits this batch: the current one, else a new one (never under a
        CUDA-graph capacity, whose layout the captured launches keep)."""
        import torch  # noqa: PLC0415

        ws = self._workspace
        w = self.wrapper
        R, K = rows_per_tile or self.family.ROWS_PER_TILE, self.family.KV_TILE
        layout = self.layout
        if layout is not None and layout.rows_per_tile != R and w._graph_capacity is None:
            # Plans of another tile size (sm90's tall plans, by batch): each size keeps its own
            # layout, int workspace and staging slots, so that batches alternating between them
            # cost no reallocation (the float workspace is shared: one stream runs them in turn).
            self._layouts[layout.rows_per_tile] = {k: getattr(self, k) for k in _LAYOUT_STATE}
            for k, v in self._layouts.pop(R, dict.fromkeys(_LAYOUT_STATE)).items():
                setattr(self, k, v)
            if self.slots is None:
                self.slots, self.next_slot = [], 0
            layout = self.layout
        same_tile = layout is not None and layout.rows_per_tile == R
        if same_tile and batch <= layout.max_batch and \
                ws.row_tiles_bound(batch, num_tokens, num_heads, R) <= layout.max_row_tiles:
            return
        if w._graph_capacity is not None:
            cap = w._graph_capacity
            if layout is not None:
                raise ValueError(
                    f"qo_indptr: {num_tokens} query tokens x {num_heads} heads exceed the "
                    f"CUDA-graph capacity of {cap} requests x {self.GRAPH_TOKENS_PER_REQUEST} "
                    "tokens set at construction")
            need = ws.WorkspaceLayout.for_batch(
                cap, max(cap * self.GRAPH_TOKENS_PER_REQUEST, num_tokens), 128, self.num_ctas, R, K)
        else:
            grow = 2 * layout.max_batch if layout is not None else 1
            need = ws.WorkspaceLayout.for_batch(max(batch, grow, 1), max(num_tokens, grow, 1),
                                                128, self.num_ctas, R, K)
        ws.check_float_workspace(need, w._float_ws_bytes)
        for slot in self.slots:         # old staging slots may still be read by a copy
            slot.wait()
        self.layout = need
        # Zeroed once (not per plan): the sm90 kernel's first-item guess may read a work record
        # past a small plan's items (unused; plan.h), which compute-sanitizer initcheck flags.
        self.int_ws = torch.zeros(need.int_workspace_bytes, dtype=torch.uint8, device=w.device)
        self.int_ws_ptr = self.int_ws.data_ptr()
        self.slots = [_StagingSlot(need.int_workspace_elems, self.io) for _ in range(2)]
        self.next_slot = 0
        self.plan_struct = ws.make_plan_struct(need, self.int_ws.data_ptr(), w._float_ws.data_ptr())
        self.plan_ptr = ctypes.addressof(self.plan_struct)
        self.planner = None

    def _free_slot(self) -> _StagingSlot:
        n = len(self.slots)
        for k in range(n):
            slot = self.slots[(self.next_slot + k) % n]
            if not slot.busy():
                self.next_slot = (self.next_slot + k + 1) % n
                return slot
        if n < self.MAX_SLOTS:
            slot = _StagingSlot(self.layout.int_workspace_elems, self.io)
            self.slots.append(slot)
            return slot
        slot = self.slots[self.next_slot]
        self.next_slot = (self.next_slot + 1) % n
        slot.wait()
        return slot

    def _planner_cost(self):
        """The family's planner cost model (``planner_cost()`` in its module), else the default.
        Cluster pairs only for a family whose kernel runs them (its PAIR_MERGE)."""
        fn = getattr(self.family, "planner_cost", None)
        cost = fn() if fn is not None else self._planner_mod.DEFAULT_COST
        if cost.pair_merge and not getattr(self.family, "PAIR_MERGE", False):
            raise ValueError(f"CostModel.pair_merge: the {self.name} kernels have no cluster pairs "
                             f"(only sm90's do); plan with pair_merge=False")
        return cost

    def rows_per_tile_for(self, batch: int, num_tokens: int, num_heads: int,
                          kv_dtype=None, kv_lens=None, qo_h=None) -> int:
        """Rows per tile of this family's plan for batch requests of num_tokens query tokens
        and kv_lens (host array) kv tokens, qo_h the host qo_indptr (its ``rows_per_tile_for``,
        else its ROWS_PER_TILE).
        A wrapper with a CUDA-graph capacity keeps its first plan's choice (the captured
        launches keep the kernel instance and the workspace layout, so _ensure_layout never
        changes it there), made for a batch of its capacity whatever its lengths."""
        fn = getattr(self.family, "rows_per_tile_for", None)
        if fn is None:
            return self.family.ROWS_PER_TILE
        cap = self.wrapper._graph_capacity
        if cap is not None and self.layout is not None:
            return self.layout.rows_per_tile
        return fn(num_heads, kv_dtype, batch=cap or batch, decode=num_tokens == batch,
                  num_ctas=self.num_ctas, kv_lens=None if cap else kv_lens, qo_indptr=qo_h)

    def plan(self, qo_h, kv_h, len_h, kv_indices, num_heads, page_size, causal, sm_scale, dtype,
             kv_dtype=None):
        batch = len_h.shape[0]
        num_tokens = int(qo_h[-1]) - int(qo_h[0]) if batch else 0
        R = self.rows_per_tile_for(batch, num_tokens, num_heads, kv_dtype, len_h, qo_h)
        self._ensure_layout(batch, num_tokens, num_heads, R)
        self.plan_and_upload(
            (num_heads, page_size, causal, R),
            lambda: self._planner_mod.Planner(self.layout, num_heads, page_size, causal,
                                              cost=self._planner_cost()),
            qo_h, kv_h, len_h)
        a = self.args
        # Keep the page table alive until the next plan(): run() reads it by address, and a
        # caller may pass a temporary (`kv_indices.to("cuda")` inline), whose memory the
        # caching allocator would otherwise hand to the next allocation (found on an H200:
        # an illegal address in tutorials/deepseek_mini.py's prefill).
        self.kv_indices = kv_indices
        self.kv_indices_ptr = kv_indices.data_ptr()
        a.num_heads = num_heads
        a.page_size = page_size
        a.sm_scale = sm_scale
        a.causal = int(causal)
        # an fp8 cache: its own library (only a kv_fp8 family gets one: backends.why_not)
        fp8 = {"kv_dtype": kv_dtype} if is_fp8_kv(kv_dtype) else {}
        self.use_module((dtype, "e4m3") if fp8 else dtype,
                        lambda: self.family.spec(dtype, self.arch, device=self.wrapper.device,
                                                 **fp8),
                        self.family.RUN_EXPORT)

    def plan_and_upload(self, planner_key, make_planner, qo_h, kv_h, len_h):
        """Plan into a free staging slot with the planner for planner_key (made by
        make_planner() when the key changes) and issue the slot's async upload into the int
        workspace on the wrapper's stream. Returns the planner's result."""
        if self.planner is None or self.planner_key != planner_key:
            self.planner = make_planner()
            self.planner_key = planner_key
        if _DEFERRED:
            _release_deferred()
        slot = self._free_slot()
        res = self.planner.plan(qo_h, kv_h, len_h, slot.array)
        w = self.wrapper
        status = self.upload(self.int_ws_ptr, slot.ptr, res.copy_bytes, slot.event,
                             w._stream(w._device_index))
        if status:
            raise self.io.error("mlaw_plan_upload", status)
        slot.in_flight = True
        if w._graph_capacity is None:
            # eager: size the combine grid to this plan (and skip it when nothing was split);
            # graphs keep the capacity so the captured grid covers any later plan
            self.plan_struct.max_merge_items = res.num_merge_items
        self.last_plan = res
        return res

    def set_kv_scales(self, ckv_scale: float, kpe_scale: float) -> None:
        """An fp8 cache's scales for the next run() (real value = stored value x scale)."""
        if (ckv_scale, kpe_scale) != self.kv_scales:
            self.kv_scales = (ckv_scale, kpe_scale)
            self.args.ckv_scale, self.args.kpe_scale = ckv_scale, kpe_scale

    def use_module(self, dtype, make_spec, run_export: str) -> None:
        """Make the kernel library for dtype (a key: a torch dtype, or (dtype, 'e4m3') for an
        fp8 cache; built from make_spec() on first use, then cached per key) the one run()
        launches through its run_export."""
        mod = self.modules.get(dtype)
        if mod is None:
            from ..jit import load  # noqa: PLC0415

            mod = self.modules[dtype] = load(make_spec())
        self.module = mod
        self.fn = getattr(mod, run_export)

    def run(self, q_nope, q_pe, ckv, kpe, out, lse, lse_base_e, stream, strides):
        qn, qp, ck, kp, o = strides
        if lse is None:
            lse_ptr, lse_stride = 0, 0
        else:
            lse_ptr, lse_stride = lse.data_ptr(), lse.stride(0)
        _pack_args(self.args, 0,
                   q_nope.data_ptr(), q_pe.data_ptr(), ckv.data_ptr(), kpe.data_ptr(), out.data_ptr(),
                   lse_ptr, self.kv_indices_ptr, qn[0], qn[1], qp[0], qp[1], ck[0], ck[1], kp[0],
                   kp[1], o[0], o[1], lse_stride)
        if lse_base_e != self.lse_base_e:
            self.lse_base_e = self.args.lse_base_e = 1 if lse_base_e else 0
        if ckv.shape[0] != self.num_pages:   # bounds of the cache for sm90's TMA tensor maps
            self.num_pages = self.args.num_pages = ckv.shape[0]
        if q_nope.shape[0] != self.num_q_tokens:   # bounds of q for sm90's Q tensor maps
            self.num_q_tokens = self.args.num_q_tokens = q_nope.shape[0]
        status = self.fn(self.plan_ptr, self.args_ptr, stream)
        if status:
            raise self.module.error(self.family.RUN_EXPORT, status)
