"""SM100 backend (CUTLASS's MLA kernel): templates, split/workspace arithmetic, validation
(CPU); one sm_100a compile checking the pure-Python workspace formula against CUTLASS's own
(compile); correctness against the reference on a Blackwell GPU (sm100)."""
from __future__ import annotations

import ctypes
import itertools
import math
import random

import pytest
import torch

from mla_wrapper.backends import cutlass
from mla_wrapper.jit import render
from mla_wrapper.reference import mla_attention, rel_error

# ------------------------------------------------------------------------------------------
# Templates and specs (CPU)
# ------------------------------------------------------------------------------------------

ELEMENT = {"bf16": "cutlass::bfloat16_t", "fp16": "cutlass::half_t", "fp8_e4m3": "cutlass::float_e4m3_t"}
ELEMENT_OUT = {"bf16": "cutlass::bfloat16_t", "fp16": "cutlass::half_t", "fp8_e4m3": "cutlass::bfloat16_t"}


@pytest.mark.parametrize("dtype,load,scheduler",
                         list(itertools.product(cutlass.DTYPES, cutlass.LOADS, cutlass.SCHEDULERS)))
def test_template_renders(dtype, load, scheduler):
    s = cutlass.spec(dtype, "sm_100a", load=load, scheduler=scheduler)
    assert s.name == f"sm100_mla_{dtype}_{load}_{scheduler}_sm_100a"
    src = render(s)
    assert f"MlaConfig<{ELEMENT[dtype]}, {ELEMENT_OUT[dtype]}," in src
    assert f"/*kCpAsync=*/{'true' if load == 'cpasync' else 'false'}" in src
    assert f"/*kPersistent=*/{'true' if scheduler == 'persistent' else 'false'}" in src
    for export in s.exports:
        assert f"MLAW_EXPORT int {export.name}(" in src
    assert s.use_cutlass and "sm100" in s.header_dirs
    assert any(f.endswith("77_blackwell_fmha") for f in s.extra_flags)


def test_spec_arch_mapping_and_errors():
    assert cutlass.spec("bf16").arch == "sm_100a"
    assert cutlass.spec("bf16", "10.0a").arch == "sm_100a"
    # CUTLASS guards the kernel body with SM100A/SM100F: B300 gets the family build.
    assert cutlass.spec("fp16", "sm_103a").arch == "sm_100f"
    with pytest.raises(ValueError, match="arch"):
        cutlass.spec("bf16", "sm_90a")
    with pytest.raises(ValueError, match="dtype_name"):
        cutlass.spec("fp32")
    with pytest.raises(ValueError, match="load"):
        cutlass.spec("bf16", load="gather")
    with pytest.raises(ValueError, match="scheduler"):
        cutlass.spec("bf16", scheduler="static")


def test_warmup_specs():
    assert cutlass.warmup_specs("sm_90a", ["bf16"]) == []
    assert cutlass.warmup_specs("sm_80", ["bf16", "fp16"]) == []
    assert cutlass.warmup_specs("not-an-arch", ["bf16"]) == []
    specs = cutlass.warmup_specs("sm_100a", ["bf16", "fp16"])
    assert [s.name for s in specs] == [
        "sm100_mla_bf16_tma_individual_sm_100a", "sm100_mla_bf16_cpasync_individual_sm_100a",
        "sm100_mla_fp16_tma_individual_sm_100a", "sm100_mla_fp16_cpasync_individual_sm_100a"]
    assert {s.arch for s in cutlass.warmup_specs("10.3a", ["bf16"])} == {"sm_100f"}


def test_load_path():
    assert [cutlass.load_path(p) for p in (1, 2, 16, 64, 128, 256, 1024)] == \
        ["cpasync"] * 4 + ["tma"] * 3
    for bad in (0, 3, 48, 100, -128):
        with pytest.raises(ValueError, match="power of two"):
            cutlass.load_path(bad)


# ------------------------------------------------------------------------------------------
# Split heuristic and workspace, pure Python (CPU)
# ------------------------------------------------------------------------------------------

