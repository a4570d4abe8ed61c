"""torch.ops.mla_wrapper.*: registration, fake implementations (FakeTensorMode), opcheck and
torch.compile(fullgraph=True) on the CPU, with the kernels replaced by the PyTorch reference;
on a GPU (marked) the real kernels under torch.compile fullgraph and mode="reduce-overhead".
"""
from __future__ import annotations

import math

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import mla_wrapper.ops as mla_ops_mod
from mla_wrapper import torch_ops
from mla_wrapper.reference import merge_states, mla_attention, rel_error
from mla_wrapper.wrapper import BatchMLAPagedAttentionWrapper

SM_SCALE = 1.0 / math.sqrt(192)
OP_NAMES = ("run", "merge_state", "merge_state_out", "merge_state_v2", "merge_state_v2_out",
            "merge_attn_states", "cutlass_mla_decode")
bf16 = torch.bfloat16


# ------------------------------------------------------------------ CPU stand-ins for kernels
def _cpu_run(w, q_nope, q_pe, ckv, kpe, out, lse, base_e, ckv_scale=None, kpe_scale=None):
    """What wrapper.run computes, from the reference (the planned batch lives on ``w``; an fp8
    cache is dequantized with its scales)."""
    o, l = mla_attention(q_nope, q_pe, ckv, kpe, w.qo_indptr, w.kv_indptr, w.kv_indices,
                         w.kv_len, ckv.shape[1], w.causal, SM_SCALE, ckv_scale=ckv_scale,
                         kpe_scale=kpe_scale)
    out.copy_(o.to(out.dtype))
    if lse is not None:
        lse.copy_(l * math.log(2.0) if base_e else l)


def _cpu_merge(base_e):
    def merge(v_a, s_a, v_b, s_b, v_merged=None, s_merged=None):
        v, s = merge_states(v_a, s_a, v_b, s_b, base_e=base_e)
        v, s = v.to(v_a.dtype), s.float()
        if v_merged is None:
            return v, s
        v_merged.copy_(v)
        s_merged.copy_(s)
        return v_merged, s_merged
    return merge


def _cpu_merge_attn(output, prefix_output, prefix_lse, suffix_output, suffix_lse,
                    output_lse=None, prefill_tokens_with_context=None):
    v, s = merge_states(prefix_output, prefix_lse.t(), suffix_output, suffix_lse.t(), base_e=True)
    n = output.shape[0] if prefill_tokens_with_context is None else prefill_tokens_with_context
    output.copy_(suffix_output)
    output[:n] = v[:n].to(output.dtype)
    if output_lse is not None:
        output_lse.copy_(suffix_lse)
        output_lse[:, :n] = s.t()[:, :n].float()


def _cpu_decode(q_nope, q_pe, cache, seq_lens, page_table, workspace, sm_scale, num_kv_splits=1):
    B, maxp = page_table.shape
    kv_indptr = torch.arange(B + 1, dtype=torch.int32) * maxp
    o, _ = mla_attention(q_nope, q_pe, cache[..., :512], cache[..., 512:],
                         torch.arange(B + 1), kv_indptr, page_table.reshape(-1), seq_lens,
                         cache.shape[1], False, sm_scale)
    workspace.zero_()   # the kernel writes its workspace: the op declares it mutated
    return o.to(q_nope.dtype)


@pytest.fixture
def cpu_kernels(monkeypatch):
    monkeypatch.setattr(torch_ops, "_eager_run", _cpu_run)
    monkeypatch.setattr(mla_ops_mod, "merge_state", _cpu_merge(False))
    monkeypatch.setattr(mla_ops_mod, "merge_state_v2", _cpu_merge(True))
    monkeypatch.setattr(mla_ops_mod, "merge_attn_states", _cpu_merge_attn)
    monkeypatch.setattr(mla_ops_mod, "cutlass_mla_decode", _cpu_decode)


