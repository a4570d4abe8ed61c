"""KernelSpec factories of the small kernel families (torch-free, so `warmup` stays fast).

  merge        merge_state / merge_state_v2 / merge_attn_states   (merge.cu.jinja)
  device_plan  GPU-side plans from device lengths (uniform / balanced)  (device_plan.cu.jinja)

The attention families keep their factories beside their launch code (backends/sm80.py,
backends/sm90.py, backends/cutlass.py), the host planner in planner.py.
"""
from __future__ import annotations

from .jit.env import normalize_arch
from .jit.spec import Export, KernelSpec

# ---------------------------------------------------------------------------------- merge
MERGE_DTYPE_NAMES = ("bf16", "fp16", "fp32")
# Both exports: (out, out_lse, a, a_lse, b, b_lse, num_tokens, num_heads, head_dim,
#   out/a/b (token, head) strides, out_lse/a_lse/b_lse (token, head) strides,
#   tokens_with_context, stream); strides in elements; out_lse may be NULL.
_MERGE_ARGS = ("ptr",) * 6 + ("i64",) * 3 + ("i64",) * 6 + ("i64",) * 6 + ("i64", "stream")
MERGE_BASE2 = "mlaw_merge_base2"    # LSE base 2
MERGE_BASE_E = "mlaw_merge_base_e"  # LSE natural log
_MERGE_EXPORTS = (Export(MERGE_BASE2, _MERGE_ARGS), Export(MERGE_BASE_E, _MERGE_ARGS))


def merge_spec(dtype_name: str, arch: str) -> KernelSpec:
    """The merge library for one value dtype ("bf16", "fp16", "fp32") and arch ("sm_90a",
    "9.0a", ...): name ``merge_<dtype>_<arch>``, exports mlaw_merge_base2/mlaw_merge_base_e."""
    if dtype_name not in MERGE_DTYPE_NAMES:
        raise ValueError(f"dtype_name: merge supports {', '.join(MERGE_DTYPE_NAMES)}, "
                         f"got {dtype_name!r}")
    return KernelSpec(family="merge", template="merge.cu.jinja", arch=normalize_arch(arch),
                      params=(("dtype", dtype_name),), exports=_MERGE_EXPORTS,
                      header_dirs=("common", "merge"))


# ---------------------------------------------------------------------------- device_plan
DEVICE_PLAN = "mlaw_device_plan"
_DEVICE_PLAN_ARGS = ("ptr",) * 6 + ("i32",) * 6 + ("i64", "i32", "stream")
# seq_lens, cta_work_indptr, work_info, request_info, merge_info, counts, scratch, memo (or
# NULL); batch, qo_len, num_heads, rows_per_tile, kv_tile, num_ctas, causal, fixed_units,
# allow_pairs; page_table_stride; pdl (1: a programmatic launch), stream
DEVICE_PLAN_BALANCED = "mlaw_device_plan_balanced"
_DEVICE_PLAN_BALANCED_ARGS = ("ptr",) * 8 + ("i32",) * 9 + ("i64", "i32", "stream")


_PLAN_IO_EXPORTS = (
    Export("mlaw_event_create", ("ptr",)),
    Export("mlaw_event_destroy", ("ptr",)),
    Export("mlaw_event_query", ("ptr",)),
    Export("mlaw_event_synchronize", ("ptr",)),
    Export("mlaw_plan_upload", ("ptr", "ptr", "i64", "ptr", "stream")),
)


def device_plan_spec(arch: str) -> KernelSpec:
    """GPU-side plans (include/mla_wrapper/common/device_plan.cuh: uniform splits;
    device_plan/balanced.cuh: balanced shares) and the plan upload helpers (async copy + event)
    the wrapper's plan() uses."""
    return KernelSpec(family="device_plan", template="device_plan.cu.jinja",
                      arch=normalize_arch(arch),
                      exports=(Export(DEVICE_PLAN, _DEVICE_PLAN_ARGS),
                               Export(DEVICE_PLAN_BALANCED, _DEVICE_PLAN_BALANCED_ARGS))
                      + _PLAN_IO_EXPORTS, header_dirs=("common", "device_plan"))


def warmup_specs(arch: str, dtypes: list[str]) -> list[KernelSpec]:
    """The merge and device-plan libraries for ``arch`` (dtypes such as ["bf16", "fp16"];
    unsupported ones are skipped)."""
    specs = [merge_spec(d, arch) for d in dict.fromkeys(dtypes) if d in MERGE_DTYPE_NAMES]
    return specs + [device_plan_spec(arch)]