def _cutlass_split(K, B, sm):
    """CUTLASS's MLA::set_split_kv, transcribed independently for the test."""
    max_splits = math.ceil(K / 128)
    sms_per_batch = max(1, sm // B)
    split_heur = min(max_splits, sms_per_batch)
    k_waves = math.ceil(max_splits / split_heur)
    return math.ceil(max_splits / k_waves)


@pytest.mark.parametrize("K,B,sm,expected", [
    (1, 1, 148, 1), (128, 1, 148, 1), (129, 1, 148, 2), (4096, 8, 148, 16),
    (131072, 1, 148, 147), (131072, 1, 132, 128), (65536, 256, 148, 1), (18 * 128, 8, 148, 18),
    (19 * 128, 8, 148, 10)])
def test_auto_split_values(K, B, sm, expected):
    assert cutlass.get_num_kv_splits(K, B, sm, -1) == expected == _cutlass_split(K, B, sm)


def test_workspace_formula():
    per = (4 * 512 + 4) * 128
    assert cutlass.get_workspace_size(4096, 8, 148, 1) == 0
    assert cutlass.get_workspace_size(4096, 8, 148, 4) == per * 4 * 8
    assert cutlass.get_workspace_size(1, 3, 148, 64) == per * 64 * 3  # manual splits used as given
    assert cutlass.get_workspace_size(4096, 8, 148, -1) == per * 16 * 8
    assert cutlass.get_workspace_size(4096, 8, 148, 0) == per * 16 * 8  # 0 also means auto
    assert cutlass.get_workspace_size(128, 8, 148, -1) == 0            # one tile: one split
    # page_size only matters above 128: K rounds up to whole pages.
    assert cutlass.get_num_kv_splits(300, 1, 148, -1, page_size=256) == 4
    assert cutlass.get_num_kv_splits(300, 1, 148, -1, page_size=128) == 3


def test_workspace_auto_bound():
    rng = random.Random(0)
    for _ in range(2000):
        K, B, sm = rng.randint(1, 300_000), rng.randint(1, 600), rng.choice([132, 148, 160])
        assert cutlass.get_workspace_size(K, B, sm, -1) <= cutlass.max_auto_workspace_size(sm)


def test_workspace_argument_errors():
    with pytest.raises(ValueError, match="max_seq_len"):
        cutlass.get_workspace_size(0, 1, 148, 1)
    with pytest.raises(ValueError, match="num_batches"):
        cutlass.get_workspace_size(128, 0, 148, 1)
    with pytest.raises(ValueError, match="num_kv_splits"):
        cutlass.get_workspace_size(128, 1, 148, 257)
    with pytest.raises(ValueError, match="page_size"):
        cutlass.get_workspace_size(128, 1, 148, 1, page_size=96)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="sm_count"):
            cutlass.get_workspace_size(4096, 1, 0, -1)


# ------------------------------------------------------------------------------------------
# Argument validation (CPU tensors: every check before the device check is reachable)
# ------------------------------------------------------------------------------------------

def _args(B=2, H=16, page_size=16, pages=8, dtype=torch.bfloat16, cols=4):
    return dict(
        q_nope=torch.zeros(B, H, 512, dtype=dtype), q_pe=torch.zeros(B, H, 64, dtype=dtype),
        kv_cache=torch.zeros(pages, page_size, 576, dtype=dtype),
        seq_lens=torch.ones(B, dtype=torch.int32), page_table=torch.zeros(B, cols, dtype=torch.int32),
        workspace=torch.zeros(1024, dtype=torch.uint8), sm_scale=0.1)