def planned_cpu_wrapper(kv_lens=(5, 70), qo_len=1, page_size=16, heads=4, causal=False, seed=0):
    """A BatchMLAPagedAttentionWrapper instance (no CUDA: __init__ skipped) carrying a planned
    batch for _cpu_run, and its inputs."""
    g = torch.Generator().manual_seed(seed)
    w = object.__new__(BatchMLAPagedAttentionWrapper)
    B = len(kv_lens)
    w.kv_len = torch.tensor(kv_lens, dtype=torch.int32)
    pages = (w.kv_len + page_size - 1) // page_size
    w.kv_indptr = torch.cat([torch.zeros(1, dtype=torch.int32), pages.cumsum(0).int()])
    num_pages = int(w.kv_indptr[-1]) + 2
    w.kv_indices = torch.randperm(num_pages, generator=g)[: int(w.kv_indptr[-1])].int()
    w.qo_indptr = torch.arange(B + 1, dtype=torch.int32) * qo_len
    w.causal = causal
    cache = (torch.randn(num_pages, page_size, 576, generator=g) * 0.5).to(bf16)
    q = torch.randn(B * qo_len, heads, 576, generator=g).to(bf16)
    torch_ops.register(w)
    return w, q, cache


# ------------------------------------------------------------------ registration and fakes
def test_ops_are_registered():
    for name in OP_NAMES:
        assert hasattr(torch.ops.mla_wrapper, name), name
    schema = torch.ops.mla_wrapper.run.default._schema
    mutated = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    assert mutated == ["out", "lse"]
    schema = torch.ops.mla_wrapper.cutlass_mla_decode.default._schema
    assert [a.name for a in schema.arguments if a.alias_info and a.alias_info.is_write] == ["workspace"]


def test_fake_run_shapes_and_errors():
    with FakeTensorMode():
        q = torch.empty(3, 16, 576, dtype=bf16)
        cache = torch.empty(10, 64, 576, dtype=bf16)
        out = torch.empty(3, 16, 512, dtype=bf16)
        lse = torch.empty(3, 16, dtype=torch.float32)
        torch.ops.mla_wrapper.run(7, q[..., :512], q[..., 512:], cache[..., :512],
                                  cache[..., 512:], out, lse)
        with pytest.raises(ValueError, match=r"q_pe: expected shape \[3, 16, 64\]"):
            torch.ops.mla_wrapper.run(7, q[..., :512], q[:, :8, 512:], cache[..., :512],
                                      cache[..., 512:], out, None)
        with pytest.raises(ValueError, match="out: expected dtype bfloat16"):
            torch.ops.mla_wrapper.run(7, q[..., :512], q[..., 512:], cache[..., :512],
                                      cache[..., 512:], out.half(), None)
        with pytest.raises(ValueError, match="lse: expected dtype float32"):
            torch.ops.mla_wrapper.run(7, q[..., :512], q[..., 512:], cache[..., :512],
                                      cache[..., 512:], out, lse.half())
        with pytest.raises(ValueError, match=r"kpe_cache: expected shape \[\*, 64, 64\]"):
            torch.ops.mla_wrapper.run(7, q[..., :512], q[..., 512:], cache[..., :512],
                                      cache[:, :32, 512:], out, None)


@pytest.mark.parametrize("name", ["merge_state", "merge_state_v2"])
def test_fake_merge_shapes(name):
    op = getattr(torch.ops.mla_wrapper, name)
    with FakeTensorMode():
        v = torch.empty(5, 8, 128, dtype=torch.float16)
        s = torch.empty(5, 8, dtype=torch.float32)
        vm, sm = op(v, s, v, s.to(bf16))
        assert vm.shape == (5, 8, 128) and vm.dtype == torch.float16
        assert sm.shape == (5, 8) and sm.dtype == torch.float32
        getattr(torch.ops.mla_wrapper, name + "_out")(v, s, v, s, torch.empty_like(v), torch.empty_like(s))
        with pytest.raises(ValueError, match=r"s_b: expected shape \[5, 8\]"):
            op(v, s, v, s[:4])
        with pytest.raises(ValueError, match="s_merged: expected dtype float32"):
            getattr(torch.ops.mla_wrapper, name + "_out")(v, s, v, s, torch.empty_like(v),
                                                          torch.empty_like(s, dtype=bf16))


