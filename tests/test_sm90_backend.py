"""The sm90 (Hopper) kernel family's Python side: its KernelSpec, warmup specs per arch, the
planned-family interface it shares with sm80 (CPU), and a compile-only build for sm_90a."""
from __future__ import annotations

import pytest

from mla_wrapper.backends import planned, sm80, sm90
from mla_wrapper.jit.registry import warmup_specs
from mla_wrapper.jit.spec import Export


def test_spec_names_template_params_exports():
    s = sm90.spec("bf16", "sm_90a")
    assert s.name == "sm90_bf16_sm_90a"
    assert (s.family, s.template, s.arch) == ("sm90", "sm90_mla.cu.jinja", "sm_90a")
    assert s.params == (("dtype", "bf16"),)
    assert s.exports == (Export("mlaw_sm90_mla_run", ("ptr", "ptr", "stream")),
                         Export("mlaw_sm90_mla_config", ("ptr",)),
                         Export("mlaw_sm90_kv_maps", ("ptr", "ptr")))
    assert s.header_dirs == ("common", "merge", "sm80", "sm90") and s.use_cutlass
    assert sm90.spec("fp16", "9.0a").name == "sm90_fp16_sm_90a"
    assert sm90.spec("torch.bfloat16", "sm_90a", device=0) == s     # torch dtype names; device ignored
    assert sm90.RUN_EXPORT == s.exports[0].name


@pytest.mark.parametrize("arch", ["sm_90", "9.0", "sm_80", "sm_100a", "10.0a", "sm_120"])
def test_spec_rejects_other_arches(arch):
    with pytest.raises(ValueError, match="sm90 MLA: arch must be sm_90a"):
        sm90.spec("bf16", arch)


def test_spec_rejects_other_dtypes():
    with pytest.raises(ValueError, match="sm90 MLA: dtype must be bf16 or fp16"):
        sm90.spec("fp32", "sm_90a")


def test_warmup_specs_per_arch():
    names = ["sm90_bf16_sm_90a", "sm90_fp16_sm_90a"]
    assert [s.name for s in sm90.warmup_specs("sm_90a", ["bf16", "fp16"])] == names
    # fp8_e4m3: also the fp8-cache library of each listed query dtype (bf16 alone when none is)
    fp8 = ["sm90_bf16_e4m3_sm_90a", "sm90_fp16_e4m3_sm_90a"]
    assert [s.name for s in sm90.warmup_specs("9.0a", ["bf16", "fp16", "fp8_e4m3"])] == names + fp8
    assert [s.name for s in sm90.warmup_specs("sm_90a", ["fp8_e4m3"])] == fp8[:1]
    assert [s.name for s in sm90.warmup_specs("sm_90a", ["fp16"])] == names[1:]
    for arch in ("sm_90", "sm_80", "sm_89", "sm_100a", "10.3a", "sm_120", "host", "nope"):
        assert sm90.warmup_specs(arch, ["bf16", "fp16"]) == [], arch
    assert [s.name for s in warmup_specs(["sm_90a"], families=["sm90"])] == names
    assert warmup_specs(["sm_80", "sm_100a"], families=["sm90"]) == []
    assert {s.family for s in warmup_specs(["sm_90a"])} >= {"merge", "sm80", "sm90"}


def test_shares_the_planned_interface_with_sm80():
    for name in ("ROWS_PER_TILE", "KV_TILE", "CTAS_PER_SM", "HEAD_DIM_CKV", "HEAD_DIM_KPE",
                 "MAX_HEADS", "DTYPES"):
        assert getattr(sm90, name) == getattr(sm80, name), name
    assert (sm90.ROWS_PER_TILE, sm90.KV_TILE, sm90.CTAS_PER_SM) == (64, 64, 1)
    assert (sm90.HEAD_DIM_CKV, sm90.HEAD_DIM_KPE, sm90.MAX_HEADS) == (512, 64, 128)
    assert sm90.DTYPES == ("bf16", "fp16")
    assert sm80.RUN_EXPORT == "mlaw_sm80_mla_run"
    assert sm90.why_not(128, 1, "bf16") is None and sm90.supports(1, 1024, "fp16", "fp16")
    assert "num_heads" in sm90.why_not(129, 64, "bf16")
    assert "differs" in sm90.why_not(16, 64, "bf16", "fp16")
    assert "page_size" in sm90.why_not(16, 0, "bf16")
    assert "head dims" in sm90.why_not(16, 64, "bf16", head_dim_ckv=128)