@pytest.mark.parametrize("change,match", [
    (dict(q_nope=torch.zeros(2, 16, 512, dtype=torch.float32)), "q_nope: expected dtype"),
    (dict(q_nope=torch.zeros(2, 16, 256, dtype=torch.bfloat16)), "q_nope: head dim must be 512"),
    (dict(q_pe=torch.zeros(2, 16, 32, dtype=torch.bfloat16)), "q_pe: head dim must be 64"),
    (dict(q_pe=torch.zeros(2, 16, 64, dtype=torch.float16)), "q_pe: expected dtype bfloat16"),
    (dict(q_pe=torch.zeros(2, 8, 64, dtype=torch.bfloat16)), r"q_pe: expected shape \[2, 16, 64\]"),
    (dict(kv_cache=torch.zeros(8, 16, 512, dtype=torch.bfloat16)), "kv_cache: expected shape"),
    (dict(kv_cache=torch.zeros(8, 16, 576, dtype=torch.float16)), "kv_cache: expected dtype bfloat16"),
    (dict(kv_cache=torch.zeros(8, 24, 576, dtype=torch.bfloat16)), "power of two"),
    (dict(kv_cache=(torch.zeros(8, 16, 512, dtype=torch.bfloat16),
                    torch.zeros(8, 16, 32, dtype=torch.bfloat16))), "kpe_cache: head dim must be 64"),
    (dict(kv_cache=(torch.zeros(8, 16, 512, dtype=torch.bfloat16),
                    torch.zeros(8, 32, 64, dtype=torch.bfloat16))), "kpe_cache: expected"),
    (dict(kv_cache=(torch.zeros(8, 12, 512, dtype=torch.bfloat16),
                    torch.zeros(8, 12, 64, dtype=torch.bfloat16))), "power of two"),
    (dict(seq_lens=torch.ones(2, dtype=torch.int64)), r"seq_lens: expected dtype int32.*\.int\(\)"),
    (dict(seq_lens=torch.ones(3, dtype=torch.int32)), r"seq_lens: expected shape \[2\]"),
    (dict(page_table=torch.zeros(2, 4, dtype=torch.int64)), "page_table: expected dtype int32"),
    (dict(page_table=torch.zeros(3, 4, dtype=torch.int32)), "page_table: expected 2 rows"),
    (dict(workspace=[0] * 16), "workspace: expected a torch.Tensor"),
    (dict(num_kv_splits=300), "num_kv_splits"),
    (dict(out=torch.zeros(2, 16, 512, dtype=torch.float16)), "out: expected dtype bfloat16"),
    (dict(lse=torch.zeros(2, 8, dtype=torch.float32)), r"lse: expected shape \[2, 16\]"),
    (dict(), "q_nope: expected a CUDA tensor"),  # all valid, but on the CPU
])
def test_run_validation(change, match):
    args = _args()
    args.update(change)
    with pytest.raises(ValueError, match=match):
        cutlass.run(**args)


def test_run_validation_misaligned_cache():
    # A 576-wide cache viewed with an odd token offset: base not 16-byte aligned.
    args = _args()
    big = torch.zeros(8, 16, 584, dtype=torch.bfloat16)
    args["kv_cache"] = big[..., 1:577]
    with pytest.raises(ValueError, match="16-byte"):
        cutlass.run(**args)


# ------------------------------------------------------------------------------------------
# One compile (sm_100a, bf16): CUTLASS's own split/workspace code vs the Python mirror.
# The library is host-callable without a GPU (static cudart; no CUDA call in this path).
# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def built_bf16(tmp_path_factory):
    from mla_wrapper.jit import load

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLA_WRAPPER_CACHE_DIR", str(tmp_path_factory.mktemp("sm100_cache")))
        return load(cutlass.spec("bf16", "sm_100a"))


def _cpp_workspace(mod, K, B, sm, splits):
    nbytes, nsplit = ctypes.c_uint64(0), ctypes.c_int32(0)
    status = mod.mlaw_sm100_mla_workspace_size(K, B, sm, splits, ctypes.addressof(nbytes),
                                               ctypes.addressof(nsplit))
    return status, nbytes.value, nsplit.value


@pytest.mark.compile
def test_compiled_workspace_matches_python(built_bf16):
    grid = itertools.product([1, 128, 4096, 65536, 131072], [1, 8, 64, 256], [132, 148], [-1, 1, 4, 64])
    for K, B, sm, splits in grid:
        status, nbytes, nsplit = _cpp_workspace(built_bf16, K, B, sm, splits)
        assert status == 0, built_bf16.error("workspace", status)
        assert nsplit == cutlass.get_num_kv_splits(K, B, sm, splits), (K, B, sm, splits)
        assert nbytes == cutlass.get_workspace_size(K, B, sm, splits), (K, B, sm, splits)


@pytest.mark.compile
def test_compiled_workspace_errors_reach_python(built_bf16):
    status, _, _ = _cpp_workspace(built_bf16, 0, 8, 148, -1)
    assert status < 0
    assert "max_seq_len" in str(built_bf16.error("mlaw_sm100_mla_workspace_size", status))
    status, _, _ = _cpp_workspace(built_bf16, 4096, 8, 148, 257)
    assert status < 0 and "256" in str(built_bf16.error("ws", status))


