"""``torch.ops.mla_wrapper.*``: the library's GPU entry points as ``torch.library`` custom ops,
with fake (meta) implementations, so model code that calls them compiles with
``torch.compile(fullgraph=True)`` and ``mode="reduce-overhead"``.

Importing this module registers the ops (``import mla_wrapper`` alone stays torch-free)::

    import mla_wrapper.torch_ops as mla_ops

    wrapper = mla_wrapper.BatchMLAPagedAttentionWrapper(workspace, ...)
    mla_ops.register(wrapper)                       # once, eagerly: gives it an op handle

    @torch.compile(fullgraph=True)
    def attn(q_nope, q_pe, ckv, kpe):
        return wrapper.run(q_nope, q_pe, ckv, kpe)  # traced as torch.ops.mla_wrapper.run

    wrapper.plan(...)                               # eager, outside the compiled code
    out = attn(q_nope, q_pe, ckv, kpe)

Ops (schemas in ``_SCHEMAS``; mutated arguments are declared with ``(a!)``):

- ``run(handle, q_nope, q_pe, ckv_cache, kpe_cache, out!, lse!?, return_lse_base_on_e,
  ckv_scale?, kpe_scale?)``: the planned state of a wrapper travels as an int handle
  (``register(wrapper)``); out/lse are written in place (``mla_wrapper.torch_ops.run``
  allocates them when not given); the scales are an fp8 cache's (``wrapper.run``'s keywords).
- ``merge_state`` / ``merge_state_v2(v_a, s_a, v_b, s_b) -> (v, s)`` and the ``*_out``
  variants writing ``v_merged!`` / ``s_merged!``.
- ``merge_attn_states(output!, prefix_output, prefix_lse, suffix_output, suffix_lse,
  output_lse!?, prefill_tokens_with_context)``.
- ``cutlass_mla_decode(q_nope, q_pe, kv_c_and_k_pe_cache, seq_lens, page_table, workspace!,
  sm_scale, num_kv_splits) -> out``.

Inside ``torch.compile`` the wrapper's ``run()`` calls :func:`run` (it checks
``torch.compiler.is_compiling()``, ~0.1 us), so engines keep calling ``wrapper.run(...)``. In eager mode ``wrapper.run`` stays
the direct path: a custom op costs several microseconds of dispatcher work per call (see
``benchmarks/bench_host.py --torch-op``), so going through the op eagerly is opt-in
(call ``torch.ops.mla_wrapper.*`` or :func:`run` yourself).
"""
from __future__ import annotations

import itertools
import weakref
from typing import Optional, Tuple

import torch

from . import ops
from ._validate import check_tensor

__all__ = ["register", "handle_of", "unregister", "run", "merge_state", "merge_state_v2",
           "merge_attn_states", "cutlass_mla_decode"]

NAMESPACE = "mla_wrapper"
HEAD_DIM_CKV = 512
HEAD_DIM_KPE = 64
_ATTN_DTYPES = (torch.bfloat16, torch.float16)

_SCHEMAS = {
    "run": "run(int handle, Tensor q_nope, Tensor q_pe, Tensor ckv_cache, Tensor kpe_cache, "
           "Tensor(a!) out, Tensor(b!)? lse, bool return_lse_base_on_e=False, "
           "float? ckv_scale=None, float? kpe_scale=None) -> ()",
    "merge_state": "merge_state(Tensor v_a, Tensor s_a, Tensor v_b, Tensor s_b) -> (Tensor, Tensor)",
    "merge_state_out": "merge_state_out(Tensor v_a, Tensor s_a, Tensor v_b, Tensor s_b, "
                       "Tensor(a!) v_merged, Tensor(b!) s_merged) -> ()",
    "merge_state_v2": "merge_state_v2(Tensor v_a, Tensor s_a, Tensor v_b, Tensor s_b) "
                      "-> (Tensor, Tensor)",
    "merge_state_v2_out": "merge_state_v2_out(Tensor v_a, Tensor s_a, Tensor v_b, Tensor s_b, "
                          "Tensor(a!) v_merged, Tensor(b!) s_merged) -> ()",
    "merge_attn_states": "merge_attn_states(Tensor(a!) output, Tensor prefix_output, "
                         "Tensor prefix_lse, Tensor suffix_output, Tensor suffix_lse, "
                         "Tensor(b!)? output_lse=None, int? prefill_tokens_with_context=None) -> ()",
    "cutlass_mla_decode": "cutlass_mla_decode(Tensor q_nope, Tensor q_pe, "
                          "Tensor kv_c_and_k_pe_cache, Tensor seq_lens, Tensor page_table, "
                          "Tensor(a!) workspace, float sm_scale, int num_kv_splits=1) -> Tensor",
}