class _FakeModule:
    """Stands in for a loaded kernel library: records calls, returns a status."""

    def __init__(self, status=0):
        self.status, self.calls = status, []

    def __getattr__(self, name):
        if name.startswith("mlaw_"):
            return lambda *args: (self.calls.append((name, args)), self.status)[1]
        raise AttributeError(name)

    def call(self, name, *ptrs):
        """Fills the out buffer (the last argument) with 1, 2, ...: 8 config values, 6 map facts."""
        import ctypes

        n = len(sm90.KV_MAPS_KEYS) if name == "mlaw_sm90_kv_maps" else 8
        (ctypes.c_int32 * n).from_address(ptrs[-1])[:] = list(range(1, n + 1))
        self.calls.append((name, ptrs))

    def error(self, name, status):
        return RuntimeError(f"{name} failed: {status}")


def test_launch_and_kernel_config_call_the_family_exports():
    mod = _FakeModule()
    sm90.launch(mod, 1, 2, 3)
    assert mod.calls == [("mlaw_sm90_mla_run", (1, 2, 3))]
    cfg = sm90.kernel_config(mod)
    assert mod.calls[-1][0] == "mlaw_sm90_mla_config"
    assert list(cfg) == list(planned.CONFIG_KEYS) and list(cfg.values()) == list(range(1, 9))
    with pytest.raises(RuntimeError, match="mlaw_sm90_mla_run failed: 7"):
        sm90.launch(_FakeModule(status=7), 1, 2, 3)


def test_kv_maps_calls_its_export_with_the_run_args():
    mod = _FakeModule()
    maps = sm90.kv_maps(mod, 1234)
    name, (args_ptr, _out) = mod.calls[-1]
    assert (name, args_ptr) == ("mlaw_sm90_kv_maps", 1234)
    assert maps == {"enabled": 1, "wide": 2, "paced_rows": 3, "evict_normal_max_heads": 4,
                    "promotion_none": 5, "paced_tile_mask": 6}


def test_warmup_counts_an_unnameable_spec_as_to_build():
    """A spec whose template or header folder is missing is built (and reported as FAILED)
    instead of aborting the whole warmup."""
    from mla_wrapper.__main__ import _cached
    from mla_wrapper.jit import entry_dir, is_complete
    from mla_wrapper.jit.spec import KernelSpec

    missing = KernelSpec(family="x", template="no_such_template.cu.jinja", arch="sm_90a")
    assert _cached(missing, is_complete, entry_dir) is False