@pytest.mark.compile
def test_compiled_kernel_info(built_bf16):
    info = (ctypes.c_int32 * 8)()
    assert built_bf16.mlaw_sm100_mla_kernel_info(ctypes.addressof(info)) == 0
    smem, threads, heads, tile_kv, cluster, cp_async, persistent, max_splits = list(info)
    assert 100_000 < smem <= 232_448          # SM100: 227 KB dynamic smem per CTA at most
    assert (threads, heads, tile_kv, cluster, cp_async, persistent, max_splits) == \
        (256, 128, 128, 2, 0, 0, 256)
    log = (built_bf16.path.parent / "build.log").read_text()
    assert "device_kernel" in log and "registers" in log   # -Xptxas=-v resource usage


def _cpp_run(mod, *, page_size=128, cols=32, batch=2, splits=1, ws_bytes=0, sm=148, q_offset=0,
             lse_acc=True):
    # Fake 16-byte aligned device addresses: these calls fail in host-side checks, before any
    # CUDA call, so they run on a machine without a GPU.
    fake = 1 << 20
    return mod.mlaw_sm100_mla_run(
        fake + q_offset, 128 * 576, 576, fake + 1024, 128 * 576, 576,
        fake, page_size * 576, 576, fake + 1024, page_size * 576, 576,
        64, page_size, fake, fake, cols, cols, batch,
        fake, 128 * 512, 512, fake if lse_acc else None,
        fake, 128 * 512, 512, 128, None, 0, 1.0,
        0.1, splits, sm, fake if ws_bytes else None, ws_bytes, None)


@pytest.mark.compile
@pytest.mark.parametrize("kwargs,match", [
    (dict(page_size=64), "TMA path.*page_size must be 128, got 64"),
    (dict(batch=0), "batch must be >= 1"),
    (dict(q_offset=2), "q_nope must be 16-byte aligned"),
    (dict(sm=147), "sm_count must be an even number"),
    (dict(splits=8, lse_acc=False), "needs an LSE buffer"),
    (dict(splits=300), "num_kv_splits must be <= 256"),
])
def test_compiled_run_rejections_reach_python(built_bf16, kwargs, match):
    status = _cpp_run(built_bf16, **kwargs)
    assert status < 0
    with pytest.raises(Exception, match=match):
        raise built_bf16.error("mlaw_sm100_mla_run", status)


@pytest.mark.compile
def test_compiled_run_workspace_too_small_says_how_much(built_bf16):
    status = _cpp_run(built_bf16, splits=8, ws_bytes=100)
    needed = cutlass.get_workspace_size(32 * 128, 2, 148, 8)
    assert status < 0 and needed > 0
    assert f"workspace too small: {needed} bytes needed" in str(built_bf16.error("run", status))


# ------------------------------------------------------------------------------------------
# Blackwell GPU: run() against the reference
# ------------------------------------------------------------------------------------------

def _problem(B, H, page_size, dtype, seq_lens, seed=0, split_cache=False, device="cuda"):
    g = torch.Generator(device="cpu").manual_seed(seed)
    max_len = max(max(seq_lens), 1)
    cols = math.ceil(max_len / page_size)
    num_pages = B * cols + 3
    perm = torch.randperm(num_pages, generator=g)[: B * cols].view(B, cols).to(torch.int32)
    cache = (torch.randn(num_pages, page_size, 576, generator=g) * 2).to(dtype)
    q = (torch.randn(B, H, 576, generator=g) * 3).to(dtype).to(device)  # stresses the LSE
    q_nope, q_pe = q[..., :512], q[..., 512:]   # strided views of one buffer: no concat needed
    cache = cache.to(device)
    kv = (cache[..., :512], cache[..., 512:]) if split_cache else cache
    return dict(q_nope=q_nope, q_pe=q_pe, kv=kv, cache=cache,
                seq_lens=torch.tensor(seq_lens, dtype=torch.int32, device=device),
                page_table=perm.to(device))