# ------------------------------------------------------------------------------------------
# wrapper handles: the op takes an int; this table maps it back to the (planned) wrapper
# ------------------------------------------------------------------------------------------

_WRAPPERS: "weakref.WeakValueDictionary[int, object]" = weakref.WeakValueDictionary()
_NEXT_HANDLE = itertools.count(1)
_HANDLE_ATTR = "_mla_torch_op_handle"


def register(wrapper) -> int:
    """Give ``wrapper`` (a ``BatchMLAPagedAttentionWrapper``) an int handle for
    ``torch.ops.mla_wrapper.run`` and return it (the same handle on later calls).

    Call it once, eagerly, before compiling code that calls ``wrapper.run``. The table holds
    the wrapper weakly: the handle dies with the wrapper. The op reads the wrapper's current
    plan when it runs, so re-planning needs no new handle.
    """
    if not callable(getattr(wrapper, "run", None)) or not callable(getattr(wrapper, "plan", None)):
        raise ValueError(f"wrapper: expected a BatchMLAPagedAttentionWrapper, got "
                         f"{type(wrapper).__name__}")
    handle = wrapper.__dict__.get(_HANDLE_ATTR)
    if handle is None or _WRAPPERS.get(handle) is not wrapper:
        handle = next(_NEXT_HANDLE)
        _WRAPPERS[handle] = wrapper
        setattr(wrapper, _HANDLE_ATTR, handle)
    return handle


def handle_of(wrapper) -> int:
    """The handle ``register(wrapper)`` gave; ValueError naming the fix if there is none."""
    handle = getattr(wrapper, _HANDLE_ATTR, None)
    if handle is None:
        raise ValueError("wrapper: not registered for torch.compile; call "
                         "mla_wrapper.torch_ops.register(wrapper) once, eagerly, before "
                         "compiling code that calls wrapper.run()")
    return handle


def unregister(wrapper) -> None:
    """Drop ``wrapper``'s handle (compiled code that baked it in then raises ValueError)."""
    handle = wrapper.__dict__.pop(_HANDLE_ATTR, None)
    if handle is not None:
        _WRAPPERS.pop(handle, None)


def _wrapper_for(handle: int):
    w = _WRAPPERS.get(handle)
    if w is None:
        raise ValueError(f"handle: no live wrapper is registered as {handle} (register it with "
                         "mla_wrapper.torch_ops.register(wrapper); handles die with the wrapper)")
    return w


def _eager_run(wrapper, q_nope, q_pe, ckv_cache, kpe_cache, out, lse, return_lse_base_on_e,
               ckv_scale=None, kpe_scale=None):
    """The direct path the op's real implementation calls (tests replace it on the CPU)."""
    wrapper.run(q_nope, q_pe, ckv_cache, kpe_cache, out=out, lse=lse,
                return_lse=lse is not None, return_lse_base_on_e=return_lse_base_on_e,
                ckv_scale=ckv_scale, kpe_scale=kpe_scale)


# ------------------------------------------------------------------------------------------
# checks shared by the fake implementations (they work on FakeTensors: no data, no launch)
# ------------------------------------------------------------------------------------------

def _check_run_args(q_nope, q_pe, ckv_cache, kpe_cache, out, lse) -> None:
    check_tensor("q_nope", q_nope, dtypes=_ATTN_DTYPES, ndim=3, last_dim_contiguous=True)
    T, H, d = q_nope.shape
    if d != HEAD_DIM_CKV:
        raise ValueError(f"q_nope: expected head dim {HEAD_DIM_CKV} (dim 2), got {d}")
    check_tensor("q_pe", q_pe, dtypes=(q_nope.dtype,), shape=(T, H, HEAD_DIM_KPE),
                 last_dim_contiguous=True)
    check_tensor("ckv_cache", ckv_cache, dtypes=_ATTN_DTYPES + (torch.float8_e4m3fn,),
                 shape=(None, None, HEAD_DIM_CKV),
                 last_dim_contiguous=True)
    check_tensor("kpe_cache", kpe_cache, dtypes=(ckv_cache.dtype,),
                 shape=(None, ckv_cache.shape[1], HEAD_DIM_KPE), last_dim_contiguous=True)
    check_tensor("out", out, dtypes=(q_nope.dtype,), shape=(T, H, HEAD_DIM_CKV),
                 last_dim_contiguous=True)
    if lse is not None:
        check_tensor("lse", lse, dtypes=(torch.float32,), shape=(T, H), last_dim_contiguous=True)


# ------------------------------------------------------------------------------------------
# real implementations (call the direct Python API) and fake implementations (shapes only)
# ------------------------------------------------------------------------------------------