@pytest.mark.compile
@pytest.mark.parametrize("kv_dtype", [None, "fp8_e4m3"])
def test_compile_sm90_bf16(kv_dtype):
    """Build the sm90 library for sm_90a (bf16 queries; a bf16 cache, or an fp8 e4m3 one), load
    it (no GPU needed: nothing below touches CUDA) and check its compiled constants against this
    module's mirror, then that its launcher rejects bad plans / arguments by name before any
    CUDA call."""
    import ctypes
    import re

    from mla_wrapper import workspace as ws
    from mla_wrapper.jit import KernelError, build, load

    spec = sm90.spec("bf16", "sm_90a", kv_dtype=kv_dtype)
    path = build(spec)
    assert path.exists()
    log = (path.parent / "build.log").read_text()
    # ptxas serializes every wgmma when the pipeline crosses a call or a branch it cannot see
    # through (C7510: a printf on a trap path did that once; C7512 / C7514 / C7515 / C7518 for
    # register pressure, accumulators touched in flight, waits it inserted in divergent code),
    # or injects waits (C7517): the kernel would still be right and much slower. Spills would
    # cost the same way.
    assert "serialized" not in log and "injected" not in log, log
    assert not any(int(n) for n in re.findall(r"(\d+) bytes spill", log)), log
    mod = load(spec)
    cfg = sm90.kernel_config(mod)
    assert (cfg["rows_per_tile"], cfg["kv_tile"]) == (sm90.ROWS_PER_TILE, sm90.KV_TILE)
    assert (cfg["head_dim_ckv"], cfg["head_dim_kpe"]) == (512, 64)
    assert cfg["threads"] == 384 and cfg["stages"] >= 2
    assert 200_000 < cfg["smem_bytes"] <= 232448    # fits an H100/H200 block (227 KB)

    plan, args = ws.MlaPlanStruct(), ws.MlaRunArgsStruct()
    for name in ("cta_work_indptr", "work_info", "request_info", "counts"):
        setattr(plan, name, 4096)
    plan.num_ctas, plan.rows_per_tile, plan.kv_tile = 1, 8, sm90.KV_TILE
    for name in ("q_nope", "q_pe", "ckv", "kpe", "out", "kv_indices"):
        setattr(args, name, 4096)
    args.num_heads, args.page_size, args.sm_scale = 16, 64, 0.07
    run = lambda: sm90.launch(mod, ctypes.addressof(plan), ctypes.addressof(args), 0)  # noqa: E731
    with pytest.raises(KernelError, match="rows_per_tile must be 64"):
        run()
    # 32-row plans: the e4m3 library's tall instance (<= 32 heads), refused by the 16-bit one
    plan.rows_per_tile = sm90.TALL_ROWS
    args.num_heads = 64
    with pytest.raises(KernelError, match="at most 32 heads" if kv_dtype else
                       "rows_per_tile must be 64"):
        run()
    # 16-row plans: the e4m3 library's narrow instance without a wgmma path (<= 16 heads)
    plan.rows_per_tile = sm90.NARROW_ROWS
    args.num_heads = 32
    with pytest.raises(KernelError, match="at most 16 heads" if kv_dtype else
                       "rows_per_tile must be 64"):
        run()
    args.num_heads = 16
    plan.rows_per_tile = sm90.ROWS_PER_TILE
    plan.kv_tile = 32
    with pytest.raises(KernelError, match="kv_tile must be a positive multiple of 64"):
        run()
    plan.kv_tile = sm90.KV_TILE
    args.ckv = 4100
    with pytest.raises(KernelError, match="16-byte aligned"):
        run()
    args.ckv = 4096
    args.ckv_stride_page = 3
    with pytest.raises(KernelError, match="ckv.stride"):
        run()
    if kv_dtype is not None:
        # an e4m3 cache's strides: multiples of 16 elements (8 passes the 16-bit check); its
        # scales finite and > 0. (Stop there: valid arguments would launch on made-up addresses.)
        args.ckv_stride_page, args.ckv_stride_token = 64 * 576, 8
        with pytest.raises(KernelError, match=r"ckv\.stride\(1\)"):
            run()
        args.ckv_stride_token = 576
        args.ckv_scale = 0.0
        with pytest.raises(KernelError, match="ckv_scale"):
            run()


def test_make_impl_and_family_lookup():
    from mla_wrapper import backends

    assert backends.family("sm80") is sm80 and backends.family("sm90") is sm90
    with pytest.raises(ValueError, match="not a planned kernel family"):
        backends.family("cutlass")
    with pytest.raises(ValueError, match="has no implementation"):
        backends.make_impl("auto", wrapper=None)


def test_fast_divmod_arithmetic_matches_integer_division():
    """traits.cuh FastDiv's arithmetic, replayed in Python for every page size 1..1100: the
    producer's token -> page and offset must equal t // page_size and t % page_size for every
    token index the kernel can see (0 <= t < 2^31)."""
    import random

    rng = random.Random(0)
    ns = [0, 1, 2, 63, 64, 65, 1023, 4095, 65535, 2**31 - 1, 2**31 - 2, 2**30] + \
        [rng.randrange(2**31) for _ in range(200)]
    for d in range(1, 1101):
        l = (d - 1).bit_length() if d > 1 else 0
        m = 1 if d & (d - 1) == 0 else ((1 << 32) * ((1 << l) - d)) // d + 1
        assert 0 < m < 2**32
        for n in ns + [k * d - 1 for k in (1, 2, 977) if k * d - 1 >= 0] + [k * d for k in (1, 3)]:
            q = (((n * m) >> 32) + n) % 2**32 >> l
            assert q == n // d and n - q * d == n % d, (d, n)