def _reference(p, page_size, sm_scale):
    B = p["q_nope"].shape[0]
    lens = p["seq_lens"].tolist()
    pages = [math.ceil(n / page_size) for n in lens]
    kv_indptr = [0]
    for n in pages:
        kv_indptr.append(kv_indptr[-1] + n)
    kv_indices = torch.cat([p["page_table"][b, :pages[b]] for b in range(B)]).long()
    cache = p["cache"]
    return mla_attention(p["q_nope"], p["q_pe"], cache[..., :512], cache[..., 512:],
                         list(range(B + 1)), kv_indptr, kv_indices, lens, page_size,
                         causal=False, sm_scale=sm_scale)


def _ragged(B, rng):
    base = [0, 1, 127, 128, 129, 1000, 4097]
    return [base[i] if i < len(base) else rng.randint(1, 3000) for i in range(B)]


TOL = {torch.bfloat16: 2e-2, torch.float16: 1e-2}


@pytest.mark.sm100
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("page_size", [1, 16, 64, 128, 256])
@pytest.mark.parametrize("H", [16, 32, 64, 128])
@pytest.mark.parametrize("num_kv_splits", [1, -1, 4])
def test_run_matches_reference(dtype, page_size, H, num_kv_splits, poison):
    rng = random.Random(H * 1000 + page_size)
    B = 9
    p = _problem(B, H, page_size, dtype, _ragged(B, rng), seed=page_size + H)
    sm_scale = 1.0 / math.sqrt(192)
    max_seq_len = p["page_table"].shape[1] * page_size
    ws = torch.empty(cutlass.get_workspace_size(max_seq_len, B, 0, num_kv_splits, page_size) or 1,
                     dtype=torch.uint8, device="cuda")
    out = poison(torch.empty(B, H, 512, dtype=dtype, device="cuda"))
    lse = poison(torch.empty(B, H, dtype=torch.float32, device="cuda"))
    res = cutlass.run(p["q_nope"], p["q_pe"], p["kv"], p["seq_lens"], p["page_table"], ws, sm_scale,
                    num_kv_splits, out=out, lse=lse)
    assert res[0] is out and res[1] is lse
    ref_o, ref_lse = _reference(p, page_size, sm_scale)
    assert rel_error(out, ref_o) < TOL[dtype]
    assert rel_error(lse, ref_lse) < 1e-3
    empty = p["seq_lens"] == 0
    assert torch.all(out[empty] == 0) and torch.all(torch.isneginf(lse[empty]))


@pytest.mark.sm100
@pytest.mark.parametrize("page_size", [16, 128])
def test_run_separate_caches_strided_q_and_lse_base_e(page_size):
    dtype, B, H = torch.bfloat16, 5, 128
    p = _problem(B, H, page_size, dtype, [1, 300, 0, 2048, 129], split_cache=True, seed=7)
    ws = torch.empty(cutlass.max_auto_workspace_size(), dtype=torch.uint8, device="cuda")
    out, lse = cutlass.run(p["q_nope"], p["q_pe"], p["kv"], p["seq_lens"], p["page_table"], ws, 0.07,
                         num_kv_splits=-1, return_lse=True, return_lse_base_on_e=True)
    ref_o, ref_lse2 = _reference(p, page_size, 0.07)
    assert rel_error(out, ref_o) < TOL[dtype]
    assert rel_error(lse, ref_lse2 * math.log(2.0)) < 1e-3


@pytest.mark.sm100
def test_run_more_than_128_heads_and_default_out():
    dtype, B, H = torch.float16, 3, 160
    p = _problem(B, H, 64, dtype, [700, 64, 5], seed=3)
    ws = torch.empty(1, dtype=torch.uint8, device="cuda")
    out = cutlass.run(p["q_nope"], p["q_pe"], p["kv"], p["seq_lens"], p["page_table"], ws, 0.1)
    ref_o, _ = _reference(p, 64, 0.1)
    assert out.shape == (B, H, 512) and rel_error(out, ref_o) < TOL[dtype]


@pytest.mark.sm100
def test_run_workspace_too_small_names_the_size():
    p = _problem(2, 128, 128, torch.bfloat16, [4096, 4096])
    ws = torch.empty(16, dtype=torch.uint8, device="cuda")
    with pytest.raises(ValueError, match=r"workspace: \d+ bytes needed"):
        cutlass.run(p["q_nope"], p["q_pe"], p["kv"], p["seq_lens"], p["page_table"], ws, 0.1, 8)