def test_fake_merge_attn_states_and_decode():
    with FakeTensorMode():
        o = torch.empty(6, 4, 512, dtype=bf16)
        lse = torch.empty(4, 6, dtype=torch.float32)
        torch.ops.mla_wrapper.merge_attn_states(o, o, lse, o, lse, lse, 3)
        with pytest.raises(ValueError, match=r"suffix_lse: expected shape \[4, 6\]"):
            torch.ops.mla_wrapper.merge_attn_states(o, o, lse, o, lse.t())
        with pytest.raises(ValueError, match="prefill_tokens_with_context: expected an int >= 0"):
            torch.ops.mla_wrapper.merge_attn_states(o, o, lse, o, lse, None, -1)
        q = torch.empty(4, 16, 576, dtype=bf16)
        cache = torch.empty(9, 64, 576, dtype=bf16)
        lens = torch.empty(4, dtype=torch.int32)
        table = torch.empty(4, 3, dtype=torch.int32)
        ws = torch.empty(1 << 20, dtype=torch.uint8)
        out = torch.ops.mla_wrapper.cutlass_mla_decode(q[..., :512], q[..., 512:], cache, lens,
                                                       table, ws, 0.1, 1)
        assert out.shape == (4, 16, 512) and out.dtype == bf16
        with pytest.raises(ValueError, match="seq_lens: expected dtype int32"):
            torch.ops.mla_wrapper.cutlass_mla_decode(q[..., :512], q[..., 512:], cache,
                                                     lens.long(), table, ws, 0.1, 1)
        with pytest.raises(ValueError, match=r"page_table: expected 4 rows"):
            torch.ops.mla_wrapper.cutlass_mla_decode(q[..., :512], q[..., 512:], cache, lens,
                                                     table[:2], ws, 0.1, 1)


def test_handle_errors():
    with pytest.raises(ValueError, match="wrapper: expected a BatchMLAPagedAttentionWrapper"):
        torch_ops.register(object())
    w = object.__new__(BatchMLAPagedAttentionWrapper)
    with pytest.raises(ValueError, match=r"wrapper: not registered .*torch_ops.register"):
        torch_ops.handle_of(w)
    h = torch_ops.register(w)
    assert torch_ops.register(w) == h and torch_ops.handle_of(w) == h
    torch_ops.unregister(w)
    q = torch.zeros(1, 1, 576, dtype=bf16)
    cache = torch.zeros(1, 1, 576, dtype=bf16)
    with pytest.raises(ValueError, match=f"handle: no live wrapper is registered as {h}"):
        torch.ops.mla_wrapper.run(h, q[..., :512], q[..., 512:], cache[..., :512],
                                  cache[..., 512:], torch.empty(1, 1, 512, dtype=bf16), None)
    with pytest.raises(ValueError, match="s_merged: give both"):
        torch_ops.merge_state(q, q[..., 0], q, q[..., 0], v_merged=q)


# ------------------------------------------------------------------ opcheck (CPU stand-ins)
def test_opcheck_run(cpu_kernels):
    w, q, cache = planned_cpu_wrapper(kv_lens=(5, 40), qo_len=2, causal=True)
    out = torch.empty(q.shape[0], q.shape[1], 512, dtype=bf16)
    lse = torch.empty(q.shape[0], q.shape[1], dtype=torch.float32)
    args = (torch_ops.handle_of(w), q[..., :512], q[..., 512:], cache[..., :512],
            cache[..., 512:], out, lse, True)
    torch.library.opcheck(torch.ops.mla_wrapper.run.default, args,
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_static"))


def test_opcheck_merges_and_decode(cpu_kernels):
    g = torch.Generator().manual_seed(1)
    v_a, v_b = (torch.randn(3, 2, 16, generator=g) for _ in range(2))
    s_a, s_b = (torch.randn(3, 2, generator=g) for _ in range(2))
    utils = ("test_schema", "test_faketensor", "test_aot_dispatch_static")
    for name in ("merge_state", "merge_state_v2"):
        torch.library.opcheck(getattr(torch.ops.mla_wrapper, name).default,
                              (v_a, s_a, v_b, s_b), test_utils=utils)
        torch.library.opcheck(getattr(torch.ops.mla_wrapper, name + "_out").default,
                              (v_a, s_a, v_b, s_b, torch.empty_like(v_a), torch.empty_like(s_a)),
                              test_utils=utils)
    torch.library.opcheck(torch.ops.mla_wrapper.merge_attn_states.default,
                          (torch.empty_like(v_a), v_a, s_a.t().contiguous(), v_b,
                           s_b.t().contiguous(), torch.empty(2, 3), 2), test_utils=utils)
    q = torch.randn(2, 4, 576, generator=g).to(bf16)
    cache = torch.randn(4, 8, 576, generator=g).to(bf16)
    args = (q[..., :512], q[..., 512:], cache, torch.tensor([5, 16], dtype=torch.int32),
            torch.tensor([[2, 0], [1, 3]], dtype=torch.int32), torch.zeros(64, dtype=torch.uint8),
            SM_SCALE, 1)
    torch.library.opcheck(torch.ops.mla_wrapper.cutlass_mla_decode.default, args, test_utils=utils)


def test_python_entry_points_match_direct_api(cpu_kernels):
    w, q, cache = planned_cpu_wrapper()
    o, l = torch_ops.run(w, q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:],
                         return_lse=True)
    ref_o, ref_l = mla_attention(q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:],
                                 w.qo_indptr, w.kv_indptr, w.kv_indices, w.kv_len, 16, False,
                                 SM_SCALE)
    assert rel_error(o, ref_o) < 1e-2 and rel_error(l, ref_l) < 1e-5
    v = torch.randn(3, 2, 8)
    s = torch.randn(3, 2)
    vm, sm = torch_ops.merge_state_v2(v, s, v * 2, s + 1)
    vm2, sm2 = torch_ops.merge_state_v2(v, s, v * 2, s + 1, torch.empty_like(v), torch.empty_like(s))
    assert torch.equal(vm, vm2) and torch.equal(sm, sm2)


