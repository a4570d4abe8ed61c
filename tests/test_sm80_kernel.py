"""The sm80 MLA kernel family: template rendering (CPU), compile-only builds (nvcc), and GPU
checks against reference.py through a small plan builder of this file's own (the real
planner and wrapper have their own tests; this exercises the kernel contract directly:
one work item per row tile, forced KV splits with merge items, and balanced splits)."""
from __future__ import annotations

import ctypes
import math
import random

import pytest

from mla_wrapper.backends import sm80
# plan.h's structs through the library's ctypes mirrors (tests/test_workspace.py checks them
# against the header): a field added to the header is never read past a shorter copy here.
from mla_wrapper.workspace import MlaPlanStruct as _Plan
from mla_wrapper.workspace import MlaRunArgsStruct as _RunArgs

# --------------------------------------------------------------------------------------------
# CPU


def test_spec_names_and_params():
    s = sm80.spec("bf16", "9.0a", config="64x2")
    assert s.name == "sm80_bf16_64x2_sm_90a"
    assert s.use_cutlass and "sm80" in s.header_dirs and "merge" in s.header_dirs
    assert sm80.spec("torch.float16", "sm_80", config="32x2").name == "sm80_fp16_32x2_sm_80"
    with pytest.raises(ValueError, match="config"):
        sm80.spec("bf16", "sm_80", config="128x9")
    with pytest.raises(ValueError, match="bf16 or fp16"):
        sm80.spec("fp32", "sm_80")
    with pytest.raises(ValueError, match="sm_80 or newer"):
        sm80.spec("bf16", "sm_75")
    assert [x.name for x in sm80.warmup_specs("sm_90a", ["bf16", "fp16"])] == [
        "sm80_bf16_64x2_sm_90a", "sm80_fp16_64x2_sm_90a"]
    assert sm80.warmup_specs("sm_75", ["bf16"]) == []


def test_config_selection():
    """Every SM80+ GPU gets a config that fits its opt-in shared memory per block."""
    for name, (tile, stages, smem) in sm80.CONFIGS.items():
        assert sm80.KV_TILE % tile == 0 and 1 <= stages <= 4
        assert sm80.config_for_smem(smem) in sm80.CONFIGS
    assert sm80.config_for_smem(232448) == "64x2"      # H100 / H200 / B200
    assert sm80.config_for_smem(166912) == "32x2"      # A100
    assert sm80.config_for_smem(101376) == "16x1"      # RTX 30xx/40xx, L4, L40, A10
    with pytest.raises(ValueError, match="shared memory"):
        sm80.config_for_smem(64 * 1024)
    import sys

    if "torch" in sys.modules:  # spec() would ask the current GPU (if any); use the tables
        return
    assert sm80.spec("bf16", "sm_80").name == "sm80_bf16_32x2_sm_80"
    assert sm80.spec("bf16", "sm_86").name == "sm80_bf16_16x1_sm_86"
    assert sm80.spec("bf16", "sm_89").name == "sm80_bf16_16x1_sm_89"
    assert sm80.spec("bf16", "sm_90a").name == "sm80_bf16_64x2_sm_90a"


def test_supports():
    import torch

    assert sm80.supports(128, 1, torch.bfloat16)
    assert sm80.supports(16, 64, torch.float16, torch.float16)
    assert not sm80.supports(129, 64, torch.bfloat16)
    assert not sm80.supports(16, 64, torch.bfloat16, torch.float16)
    assert not sm80.supports(16, 64, torch.float32)
    assert "head dims" in sm80.why_not(16, 64, torch.bfloat16, head_dim_ckv=128)


def test_template_renders():
    from mla_wrapper.jit import render

    for dt, ctype in (("bf16", "__nv_bfloat16"), ("fp16", "__half")):
        src = render(sm80.spec(dt, "sm_90a", config="64x2"))
        assert f"using Element = {ctype};" in src
        assert "KvConfig<64, 2>" in src
        assert "MLAW_EXPORT int mlaw_sm80_mla_run(" in src
        assert '#include "mla_wrapper/sm80/launcher.cuh"' in src


