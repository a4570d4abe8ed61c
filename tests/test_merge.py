"""Merge ops: merge_state / merge_state_v2 (sgl-kernel) and merge_attn_states (vLLM).

CPU: argument validation (fires before any kernel is loaded), spec names, template rendering,
a compile-only build for sm_90a. GPU: every op against reference.merge_states in float64 on
fresh random data, outputs poisoned with NaN first.
"""
from __future__ import annotations

import ctypes
import math
import random

import pytest
import torch

from mla_wrapper import kernels, ops
from mla_wrapper.jit import render
from mla_wrapper.reference import merge_states, rel_error

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3, torch.float32: 1e-5}
# The LSE is computed and stored in float32 for every value dtype: rtol 1e-5 plus a 1e-5
# absolute floor for LSEs near 0 (float32 exp/log of the weights are good to ~2e-6 absolute).
LSE_TOL = 1e-5


# ------------------------------------------------------------------------------------------
# CPU: validation (kernel loading is forbidden, so every error must come first)
# ------------------------------------------------------------------------------------------

@pytest.fixture
def no_kernel(monkeypatch):
    def forbidden(spec):
        raise AssertionError(f"validation must fail before loading {spec.name}")
    monkeypatch.setattr(ops, "load", forbidden)


def _cpu_states(n=4, h=3, d=8, dtype=torch.bfloat16):
    return (torch.randn(n, h, d).to(dtype), torch.randn(n, h),
            torch.randn(n, h, d).to(dtype), torch.randn(n, h))


@pytest.mark.parametrize("fn", [ops.merge_state, ops.merge_state_v2])
def test_merge_state_validation(fn, no_kernel):
    v_a, s_a, v_b, s_b = _cpu_states()
    cases = [
        ("v_a", dict(v_a=v_a.int())),
        ("v_a", dict(v_a=v_a[0])),                                   # 2-d
        ("v_b", dict(v_b=v_b.half())),                               # dtype differs from v_a
        ("v_b", dict(v_b=torch.randn(4, 3, 9).bfloat16())),          # shape differs
        ("s_a", dict(s_a=torch.zeros(4, 3, dtype=torch.int32))),
        ("s_a", dict(s_a=torch.randn(3, 4))),                        # [H, N] instead of [N, H]
        ("s_b", dict(s_b=torch.randn(4, 3, 1))),
        ("v_a", dict(v_a=torch.randn(4, 3, 16).bfloat16()[..., ::2])),  # last dim strided
        ("v_b", dict(v_b=torch.randn(4, 8, 3).bfloat16().transpose(1, 2))),
        ("v_merged", dict(v_merged=torch.empty(4, 3, 8, dtype=torch.float16))),
        ("v_merged", dict(v_merged=torch.empty(4, 3, 7, dtype=torch.bfloat16))),
        ("s_merged", dict(s_merged=torch.empty(4, 3, dtype=torch.float16))),
        ("s_merged", dict(s_merged=torch.empty(3, 4))),
        ("v_a", dict()),                                             # all fine but on the CPU
    ]
    for name, override in cases:
        args = dict(v_a=v_a, s_a=s_a, v_b=v_b, s_b=s_b, v_merged=None, s_merged=None)
        args.update(override)
        with pytest.raises(ValueError, match=rf"^{name}: "):
            fn(**args)