# ------------------------------------------------------------------ torch.compile on the CPU
def test_compile_fullgraph_wrapper_run_cpu(cpu_kernels):
    """wrapper.run inside torch.compile(fullgraph=True) traces into the op (no graph break) and
    matches eager, on the CPU (aot_eager) with the reference standing in for the kernel."""
    w, q, cache = planned_cpu_wrapper(kv_lens=(5, 70, 33), heads=8)
    proj = torch.randn(512, 64, dtype=bf16)

    def step(q, cache):
        o, lse = w.run(q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:],
                       return_lse=True)
        return (o @ proj).float().sum(-1) + lse

    torch._dynamo.reset()
    explain = torch._dynamo.explain(step)(q, cache)
    assert explain.graph_break_count == 0, explain.break_reasons
    assert explain.graph_count == 1
    o, lse = torch_ops.run(w, q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:],
                           return_lse=True)
    eager = (o @ proj).float().sum(-1) + lse
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(q, cache), eager)


def test_compile_fp8_cache_scales_reach_the_kernel_cpu(cpu_kernels):
    """An fp8 cache's ckv_scale / kpe_scale go through torch.ops.mla_wrapper.run: wrapper.run
    under torch.compile(fullgraph=True) passes them to the kernel call (the reference on the
    dequantized cache stands in for it) and matches the eager result; other scales give another
    output (so they are not dropped on the way)."""
    w, q, cache = planned_cpu_wrapper(kv_lens=(5, 70, 33), heads=8)
    cache8 = (cache.float() * 2).to(torch.float8_e4m3fn)

    def step(q, cache8, cs, ks):
        return w.run(q[..., :512], q[..., 512:], cache8[..., :512], cache8[..., 512:],
                     ckv_scale=cs, kpe_scale=ks)

    torch._dynamo.reset()
    explain = torch._dynamo.explain(step)(q, cache8, 0.37, 1.9)
    assert explain.graph_break_count == 0, explain.break_reasons
    ref, _ = mla_attention(q[..., :512], q[..., 512:], cache8[..., :512], cache8[..., 512:],
                           w.qo_indptr, w.kv_indptr, w.kv_indices, w.kv_len, 16, False,
                           SM_SCALE, ckv_scale=0.37, kpe_scale=1.9)
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    out = compiled(q, cache8, 0.37, 1.9)
    assert rel_error(out, ref) < 1e-2
    other = torch_ops.run(w, q[..., :512], q[..., 512:], cache8[..., :512], cache8[..., 512:],
                          ckv_scale=0.5, kpe_scale=1.9)
    assert rel_error(other, ref) > 1e-2


def test_compile_fullgraph_merges_cpu(cpu_kernels):
    def f(v_a, s_a, v_b, s_b, out, lse):
        v, s = torch_ops.merge_state(v_a, s_a, v_b, s_b)
        torch_ops.merge_attn_states(out, v_a, s_a.t(), v_b, s_b.t(), lse)
        return v * 2, s + 1, out + 1

    args = [torch.randn(4, 2, 8), torch.randn(4, 2), torch.randn(4, 2, 8), torch.randn(4, 2),
            torch.empty(4, 2, 8), torch.empty(2, 4)]
    eager = f(*args)
    torch._dynamo.reset()
    out2, lse2 = torch.empty(4, 2, 8), torch.empty(2, 4)
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(*args[:4], out2, lse2)
    for a, b in zip(got, eager):
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(lse2, args[5])   # the mutation reached the caller's tensor