@pytest.mark.compile
@pytest.mark.parametrize("arch,config", [("sm_90a", "64x2"), ("sm_90a", "32x4"),
                                         ("sm_80", "32x2"), ("sm_89", "16x1")])
def test_compiles(arch, config, tmp_path, monkeypatch):
    monkeypatch.setenv("MLA_WRAPPER_CACHE_DIR", str(tmp_path))
    from mla_wrapper.jit import build

    path = build(sm80.spec("bf16", arch, config=config))
    assert path.is_file()
    log = (path.parent / "build.log").read_text()
    assert "spill" not in log.lower() or "0 bytes spill" in log.lower()


def build_dev_plan(qo_lens, kv_lens, num_heads, causal, num_ctas, mode="simple", max_split=3,
                   seed=0):
    """Work items for the sm80 kernel. mode: 'simple' (one item per row tile, round robin),
    'split' (each tile cut into up to max_split chunks at multiples of KV_TILE, merged),
    'balanced' (equal token quotas per CTA, FlashInfer-style). Returns plain int lists."""
    R, K = sm80.ROWS_PER_TILE, sm80.KV_TILE
    rng = random.Random(seed)
    tiles = []  # (request, tile, visible kv_end)
    for r, (q, L) in enumerate(zip(qo_lens, kv_lens)):
        rows = q * num_heads
        for t in range((rows + R - 1) // R):
            last_tok = min(rows, (t + 1) * R) - 1
            i_max = last_tok // num_heads
            end = max(0, min(L, L - q + i_max + 1)) if causal else L
            tiles.append((r, t, end))
    pieces = []  # per tile: list of (kv_start, kv_end)
    if mode == "balanced":
        total = sum(max(e, 1) for _, _, e in tiles)
        quota = max(K, -(-total // num_ctas // K) * K)
    for (r, t, end) in tiles:
        if end == 0 or mode == "simple":
            pieces.append([(0, end)])
        elif mode == "split":
            ntile = -(-end // K)
            n = min(ntile, rng.randint(2, max_split))
            step = -(-ntile // n) * K
            pieces.append([(s, min(end, s + step)) for s in range(0, end, step)])
        else:
            pieces.append([(s, min(end, s + quota)) for s in range(0, end, quota)])
    work, merges, slot = [], [], 0
    for (r, t, _), ps in zip(tiles, pieces):
        if len(ps) == 1:
            work.append((r, t, ps[0][0], ps[0][1], -1))
        else:
            merges.append((r, t, slot, len(ps)))
            for (s, e) in ps:
                work.append((r, t, s, e, slot))
                slot += 1
    per_cta = [[] for _ in range(num_ctas)]
    if mode == "balanced":  # greedy: next item to the least loaded CTA
        load = [0] * num_ctas
        for w in sorted(work, key=lambda w: -(w[3] - w[2])):
            c = min(range(num_ctas), key=load.__getitem__)
            per_cta[c].append(w)
            load[c] += w[3] - w[2] + K
    else:
        for i, w in enumerate(work):
            per_cta[i % num_ctas].append(w)
    indptr, flat = [0], []
    for items in per_cta:
        flat += items
        indptr.append(len(flat))
    return dict(indptr=indptr, work=flat, merges=merges, num_slots=slot)


class DevProblem:
    """Random paged MLA inputs + a plan, packed into the kernel's structs (on the GPU)."""

    def __init__(self, qo_lens, kv_lens, num_heads, page_size, dtype, causal, mode, *,
                 fused_cache=True, lse=True, lse_base_e=False, num_ctas=None, seed=0,
                 max_split=3):
        import torch

        dev = torch.device("cuda")
        g = torch.Generator(device=dev).manual_seed(seed)
        self.torch = torch
        B = len(qo_lens)
        self.qo_lens, self.kv_lens = list(qo_lens), list(kv_lens)
        self.num_heads, self.page_size, self.causal = num_heads, page_size, causal
        self.sm_scale = 1.0 / math.sqrt(192)
        T = sum(qo_lens)
        self.q_nope = torch.randn(T, num_heads, 512, generator=g, device=dev).to(dtype)
        self.q_pe = torch.randn(T, num_heads, 64, generator=g, device=dev).to(dtype)
        pages = [-(-L // page_size) for L in kv_lens]
        P = sum(pages) + 3
        if fused_cache:
            cache = torch.randn(P, page_size, 576, generator=g, device=dev).to(dtype)
            self.ckv, self.kpe = cache[..., :512], cache[..., 512:]
        else:
            self.ckv = torch.randn(P, page_size, 512, generator=g, device=dev).to(dtype)
            self.kpe = torch.randn(P, page_size, 64, generator=g, device=dev).to(dtype)
        perm = torch.randperm(P, generator=g, device=dev).to(torch.int32)
        self.kv_indices = perm[: sum(pages)].to(dev)
        self.kv_indptr = [0]
        for n in pages:
            self.kv_indptr.append(self.kv_indptr[-1] + n)
        self.qo_indptr = [0]
        for q in qo_lens:
            self.qo_indptr.append(self.qo_indptr[-1] + q)
        if num_ctas is None:
            num_ctas = torch.cuda.get_device_properties(dev).multi_processor_count
        plan = build_dev_plan(qo_lens, kv_lens, num_heads, causal, num_ctas, mode, max_split,
                              seed)
        self.plan_lists = plan
        i32 = dict(dtype=torch.int32, device=dev)
        self.indptr = torch.tensor(plan["indptr"], **i32)
        req_fields = [(self.qo_indptr[r], qo_lens[r], kv_lens[r], self.kv_indptr[r])
                      for r in range(B)]  # plan.h kRequest* fields
        # a work item carries its request's fields after its own five (plan.h kWorkQoStart..)
        self.work = torch.tensor([x for w in plan["work"] for x in (*w, *req_fields[w[0]])]
                                 or [0], **i32)
        self.reqs = torch.tensor([x for f in req_fields for x in f], **i32)
        self.merge = torch.tensor([x for m in plan["merges"] for x in m] or [0], **i32)
        self.counts = torch.tensor([len(plan["work"]), len(plan["merges"]), B,
                                    T * num_heads], **i32)
        ns = max(plan["num_slots"], 1)
        self.partial_o = torch.full((ns, sm80.ROWS_PER_TILE, 512), float("nan"), device=dev)
        self.partial_lse = torch.full((ns, sm80.ROWS_PER_TILE), float("nan"), device=dev)
        self.out = torch.full((T, num_heads, 512), float("nan"), dtype=dtype, device=dev)
        self.lse = torch.full((T, num_heads), float("nan"), device=dev) if lse else None
        self.plan = _Plan(self.indptr.data_ptr(), self.work.data_ptr(), self.reqs.data_ptr(),
                          self.merge.data_ptr(), self.counts.data_ptr(),
                          self.partial_o.data_ptr(), self.partial_lse.data_ptr(), num_ctas,
                          sm80.ROWS_PER_TILE, sm80.KV_TILE, len(plan["merges"]))
        a = _RunArgs()
        a.q_nope, a.q_pe = self.q_nope.data_ptr(), self.q_pe.data_ptr()
        a.ckv, a.kpe = self.ckv.data_ptr(), self.kpe.data_ptr()
        a.out, a.lse = self.out.data_ptr(), (self.lse.data_ptr() if lse else None)
        a.kv_indices = self.kv_indices.data_ptr()
        a.q_nope_stride_token, a.q_nope_stride_head = self.q_nope.stride(0), self.q_nope.stride(1)
        a.q_pe_stride_token, a.q_pe_stride_head = self.q_pe.stride(0), self.q_pe.stride(1)
        a.ckv_stride_page, a.ckv_stride_token = self.ckv.stride(0), self.ckv.stride(1)
        a.kpe_stride_page, a.kpe_stride_token = self.kpe.stride(0), self.kpe.stride(1)
        a.out_stride_token, a.out_stride_head = self.out.stride(0), self.out.stride(1)
        a.lse_stride_token = self.lse.stride(0) if lse else 0
        a.num_heads, a.page_size, a.sm_scale = num_heads, page_size, self.sm_scale
        a.causal, a.lse_base_e = int(causal), int(lse_base_e)
        self.args = a
        self.lse_base_e = lse_base_e

    def run(self, module, stream=None):
        s = self.torch.cuda.current_stream().cuda_stream if stream is None else stream
        sm80.launch(module, ctypes.addressof(self.plan), ctypes.addressof(self.args), s)

    def reference(self):
        from mla_wrapper.reference import mla_attention

        return mla_attention(self.q_nope, self.q_pe, self.ckv, self.kpe, self.qo_indptr,
                             self.kv_indptr, self.kv_indices, self.kv_lens, self.page_size,
                             self.causal, self.sm_scale)

    def errors(self):
        from mla_wrapper.reference import rel_error

        ref_o, ref_lse = self.reference()
        e_o = rel_error(self.out.float(), ref_o)
        e_lse = 0.0
        if self.lse is not None:
            lse = self.lse * (1.0 / math.log(2.0)) if self.lse_base_e else self.lse
            e_lse = rel_error(lse, ref_lse)
        return e_o, e_lse


# --------------------------------------------------------------------------------------------
# GPU

_KV_LENS = [0, 1, 63, 64, 65, 200, 1000, 130]


def _module(dtype, config=None):
    import torch

    from mla_wrapper.jit import env, load

    dev = torch.device("cuda")
    return load(sm80.spec(dtype, env.device_arch(dev), config=config, device=dev))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name", ["bf16", "fp16"])
@pytest.mark.parametrize("num_heads", [16, 32, 64, 128])
@pytest.mark.parametrize("page_size", [1, 16, 64, 128])
@pytest.mark.parametrize("mode", ["simple", "split"])
@pytest.mark.parametrize("qo", ["decode", "mtp"])
def test_against_reference(dtype_name, num_heads, page_size, mode, qo):
    import torch

    dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float16
    rng = random.Random(num_heads * 1000 + page_size)
    kv_lens = _KV_LENS[:]
    rng.shuffle(kv_lens)
    qo_lens = [1] * len(kv_lens) if qo == "decode" else [rng.randint(1, 4) for _ in kv_lens]
    causal = qo == "mtp"
    if causal:  # a query must not see past the cache start: kv_len >= qo_len or 0
        kv_lens = [L if L == 0 or L >= q else q for L, q in zip(kv_lens, qo_lens)]
    p = DevProblem(qo_lens, kv_lens, num_heads, page_size, dtype, causal, mode,
                   fused_cache=(page_size != 16), num_ctas=13,
                   seed=rng.randint(0, 1 << 30))
    p.run(_module(dtype_name))
    torch.cuda.synchronize()
    e_o, e_lse = p.errors()
    assert e_o < 1e-2 and e_lse < 1e-3, (e_o, e_lse)


def _fits(config):
    import torch

    return sm80.CONFIGS[config][2] <= torch.cuda.get_device_properties(0).shared_memory_per_block_optin


@pytest.mark.gpu
@pytest.mark.parametrize("config", list(sm80.CONFIGS))
@pytest.mark.parametrize("num_heads", [16, 32, 128])
@pytest.mark.parametrize("page_size", [1, 64])
@pytest.mark.parametrize("mode", ["split", "balanced"])
@pytest.mark.parametrize("qo", ["decode", "mtp"])
def test_configs_against_reference(config, num_heads, page_size, mode, qo):
    """Every shared-memory config (forced; the small ones run on big GPUs too)."""
    import torch

    if not _fits(config):
        pytest.skip(f"{config} needs more shared memory than this GPU has")
    rng = random.Random(num_heads * 1000 + page_size + 7)
    kv_lens = [0, 1, 15, 16, 17, 31, 33, 63, 64, 65, 200, 1000, 130]
    rng.shuffle(kv_lens)
    qo_lens = [1] * len(kv_lens) if qo == "decode" else [rng.randint(1, 4) for _ in kv_lens]
    causal = qo == "mtp"
    if causal:
        kv_lens = [L if L == 0 or L >= q else q for L, q in zip(kv_lens, qo_lens)]
    p = DevProblem(qo_lens, kv_lens, num_heads, page_size, torch.bfloat16, causal, mode,
                   num_ctas=13, seed=rng.randint(0, 1 << 30))
    mod = _module("bf16", config)
    assert sm80.kernel_config(mod)["kernel_kv_tile"] == sm80.CONFIGS[config][0]
    p.run(mod)
    torch.cuda.synchronize()
    e_o, e_lse = p.errors()
    assert e_o < 1e-2 and e_lse < 1e-3, (e_o, e_lse)


@pytest.mark.gpu
@pytest.mark.parametrize("lse_mode", ["none", "base_e"])
def test_lse_options(lse_mode):
    import torch

    p = DevProblem([1, 2, 3], [300, 0, 77], 32, 16, torch.bfloat16, False, "split",
                   lse=lse_mode != "none", lse_base_e=lse_mode == "base_e", num_ctas=7)
    p.run(_module("bf16"))
    torch.cuda.synchronize()
    e_o, e_lse = p.errors()
    assert e_o < 1e-2 and e_lse < 1e-3, (e_o, e_lse)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name", ["bf16", "fp16"])
def test_split_grid_larger_than_device(dtype_name):
    """More CTAs than can be co-resident (2 per SM + 3): the launcher cannot fuse the combine
    into a cooperative launch and falls back to the attention kernel + the combine kernel."""
    import torch

    dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float16
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    p = DevProblem([1, 2, 1, 1], [3000, 700, 0, 129], 128, 16, dtype, True, "split",
                   num_ctas=2 * sms + 3, seed=5, max_split=12)
    p.run(_module(dtype_name))
    torch.cuda.synchronize()
    e_o, e_lse = p.errors()
    assert e_o < 1e-2 and e_lse < 1e-3, (e_o, e_lse)


@pytest.mark.gpu
@pytest.mark.parametrize("num_ctas", [1, 5, None])
def test_fused_combine_many_slots(num_ctas):
    """Fused combine (co-resident grid) with up to 21 slots per merge item (the combine loads
    kFusedCombineSlotBatch slots at a time), including a grid of one CTA."""
    import torch

    p = DevProblem([1, 1, 3, 1], [1400, 5000, 2000, 64], 64, 64, torch.bfloat16, True, "split",
                   num_ctas=num_ctas, seed=11, max_split=21)
    p.run(_module("bf16"))
    torch.cuda.synchronize()
    e_o, e_lse = p.errors()
    assert e_o < 1e-2 and e_lse < 1e-3, (e_o, e_lse)


@pytest.mark.gpu
def test_bad_args_raise():
    import torch

    from mla_wrapper.jit import KernelError

    p = DevProblem([1], [10], 16, 16, torch.bfloat16, False, "simple", num_ctas=1)
    p.plan.rows_per_tile = 32
    with pytest.raises(KernelError, match="rows_per_tile"):
        p.run(_module("bf16"))
    p.plan.rows_per_tile = sm80.ROWS_PER_TILE
    p.args.q_nope = None
    with pytest.raises(KernelError, match="must not be NULL"):
        p.run(_module("bf16"))


@pytest.mark.gpu
def test_kernel_config_matches_mirror():
    cfg = sm80.kernel_config(_module("bf16"))
    assert cfg["rows_per_tile"] == sm80.ROWS_PER_TILE and cfg["kv_tile"] == sm80.KV_TILE
    name = [k for k, v in sm80.CONFIGS.items() if v[:2] == (cfg["kernel_kv_tile"], cfg["stages"])]
    assert name and sm80.CONFIGS[name[0]][2] == cfg["smem_bytes"]
    assert (cfg["head_dim_ckv"], cfg["head_dim_kpe"]) == (512, 64)


@pytest.mark.gpu
def test_cuda_graph_replay():
    """The launch is capturable: capture once, refresh the inputs in place, replay."""
    import torch

    p = DevProblem([1, 3, 1], [500, 129, 64], 64, 16, torch.bfloat16, True, "split",
                   num_ctas=11)
    mod = _module("bf16")
    p.run(mod)  # first call does the one-time setup outside capture
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            p.run(mod, stream.cuda_stream)
    for t in (p.q_nope, p.q_pe, p.ckv, p.kpe):
        t.copy_(torch.randn(t.shape, device=t.device).to(t.dtype))
    p.out.fill_(float("nan"))
    p.lse.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    e_o, e_lse = p.errors()
    assert e_o < 1e-2 and e_lse < 1e-3, (e_o, e_lse)
