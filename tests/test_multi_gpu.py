"""Kernels launch on the device of their tensors, whichever device is current (tensor-parallel
engines run one wrapper per GPU). Needs 2 GPUs; skipped otherwise."""
from __future__ import annotations

import pytest
import torch

import mla_wrapper
from mla_wrapper.reference import merge_states, rel_error

from test_wrapper import SM_SCALE, check, make_batch, plan

two_gpus = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                              reason="needs 2 GPUs")


@pytest.mark.gpu
@two_gpus
@pytest.mark.parametrize("current", [0, 1])
def test_wrapper_on_second_gpu(current):
    torch.cuda.set_device(current)
    dev = torch.device("cuda", 1)
    b = make_batch([100, 3000, 0, 65], 1, 16, 16, torch.bfloat16, seed=31, device=dev)
    w = mla_wrapper.BatchMLAPagedAttentionWrapper(torch.empty(64 << 20, dtype=torch.uint8, device=dev))
    plan(w, b, False)
    out, lse = w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], return_lse=True)
    torch.cuda.synchronize(dev)
    assert out.device == dev
    check(b, out, lse, False)
    assert torch.cuda.current_device() == current


@pytest.mark.gpu
@two_gpus
def test_merge_and_sgl_api_on_second_gpu():
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 1)
    v_a, v_b = torch.randn(2, 64, 16, 512, device=dev, dtype=torch.bfloat16)
    s_a, s_b = torch.randn(2, 64, 16, device=dev) * 4
    v, s = mla_wrapper.merge_state(v_a, s_a, v_b, s_b)
    rv, rs = merge_states(v_a, s_a, v_b, s_b, base_e=False)
    assert rel_error(v, rv) < 1e-2 and rel_error(s, rs) < 1e-5
    with torch.cuda.device(1):
        ws = torch.empty(64 << 20, dtype=torch.uint8, device=dev)
        B, H, ps = 3, 16, 64
        cache = torch.randn(40, ps, 576, device=dev, dtype=torch.bfloat16)
        q = torch.randn(B, H, 576, device=dev, dtype=torch.bfloat16)
        seq = torch.tensor([10, 700, 0], dtype=torch.int32, device=dev)
        pt = torch.randperm(40, device=dev)[:B * 12].to(torch.int32).reshape(B, 12)
        out = mla_wrapper.cutlass_mla_decode(q[..., :512], q[..., 512:], cache, seq, pt, ws, SM_SCALE, -1)
    from test_cutlass_mla_api import reference
    ref = reference(dict(q_nope=q[..., :512], q_pe=q[..., 512:], cache=cache, page_table=pt,
                         lens=seq.cpu(), page_size=ps))
    assert rel_error(out, ref) < 1e-2
    # GPU 0 current: the call runs on the tensors' GPU (a first call there, then a repeat that
    # reuses its set-up)
    for _ in range(2):
        out = mla_wrapper.cutlass_mla_decode(q[..., :512], q[..., 512:], cache, seq, pt, ws,
                                             SM_SCALE, -1)
        assert out.device == dev and rel_error(out, ref) < 1e-2
    assert torch.cuda.current_device() == 0


@pytest.mark.gpu
@two_gpus
def test_flashmla_dense_call_on_second_gpu():
    """FlashMLA's dense decode call with its tensors on GPU 1 while GPU 0 is current: the plan
    and attention kernels follow q's device; MTP rows (the kernels' [b, h_q, s_q] lse)."""
    from test_flashmla_dense import call, check, make_case

    torch.cuda.set_device(0)
    dev = torch.device("cuda", 1)
    x = make_case([5, 1500, 0, 4100], 2, 16, 64, seed=7, device=dev)
    sched, _ = mla_wrapper.get_mla_metadata()
    out = torch.full((4, 2, 16, 512), float("nan"), dtype=torch.bfloat16, device=dev)
    o, lse = call(x, sched, causal=True, out=out)
    o2, lse2 = call(x, sched, causal=True)   # the step's second call reuses the plan
    torch.cuda.synchronize(dev)
    assert o.device == dev and lse.device == dev and torch.cuda.current_device() == 0
    check(o, lse, x, True)
    assert torch.equal(o2, o) and torch.equal(lse2, lse)