# ------------------------------------------------------------------ GPU: real kernels
def _gpu_batch(kv_lens, heads, page_size, seed):
    from test_wrapper import make_batch  # noqa: PLC0415

    return make_batch(kv_lens, 1, heads, page_size, bf16, seed=seed)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_gpu_compile_fullgraph_matches_eager(backend):
    torch.manual_seed(0)
    heads, page_size = 16, 64
    b = _gpu_batch([100, 1, 4097, 700], heads, page_size, seed=3)
    ws = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
    w = BatchMLAPagedAttentionWrapper(ws)
    torch_ops.register(w)
    w.plan(b["qo_indptr"], b["kv_indptr"], b["kv_indices"], b["kv_len"], heads, 512, 64,
           page_size, False, SM_SCALE, bf16, bf16)
    w_o = torch.randn(heads * 512, 256, device="cuda", dtype=bf16) / 64

    def step(q_nope, q_pe, ckv, kpe):
        o, lse = w.run(q_nope * 1.0, q_pe, ckv, kpe, return_lse=True)
        return o.flatten(1) @ w_o, lse

    args = (b["q_nope"], b["q_pe"], b["ckv"], b["kpe"])
    eager_h, eager_lse = step(*args)
    torch._dynamo.reset()
    explain = torch._dynamo.explain(step)(*args)
    assert explain.graph_break_count == 0, explain.break_reasons
    compiled = torch.compile(step, fullgraph=True, backend=backend)
    h, lse = compiled(*args)
    torch.testing.assert_close(lse, eager_lse)
    assert rel_error(h, eager_h) < 1e-2
    ref_o, _ = mla_attention(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], b["qo_indptr"],
                             b["kv_indptr"], b["kv_indices"], b["kv_len"], page_size, False,
                             SM_SCALE)
    assert rel_error(h, ref_o.to(bf16).flatten(1) @ w_o) < 2e-2


@pytest.mark.gpu
def test_gpu_compile_reduce_overhead_after_replan(monkeypatch):
    """mode="reduce-overhead" (CUDA graphs through compile) with a use_cuda_graph wrapper:
    plan() eagerly before each call with new lengths and page tables; the replayed graph
    must compute the new plan (and must be a replay: the op's Python kernel is not called)."""
    from torch._dynamo.utils import counters  # noqa: PLC0415

    kernel_calls = []
    direct = torch_ops._eager_run
    monkeypatch.setattr(torch_ops, "_eager_run", lambda *a: (kernel_calls.append(1), direct(*a)))
    counters.clear()
    torch.manual_seed(0)
    heads, page_size, bs = 16, 64, 4
    dev = torch.device("cuda")
    bufs = dict(qo_indptr=torch.arange(bs + 1, dtype=torch.int32, device=dev),
                kv_indptr=torch.zeros(bs + 1, dtype=torch.int32, device=dev),
                kv_indices=torch.zeros(bs * 128, dtype=torch.int32, device=dev),
                kv_len_arr=torch.zeros(bs, dtype=torch.int32, device=dev))
    w = BatchMLAPagedAttentionWrapper(torch.empty(128 << 20, dtype=torch.uint8, device=dev),
                                      use_cuda_graph=True, **bufs)
    torch_ops.register(w)
    w_o = torch.randn(heads * 512, 128, device=dev, dtype=bf16) / 64

    def step(q, cache):
        o = w.run(q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:])
        return o.flatten(1) @ w_o

    torch._dynamo.reset()
    compiled = torch.compile(step, fullgraph=True, mode="reduce-overhead")
    gen = torch.Generator().manual_seed(5)
    cache = torch.randn(bs * 128 + 8, page_size, 576, device=dev, dtype=bf16)
    torch._dynamo.mark_static_address(cache)
    ckv, kpe = cache[..., :512], cache[..., 512:]
    q = torch.empty(bs, heads, 576, device=dev, dtype=bf16)
    for it in range(6):       # warm-up, recording, then replays; a new plan every call
        lens = torch.randint(1, 128 * page_size, (bs,), generator=gen, dtype=torch.int32)
        pages = (lens + page_size - 1) // page_size
        kv_indptr = torch.cat([torch.zeros(1, dtype=torch.int32), pages.cumsum(0).int()])
        kv_indices = torch.randperm(cache.shape[0], generator=gen)[: int(kv_indptr[-1])].int().to(dev)
        qo = torch.arange(bs + 1, dtype=torch.int32)
        w.plan(qo, kv_indptr, kv_indices, lens, heads, 512, 64, page_size, False, SM_SCALE,
               bf16, bf16)
        q.copy_(torch.randn(bs, heads, 576, generator=gen).to(bf16))
        h = compiled(q, cache).clone()
        ref_o, _ = mla_attention(q[..., :512], q[..., 512:], ckv, kpe, qo, kv_indptr, kv_indices,
                                 lens, page_size, False, SM_SCALE)
        err = rel_error(h, ref_o.to(bf16).flatten(1) @ w_o)
        assert err < 2e-2, f"call {it}: rel error {err}"
    assert counters["inductor"]["cudagraph_skips"] == 0, "inductor skipped CUDA graphs"
    assert len(kernel_calls) < 6, f"the op ran eagerly on all {len(kernel_calls)} calls: no replay"