def test_merge_attn_states_validation(no_kernel):
    n, h, d = 5, 3, 8
    out = torch.empty(n, h, d, dtype=torch.float16)
    p, s = torch.randn(n, h, d).half(), torch.randn(n, h, d).half()
    p_lse, s_lse = torch.randn(h, n), torch.randn(h, n)
    cases = [
        ("output", dict(output=out.to(torch.float64))),
        ("output", dict(output=torch.empty(n, 2 * h, d).half()[:, :, ::2][..., :d // 2])),
        ("prefix_output", dict(prefix_output=p.bfloat16())),
        ("suffix_output", dict(suffix_output=torch.randn(n, h, d + 1).half())),
        ("prefix_lse", dict(prefix_lse=torch.randn(n, h))),          # [N, H]: vLLM wants [H, N]
        ("suffix_lse", dict(suffix_lse=s_lse.half())),               # must be float32
        ("output_lse", dict(output_lse=torch.empty(n, h))),
        ("output_lse", dict(output_lse=torch.empty(h, n, dtype=torch.float64))),
        ("prefill_tokens_with_context", dict(prefill_tokens_with_context=-1)),
        ("prefill_tokens_with_context", dict(prefill_tokens_with_context=2.5)),
        ("output", dict()),                                          # CPU tensors
    ]
    for name, override in cases:
        args = dict(output=out, prefix_output=p, prefix_lse=p_lse, suffix_output=s,
                    suffix_lse=s_lse, output_lse=None, prefill_tokens_with_context=None)
        args.update(override)
        with pytest.raises(ValueError, match=rf"^{name}: "):
            ops.merge_attn_states(**args)


@pytest.mark.gpu
def test_mixed_devices_rejected(no_kernel):
    v_a, s_a, v_b, s_b = (t.cuda() for t in _cpu_states())
    with pytest.raises(ValueError, match=r"^s_b: expected a CUDA tensor"):
        ops.merge_state(v_a, s_a, v_b, s_b.cpu())


# ------------------------------------------------------------------------------------------
# CPU: specs, rendering, compile-only build
# ------------------------------------------------------------------------------------------

def test_merge_spec_names():
    assert ops.merge_spec("bf16", "sm_90a").name == "merge_bf16_sm_90a"
    assert ops.merge_spec("fp32", "9.0a") == ops.merge_spec("fp32", "sm_90a")
    assert [s.name for s in kernels.warmup_specs("sm_100a", ["bf16", "fp16", "bf16", "fp8_e4m3"])] \
        == ["merge_bf16_sm_100a", "merge_fp16_sm_100a", "device_plan_sm_100a"]
    with pytest.raises(ValueError, match="dtype_name"):
        ops.merge_spec("fp8_e4m3", "sm_90a")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a", "sm_100a"])
@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
def test_merge_template_renders(dtype, arch):
    spec = ops.merge_spec(dtype, arch)
    source = render(spec)
    ctype = {"bf16": "__nv_bfloat16", "fp16": "__half", "fp32": "float"}[dtype]
    for export in spec.exports:
        assert f"MLAW_EXPORT int {export.name}(" in source
    assert f"launch_merge_states<{ctype}, false>" in source
    assert f"launch_merge_states<{ctype}, true>" in source
    assert '#include "mla_wrapper/merge/merge_ops.cuh"' in source
    # each export's C signature has one parameter per declared argument kind
    first = source.index("mlaw_merge_base2(")
    params = source[first:source.index(")", first)].count(",") + 1
    assert params == len(spec.exports[0].args)


@pytest.mark.compile
def test_merge_compiles_sm90a(tmp_path, monkeypatch):
    monkeypatch.setenv("MLA_WRAPPER_CACHE_DIR", str(tmp_path))
    from mla_wrapper.jit import build
    from mla_wrapper.jit.load import KernelModule

    spec = ops.merge_spec("bf16", "sm_90a")
    lib = build(spec)
    assert lib.is_file() and lib.parent.parent == tmp_path
    log = (lib.parent / "build.log").read_text()
    assert "spill" not in log.lower(), log
    # The launcher validates before touching CUDA, so it can be called without a GPU.
    mod = KernelModule(spec, lib)
    null = ctypes.c_void_p(None)
    args = [null] * 6 + [4, 2, 8] + [0] * 12
    status = mod.mlaw_merge_base2(*args, 5, null)     # tokens_with_context > num_tokens
    assert status < 0
    assert "tokens_with_context" in str(mod.error("mlaw_merge_base2", status))
    args[7] = -1                                      # num_heads
    assert mod.mlaw_merge_base_e(*args, 0, null) < 0
    args[7] = 2
    assert mod.mlaw_merge_base_e(*args, 0, null) < 0  # null pointers
    args[6] = 0                                       # nothing to do: success, no launch
    assert mod.mlaw_merge_base_e(*args, 0, null) == 0


# ------------------------------------------------------------------------------------------
# GPU
# ------------------------------------------------------------------------------------------

def _fresh_seed() -> int:
    return random.SystemRandom().randrange(1 << 31)


def _make_case(n, h, d, dtype, seed):
    """Random states with every kind of empty row. Returns (v_a, s_a, v_b, s_b, kinds) where
    kinds [N, H] is 0 normal, 1 a empty, 2 b empty, 3 a +inf, 4 b +inf, 5 both empty.
    Values of empty sides are NaN: they must not be read into the result."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    v_a = torch.randn(n, h, d, device="cuda", generator=g).to(dtype)
    v_b = torch.randn(n, h, d, device="cuda", generator=g).to(dtype)
    s_a = torch.randn(n, h, device="cuda", generator=g) * 4
    s_b = torch.randn(n, h, device="cuda", generator=g) * 4
    r = torch.rand(n, h, device="cuda", generator=g)
    kinds = torch.zeros(n, h, dtype=torch.int64, device="cuda")
    for kind, (lo, hi) in enumerate([(0.0, 0.0), (0.6, 0.68), (0.68, 0.76), (0.76, 0.82),
                                     (0.82, 0.88), (0.88, 1.0)]):
        if kind:
            kinds[(r >= lo) & (r < hi)] = kind
    if n * h >= 6:  # make sure each kind appears at least once
        kinds.view(-1)[:6] = torch.arange(6, device="cuda")
    inf = math.inf
    s_a[kinds == 1] = -inf
    s_b[kinds == 2] = -inf
    s_a[kinds == 3] = inf
    s_b[kinds == 4] = inf
    s_a[kinds == 5] = -inf
    s_b[kinds == 5] = inf
    a_empty = (kinds == 1) | (kinds == 3) | (kinds == 5)
    b_empty = (kinds == 2) | (kinds == 4) | (kinds == 5)
    v_a[a_empty] = float("nan")
    v_b[b_empty] = float("nan")
    return v_a, s_a, v_b, s_b, kinds


def _reference(v_a, s_a, v_b, s_b, base_e):
    """reference.merge_states on the same inputs with NaN (empty-side) values zeroed."""
    return merge_states(torch.nan_to_num(v_a.double()), s_a, torch.nan_to_num(v_b.double()),
                        s_b, base_e=base_e)


def _check_lse(s, ref_s, seed):
    assert rel_error(s, ref_s) != math.inf, f"lse: NaN or wrong infinities (seed {seed})"
    finite = torch.isfinite(ref_s)
    assert torch.allclose(s[finite].double(), ref_s[finite], rtol=LSE_TOL, atol=LSE_TOL), \
        f"lse: max abs error {(s[finite].double() - ref_s[finite]).abs().max()} (seed {seed})"


def _check(v, s, ref_v, ref_s, kinds, dtype, seed):
    err_v = rel_error(v, ref_v)
    assert err_v < TOL[dtype], f"values: rel error {err_v} (seed {seed})"
    _check_lse(s, ref_s, seed)
    both = kinds == 5
    assert torch.all(v[both] == 0), f"both-empty rows must be exactly 0 (seed {seed})"
    assert torch.all(torch.isneginf(s[both])), f"both-empty LSE must be -inf (seed {seed})"


@pytest.mark.gpu
@pytest.mark.parametrize("base_e", [False, True], ids=["base2", "base_e"])
@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=list(DTYPES))
@pytest.mark.parametrize("d", [3, 64, 100, 512])
@pytest.mark.parametrize("h", [1, 16, 128])
@pytest.mark.parametrize("n", [1, 7, 1000])
def test_merge_state_grid(n, h, d, dtype, base_e, poison):
    seed = _fresh_seed()
    v_a, s_a, v_b, s_b, kinds = _make_case(n, h, d, dtype, seed)
    fn = ops.merge_state_v2 if base_e else ops.merge_state
    v_out = poison(torch.empty(n, h, d, dtype=dtype, device="cuda"))
    s_out = poison(torch.empty(n, h, device="cuda"))
    v, s = fn(v_a, s_a, v_b, s_b, v_out, s_out)
    assert v is v_out and s is s_out
    ref_v, ref_s = _reference(v_a, s_a, v_b, s_b, base_e)
    _check(v, s, ref_v, ref_s, kinds, dtype, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("base_e", [False, True], ids=["base2", "base_e"])
@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=list(DTYPES))
def test_merge_state_allocates_and_converts_lse(dtype, base_e):
    seed = _fresh_seed()
    n, h, d = 33, 16, 512
    v_a, s_a, v_b, s_b, kinds = _make_case(n, h, d, dtype, seed)
    s_a16, s_b64 = s_a.bfloat16(), s_b.double()    # any float dtype for s
    fn = ops.merge_state_v2 if base_e else ops.merge_state
    v, s = fn(v_a, s_a16, v_b, s_b64)
    assert v.dtype == dtype and v.shape == (n, h, d)
    assert s.dtype == torch.float32 and s.shape == (n, h) and s.is_contiguous()
    ref_v, ref_s = _reference(v_a, s_a16, v_b, s_b64, base_e)
    _check(v, s, ref_v, ref_s, kinds, dtype, seed)


def test_plus_inf_and_empty_semantics_reference():
    """The reference the GPU tests use: +inf and -inf are empty, both empty is (0, -inf)."""
    v_a, v_b = torch.ones(1, 3, 2), 2 * torch.ones(1, 3, 2)
    s_a = torch.tensor([[math.inf, -math.inf, -math.inf]])
    s_b = torch.tensor([[0.5, 0.5, math.inf]])
    v, s = merge_states(v_a, s_a, v_b, s_b, base_e=True)
    assert torch.equal(v[0, 0], v_b[0, 0].double()) and s[0, 0] == 0.5
    assert torch.equal(v[0, 1], v_b[0, 1].double()) and s[0, 1] == 0.5
    assert torch.equal(v[0, 2], torch.zeros(2, dtype=torch.float64)) and s[0, 2] == -math.inf


def _padded_view(n, h, d, dtype, pad_h, pad_d, values=None):
    """(buffer, view): a [N, H, D] view of a NaN-filled bigger buffer, last dim contiguous,
    token/head strides padded, base pointer offset by pad_d elements."""
    buf = torch.full((n, h + pad_h, d + pad_d), float("nan"), dtype=dtype, device="cuda")
    view = buf[:, :h, pad_d:]
    if values is not None:
        view.copy_(values)
    return buf, view


@pytest.mark.gpu
@pytest.mark.parametrize("pad_d", [0, 1, 4, 8])
@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=list(DTYPES))
@pytest.mark.parametrize("d", [64, 100, 512])
def test_merge_state_strided_views(d, dtype, pad_d, poison):
    seed = _fresh_seed()
    n, h = 37, 16
    v_a, s_a, v_b, s_b, kinds = _make_case(n, h, d, dtype, seed)
    _, va_view = _padded_view(n, h, d, dtype, 1, pad_d, v_a)
    _, vb_view = _padded_view(n, h, d, dtype, 3, pad_d, v_b)
    out_buf, out_view = _padded_view(n, h, d, dtype, 2, pad_d)
    s_out = poison(torch.empty(h, n, device="cuda")).t()      # strided [N, H] output
    s_a_view = torch.empty(n, 2 * h, device="cuda")[:, ::2]
    s_a_view.copy_(s_a)
    v, s = ops.merge_state(va_view, s_a_view, vb_view, s_b.t().contiguous().t(), out_view, s_out)
    assert v is out_view and s is s_out
    ref_v, ref_s = _reference(v_a, s_a, v_b, s_b, base_e=False)
    _check(v, s, ref_v, ref_s, kinds, dtype, seed)
    # the padding around the view is untouched
    assert torch.isnan(out_buf[:, h:]).all() and torch.isnan(out_buf[..., :pad_d]).all()


@pytest.mark.gpu
@pytest.mark.parametrize("d", [17, 512, 2048])
def test_merge_state_in_place(d):
    """Outputs may be the inputs: v_merged = v_a and s_merged = s_a (or s_b)."""
    seed = _fresh_seed()
    v_a, s_a, v_b, s_b, kinds = _make_case(100, 16, d, torch.bfloat16, seed)
    ref_v, ref_s = _reference(v_a, s_a, v_b, s_b, base_e=True)
    v, s = ops.merge_state_v2(v_a, s_a, v_b, s_b, v_merged=v_a, s_merged=s_a)
    assert v is v_a and s is s_a
    _check(v, s, ref_v, ref_s, kinds, torch.bfloat16, seed)
    v_a, s_a, v_b, s_b, kinds = _make_case(100, 16, d, torch.bfloat16, seed + 1)
    ref_v, ref_s = _reference(v_a, s_a, v_b, s_b, base_e=False)
    v, s = ops.merge_state(v_a, s_a, v_b, s_b, v_merged=v_b, s_merged=s_b)
    _check(v, s, ref_v, ref_s, kinds, torch.bfloat16, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("context", ["none", "zero", "part", "over"])
@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=list(DTYPES))
@pytest.mark.parametrize("d", [3, 64, 100, 512])
@pytest.mark.parametrize("h", [1, 16, 128])
@pytest.mark.parametrize("n", [1, 7, 1000])
def test_merge_attn_states_grid(n, h, d, dtype, context, poison):
    seed = _fresh_seed()
    v_p, s_p, v_s, s_s, kinds = _make_case(n, h, d, dtype, seed)
    ptc = {"none": None, "zero": 0, "part": (n * 3) // 7, "over": n + 5}[context]
    merged = n if ptc is None else min(ptc, n)
    prefix_lse, suffix_lse = s_p.t().contiguous(), s_s.t().contiguous()   # vLLM: [H, N]
    output = poison(torch.empty(n, h, d, dtype=dtype, device="cuda"))
    output_lse = poison(torch.empty(h, n, device="cuda"))
    assert ops.merge_attn_states(output, v_p, prefix_lse, v_s, suffix_lse, output_lse,
                                 prefill_tokens_with_context=ptc) is None
    ref_v, ref_s = _reference(v_p, s_p, v_s, s_s, base_e=True)
    out_lse = output_lse.t()
    _check(output[:merged], out_lse[:merged], ref_v[:merged], ref_s[:merged], kinds[:merged],
           dtype, seed)
    # tokens without context: the suffix, bit for bit (NaN values and +/-inf LSEs included)
    copied_v, copied_s = output[merged:], out_lse[merged:]
    assert torch.equal(copied_v.contiguous().view(torch.uint8),
                       v_s[merged:].contiguous().view(torch.uint8)), f"seed {seed}"
    assert torch.equal(copied_s.contiguous().view(torch.int32),
                       s_s[merged:].contiguous().view(torch.int32)), f"seed {seed}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=list(DTYPES))
def test_merge_attn_states_strided_and_no_lse(dtype, poison):
    """Views with padded strides, lse as strided [H, N] views (no copies), output_lse None."""
    seed = _fresh_seed()
    n, h, d = 129, 16, 128
    v_p, s_p, v_s, s_s, kinds = _make_case(n, h, d, dtype, seed)
    _, p_view = _padded_view(n, h, d, dtype, 1, 8, v_p)
    _, s_view = _padded_view(n, h, d, dtype, 0, 2, v_s)
    _, out_view = _padded_view(n, h, d, dtype, 5, 1)
    prefix_lse = s_p.t()                                          # stride (1, H)
    suffix_lse = torch.empty(h, n + 3, device="cuda")[:, :n]      # stride (N + 3, 1)
    suffix_lse.copy_(s_s.t())
    ops.merge_attn_states(out_view, p_view, prefix_lse, s_view, suffix_lse)
    ref_v, _ = _reference(v_p, s_p, v_s, s_s, base_e=True)
    assert rel_error(out_view, ref_v) < TOL[dtype], f"seed {seed}"
    assert torch.all(out_view[kinds == 5] == 0)

    output_lse = poison(torch.empty(n, h, device="cuda")).t()      # strided [H, N] output
    ops.merge_attn_states(out_view, p_view, prefix_lse, s_view, suffix_lse, output_lse,
                          prefill_tokens_with_context=n // 2)
    _, ref_s = _reference(v_p, s_p, v_s, s_s, base_e=True)
    _check_lse(output_lse.t()[: n // 2], ref_s[: n // 2], seed)
    assert torch.equal(output_lse.t()[n // 2:], s_s[n // 2:])


@pytest.mark.gpu
def test_merge_empty_batch():
    v = torch.empty(0, 16, 512, dtype=torch.bfloat16, device="cuda")
    s = torch.empty(0, 16, device="cuda")
    out_v, out_s = ops.merge_state(v, s, v, s)
    assert out_v.shape == (0, 16, 512) and out_s.shape == (0, 16)