@pytest.mark.compile
def test_paced_box_rows_follow_the_device(host_program):
    """launcher.cuh's paced KV box size: 8 tokens where the DRAM gives <= 14 bytes per SM clock
    (an H100 SXM: 12.8; an H100 PCIe: 10.2), else 16 (an H200: 18.8; an H20: 26.6), 16 where
    an attribute is missing; on a device the H100 took 8 and the H200 16 (session 22 runs 1-2,
    benchmarks/results/logs/sm90_s22_2026-11-27). The same split picks which of a paced
    CTA's tiles use those boxes: all on the H100-like devices, only the second elsewhere
    (session 32 runs 5-8, session 33 runs 1-3). The KV stream's L2 policy does not follow the
    device: evict-normal (sm90/producer.cuh kKvNormalMaxHeads) and unpromoted whole-tile maps for
    <= 64 heads on every device (session 31 run 5 on an H200, session 32 run 2 on an H100).
    Pure host arithmetic, compiled with nvcc."""
    from mla_wrapper.jit import env

    source = r'''
#include <cstdio>
#include "mla_wrapper/sm90/launcher.cuh"
using namespace mlaw::sm90;
int main() {
  struct Dev { const char* name; int bus_bits, mem_khz, sm_khz, sms, bytes, rows; unsigned mask; };
  const Dev devs[] = {
      {"H100 SXM", 5120, 2619000, 1980000, 132, 13, 8, 0xffffffffu},
      {"H100 PCIe", 5120, 1593000, 1755000, 114, 10, 8, 0xffffffffu},
      {"H200", 6144, 3201000, 1980000, 132, 19, 16, 0x2u},
      {"H20", 6144, 2619000, 1980000, 78, 26, 16, 0x2u},
      {"unknown", 0, 3201000, 1980000, 132, 0, 16, 0x2u},
  };
  int bad = 0;
  for (const Dev& d : devs) {
    const int b = dram_bytes_per_sm_clock(d.bus_bits, d.mem_khz, d.sm_khz, d.sms);
    const int r = paced_box_rows_for(b);
    const unsigned n = paced_tile_mask_for(b);
    std::printf("%s %d %d %x\n", d.name, b, r, n);
    bad += b != d.bytes || r != d.rows || n != d.mask;
  }
  std::printf("evict-normal <= %d heads, unpromoted maps <= %d\n", kv_evict_normal_heads(),
              kv_promotion_none_heads());
  bad += kv_evict_normal_heads() != 64 || kv_promotion_none_heads() != 64;
  return bad;
}
'''
    cutlass = [f"-I{d}" for d in env.cutlass_include_dirs()]
    run = host_program(source, "-O1", "-arch=sm_90a", *cutlass, name="rows.cu")
    assert run.returncode == 0, run.stdout


@pytest.mark.compile
def test_early_q_instance_where_ctas_may_run_several_items(host_program):
    """launcher.cuh early_q_for: the paged kernel's early-Q instance (the next item's Q loaded
    during the current item's last tile) where a run may give CTAs several items, more row
    tiles than CTAs at most (q rows x row tiles a token); B=1 and other one-item grids keep the
    instance without that code, which cost them 2-3% from CUDA graphs (H100, session 38 run
    12). Pure host arithmetic, compiled with nvcc."""
    from mla_wrapper.jit import env

    source = r'''
#include <cstdio>
#include "mla_wrapper/sm90/launcher.cuh"
using namespace mlaw;
int main() {
  struct Case { int tokens, heads, ctas; bool early; };
  const Case cases[] = {
      {1, 16, 132, false},   {1, 128, 132, false},  {64, 128, 132, false}, {66, 128, 132, false},
      {67, 128, 132, true},  {128, 128, 132, true}, {132, 16, 132, false}, {200, 16, 132, true},
      {256, 16, 132, true},  {512, 64, 132, true},  {0, 128, 132, false},
  };
  int bad = 0;
  for (const Case& c : cases) {
    MlaPlan plan{};
    plan.num_ctas = c.ctas;
    MlaRunArgs args{};
    args.num_q_tokens = c.tokens;
    args.num_heads = c.heads;
    const bool e = sm90::early_q_for(plan, args);
    std::printf("tokens %d heads %d ctas %d: %d\n", c.tokens, c.heads, c.ctas, int(e));
    bad += e != c.early;
  }
  return bad;
}
'''
    cutlass = [f"-I{d}" for d in env.cutlass_include_dirs()]
    run = host_program(source, "-O1", "-arch=sm_90a", *cutlass, name="early_q.cu")
    assert run.returncode == 0, run.stdout


@pytest.mark.parametrize("value,on", [(None, True), ("", True), ("1", True), ("0", False),
                                      ("off", False), ("False", False)])
def test_pdl_switch(monkeypatch, value, on):
    """MLA_WRAPPER_PDL=0 (or off / false / no) keeps the sm90 attention launch ordinary; unset or
    anything else lets the wrapper ask for programmatic dependent launch."""
    from mla_wrapper import backends

    if value is None:
        monkeypatch.delenv(backends.PDL_ENV, raising=False)
    else:
        monkeypatch.setenv(backends.PDL_ENV, value)
    assert backends.pdl_enabled() is on