def _run_impl(handle, q_nope, q_pe, ckv_cache, kpe_cache, out, lse, return_lse_base_on_e=False,
              ckv_scale=None, kpe_scale=None):
    wrapper = _wrapper_for(handle)
    if not getattr(wrapper, "_use_cuda_graph", True) and _capturing():
        # replays would keep reading this plan's arrays and grid: only a CUDA-graph wrapper's
        # fixed buffers follow later plan() calls
        raise ValueError("wrapper: run() is being captured in a CUDA graph (e.g. torch.compile "
                         "mode='reduce-overhead') but the wrapper was made without "
                         "use_cuda_graph=True; make it with use_cuda_graph=True and its index "
                         "buffers, or compile without CUDA graphs")
    _eager_run(wrapper, q_nope, q_pe, ckv_cache, kpe_cache, out, lse, return_lse_base_on_e,
               ckv_scale, kpe_scale)


def _capturing() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def _run_fake(handle, q_nope, q_pe, ckv_cache, kpe_cache, out, lse, return_lse_base_on_e=False,
              ckv_scale=None, kpe_scale=None):
    _check_run_args(q_nope, q_pe, ckv_cache, kpe_cache, out, lse)


def _merge_impl(base_e: bool):
    def impl(v_a, s_a, v_b, s_b):
        fn = ops.merge_state_v2 if base_e else ops.merge_state   # looked up per call
        return fn(v_a, s_a, v_b, s_b)

    def impl_out(v_a, s_a, v_b, s_b, v_merged, s_merged):
        fn = ops.merge_state_v2 if base_e else ops.merge_state   # looked up per call
        fn(v_a, s_a, v_b, s_b, v_merged, s_merged)

    return impl, impl_out


def _merge_fake(v_a, s_a, v_b, s_b):
    n, h, d = ops.check_merge_state_args(v_a, s_a, v_b, s_b)
    return v_a.new_empty((n, h, d)), v_a.new_empty((n, h), dtype=torch.float32)


def _merge_out_fake(v_a, s_a, v_b, s_b, v_merged, s_merged):
    ops.check_merge_state_args(v_a, s_a, v_b, s_b, v_merged, s_merged)


def _merge_attn_impl(output, prefix_output, prefix_lse, suffix_output, suffix_lse,
                     output_lse=None, prefill_tokens_with_context=None):
    ops.merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse,
                          output_lse, prefill_tokens_with_context)


def _merge_attn_fake(output, prefix_output, prefix_lse, suffix_output, suffix_lse,
                     output_lse=None, prefill_tokens_with_context=None):
    ops.check_merge_attn_args(output, prefix_output, prefix_lse, suffix_output, suffix_lse,
                              output_lse, prefill_tokens_with_context)


def _decode_impl(q_nope, q_pe, cache, seq_lens, page_table, workspace, sm_scale, num_kv_splits=1):
    return ops.cutlass_mla_decode(q_nope, q_pe, cache, seq_lens, page_table, workspace,
                                  sm_scale, num_kv_splits)


def _decode_fake(q_nope, q_pe, cache, seq_lens, page_table, workspace, sm_scale, num_kv_splits=1):
    ops.check_decode_args(q_nope, q_pe, cache, seq_lens, page_table)
    check_tensor("workspace", workspace, ndim=1)
    return q_nope.new_empty((q_nope.shape[0], q_nope.shape[1], HEAD_DIM_CKV))


_merge_v1, _merge_v1_out = _merge_impl(False)
_merge_v2, _merge_v2_out = _merge_impl(True)
_IMPLS = {
    "run": (_run_impl, _run_fake),
    "merge_state": (_merge_v1, _merge_fake),
    "merge_state_out": (_merge_v1_out, _merge_out_fake),
    "merge_state_v2": (_merge_v2, _merge_fake),
    "merge_state_v2_out": (_merge_v2_out, _merge_out_fake),
    "merge_attn_states": (_merge_attn_impl, _merge_attn_fake),
    "cutlass_mla_decode": (_decode_impl, _decode_fake),
}

# FRAGMENT: other modules (sparse ops) may add ops to the same namespace.
_LIB = torch.library.Library(NAMESPACE, "FRAGMENT")
for _name, _schema in _SCHEMAS.items():
    _LIB.define(_schema)
    _real, _fake = _IMPLS[_name]
    # CompositeExplicitAutograd: one kernel for every device (the direct API validates the
    # device and raises naming the argument); inference only, no autograd formula.
    _LIB.impl(_name, _real, "CompositeExplicitAutograd")
    torch.library.register_fake(f"{NAMESPACE}::{_name}", _fake, lib=_LIB)

_OPS = torch.ops.mla_wrapper