@pytest.mark.gpu
def test_gpu_merge_and_decode_ops_match_direct_api():
    g = torch.Generator().manual_seed(2)
    dev = "cuda"
    v_a, v_b = (torch.randn(7, 4, 128, generator=g).to(dev, bf16) for _ in range(2))
    s_a, s_b = (torch.randn(7, 4, generator=g).to(dev) for _ in range(2))
    for op_fn, direct in ((torch_ops.merge_state, mla_ops_mod.merge_state),
                          (torch_ops.merge_state_v2, mla_ops_mod.merge_state_v2)):
        got = torch.compile(op_fn, fullgraph=True)(v_a, s_a, v_b, s_b)
        want = direct(v_a, s_a, v_b, s_b)
        torch.testing.assert_close(got[0], want[0])
        torch.testing.assert_close(got[1], want[1])
    out, out2 = torch.empty_like(v_a), torch.empty_like(v_a)
    torch.compile(torch_ops.merge_attn_states, fullgraph=True)(out, v_a, s_a.t(), v_b, s_b.t())
    mla_ops_mod.merge_attn_states(out2, v_a, s_a.t(), v_b, s_b.t())
    torch.testing.assert_close(out, out2)
    B, H, ps = 3, 16, 64
    q = torch.randn(B, H, 576, generator=g).to(dev, bf16)
    cache = torch.randn(8, ps, 576, generator=g).to(dev, bf16)
    lens = torch.tensor([1, 100, 256], dtype=torch.int32, device=dev)
    table = torch.tensor([[0, 0, 0, 0], [3, 5, 0, 0], [1, 2, 4, 6]], dtype=torch.int32, device=dev)
    ws = torch.empty(mla_ops_mod.cutlass_mla_get_workspace_size(4 * ps, B), dtype=torch.uint8,
                     device=dev)
    got = torch.compile(torch_ops.cutlass_mla_decode, fullgraph=True)(
        q[..., :512], q[..., 512:], cache, lens, table, ws, SM_SCALE, 1)
    want = mla_ops_mod.cutlass_mla_decode(q[..., :512], q[..., 512:], cache, lens, table, ws,
                                          SM_SCALE, 1)
    torch.testing.assert_close(got, want)


def test_compile_unregistered_wrapper_names_the_fix():
    w = object.__new__(BatchMLAPagedAttentionWrapper)
    q = torch.zeros(2, 4, 576, dtype=bf16)
    cache = torch.zeros(2, 8, 576, dtype=bf16)
    torch._dynamo.reset()
    f = torch.compile(lambda q, c: w.run(q[..., :512], q[..., 512:], c[..., :512], c[..., 512:]),
                      fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception, match=r"mla_wrapper.torch_ops.register\(wrapper\)"):
        f(q, cache)


def test_run_op_refuses_capture_of_a_non_graph_wrapper(cpu_kernels, monkeypatch):
    w, q, cache = planned_cpu_wrapper()
    w._use_cuda_graph = False
    out = torch.empty(q.shape[0], q.shape[1], 512, dtype=bf16)
    args = (q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:], out, None)
    torch.ops.mla_wrapper.run(torch_ops.handle_of(w), *args)      # not capturing: runs
    monkeypatch.setattr(torch_ops, "_capturing", lambda: True)
    with pytest.raises(ValueError, match="wrapper: .*captured in a CUDA graph.*use_cuda_graph=True"):
        torch.ops.mla_wrapper.run(torch_ops.handle_of(w), *args)
    w._use_cuda_graph = True
    torch.ops.mla_wrapper.run(torch_ops.handle_of(w), *args)