# ------------------------------------------------------------------------------------------
# Python entry points (compile-friendly: dynamo traces them into the ops)
# ------------------------------------------------------------------------------------------

def run(wrapper, q_nope: torch.Tensor, q_pe: torch.Tensor, ckv_cache: torch.Tensor,
        kpe_cache: torch.Tensor, out: Optional[torch.Tensor] = None,
        lse: Optional[torch.Tensor] = None, return_lse: bool = False,
        return_lse_base_on_e: bool = False, ckv_scale: Optional[float] = None,
        kpe_scale: Optional[float] = None):
    """``wrapper.run(...)`` through ``torch.ops.mla_wrapper.run`` (same arguments and result).

    Args:
        wrapper: a planned ``BatchMLAPagedAttentionWrapper`` registered with :func:`register`,
            or its int handle.
        q_nope [T, H, 512], q_pe [T, H, 64]: the planned dtype; contiguous last dim.
        ckv_cache [P, page_size, 512], kpe_cache [P, page_size, 64]: may be views of one
            [P, page_size, 576] buffer.
        out: optional [T, H, 512] in q's dtype; lse: optional [T, H] float32 (base 2 unless
            ``return_lse_base_on_e``). Missing ones are allocated (inside a compiled graph
            they are graph intermediates, which keeps ``mode="reduce-overhead"`` on CUDA graphs).

    Returns ``out`` or ``(out, lse)`` when ``return_lse``.
    """
    handle = wrapper if isinstance(wrapper, int) else handle_of(wrapper)
    if out is None:
        out = q_nope.new_empty((q_nope.shape[0], q_nope.shape[1], HEAD_DIM_CKV))
    if lse is None and return_lse:
        lse = q_nope.new_empty((q_nope.shape[0], q_nope.shape[1]), dtype=torch.float32)
    _OPS.run(handle, q_nope, q_pe, ckv_cache, kpe_cache, out, lse, return_lse_base_on_e,
             ckv_scale, kpe_scale)
    return (out, lse) if return_lse else out


def merge_state(v_a, s_a, v_b, s_b, v_merged=None, s_merged=None) -> Tuple[torch.Tensor, torch.Tensor]:
    """``mla_wrapper.merge_state`` (base-2 LSE; v [N, H, D], s [N, H]) through the op:
    ``merge_state`` when no outputs are given, else ``merge_state_out`` (both must be given:
    v_merged [N, H, D] in v_a's dtype and s_merged [N, H] float32)."""
    return _merge(_OPS.merge_state, _OPS.merge_state_out, v_a, s_a, v_b, s_b, v_merged, s_merged)


def merge_state_v2(v_a, s_a, v_b, s_b, v_merged=None, s_merged=None) -> Tuple[torch.Tensor, torch.Tensor]:
    """``mla_wrapper.merge_state_v2`` (natural-log LSE; v [N, H, D], s [N, H]) through the op;
    outputs as in :func:`merge_state`."""
    return _merge(_OPS.merge_state_v2, _OPS.merge_state_v2_out, v_a, s_a, v_b, s_b, v_merged,
                  s_merged)


def _merge(functional, out_variant, v_a, s_a, v_b, s_b, v_merged, s_merged):
    if v_merged is None and s_merged is None:
        return functional(v_a, s_a, v_b, s_b)
    if v_merged is None or s_merged is None:
        missing = "v_merged" if v_merged is None else "s_merged"
        raise ValueError(f"{missing}: give both v_merged and s_merged, or neither")
    out_variant(v_a, s_a, v_b, s_b, v_merged, s_merged)
    return v_merged, s_merged


def merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse,
                      output_lse=None, prefill_tokens_with_context=None) -> None:
    """``mla_wrapper.merge_attn_states`` (vLLM: natural-log LSE laid out [H, N]; output and
    the values [N, H, D]) through the op; writes ``output`` (and ``output_lse``) in place."""
    _OPS.merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse,
                           output_lse, prefill_tokens_with_context)


def cutlass_mla_decode(q_nope, q_pe, kv_c_and_k_pe_cache, seq_lens, page_table, workspace,
                       sm_scale: float, num_kv_splits: int = 1) -> torch.Tensor:
    """``mla_wrapper.cutlass_mla_decode`` through the op: q_nope [B, H, 512], q_pe [B, H, 64],
    kv_c_and_k_pe_cache [P, page_size, 576], seq_lens [B] int32, page_table [B, max_pages]
    int32, workspace (byte buffer, written). Returns out [B, H, 512] in q's dtype."""
    return _OPS.cutlass_mla_decode(q_nope, q_pe, kv_c_and_k_pe_cache, seq_lens, page_table,
                                   workspace, float(sm_scale), int(num_kv_splits))
