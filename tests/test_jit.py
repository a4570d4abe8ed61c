"""The JIT build path: naming/hashing, caching, concurrency, corruption, errors, CLI.

These compile the tiny selftest kernel for sm_80 (a few seconds each); they need nvcc but no GPU.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from mla_wrapper.jit import JitBuildError, JitCacheError, build, entry_dir, is_complete, render

from mla_wrapper.jit.selftest import selftest_spec
import mla_wrapper.jit.builder as jit_build
import mla_wrapper.jit.env as jit_env


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("MLA_WRAPPER_CACHE_DIR", str(d))
    return d


@pytest.fixture
def counting_nvcc(tmp_path, wrap_nvcc):
    """CUDA_HOME whose bin/nvcc logs each compile (not --version) to a file, then runs nvcc."""
    log = tmp_path / "compiles.log"
    wrap_nvcc(f'echo "$$" >> {log}')
    return log


def _compiles(log: Path) -> int:
    return len(log.read_text().split()) if log.exists() else 0


def test_spec_name_and_render():
    spec = selftest_spec("sm_90a", 3.0)
    assert spec.name == "selftest_3p0_sm_90a"
    src = render(spec)
    assert "in[i] * 3.0f" in src and 'extern "C"' in src or "MLAW_EXPORT" in src


def test_hash_covers_params_arch_and_flags(cache):
    base = selftest_spec("sm_90a", 2.0)
    key = jit_build.entry_key(base)[1]
    assert jit_build.entry_key(selftest_spec("sm_90a", 2.5))[1] != key
    assert jit_build.entry_key(selftest_spec("sm_100a", 2.0))[1] != key
    assert jit_build.entry_key(replace(base, extra_flags=("-DFOO=1",)))[1] != key
    assert jit_build.entry_key(selftest_spec("sm_90a", 2.0))[1] == key


@pytest.mark.compile
def test_build_then_cached(cache, counting_nvcc):
    spec = selftest_spec("sm_80", 1.5)
    lib = build(spec)
    assert lib.exists() and is_complete(lib.parent)
    assert _compiles(counting_nvcc) == 1
    mtime = lib.stat().st_mtime_ns
    assert build(spec) == lib
    assert _compiles(counting_nvcc) == 1 and lib.stat().st_mtime_ns == mtime


def _build_in_child(args):
    cache_dir, cuda_home = args
    os.environ["MLA_WRAPPER_CACHE_DIR"] = cache_dir
    os.environ["CUDA_HOME"] = cuda_home
    from mla_wrapper.jit import build as b
    from mla_wrapper.jit.selftest import selftest_spec as s
    return str(b(s("sm_80", 4.25)))


@pytest.mark.compile
def test_concurrent_processes_build_once(cache, counting_nvcc):
    cuda_home = os.environ["CUDA_HOME"]
    ctx = mp.get_context("spawn")
    with ctx.Pool(6) as pool:
        paths = pool.map(_build_in_child, [(str(cache), cuda_home)] * 6)
    assert len(set(paths)) == 1
    assert _compiles(counting_nvcc) == 1
    assert is_complete(Path(paths[0]).parent)


@pytest.mark.compile
def test_corrupt_library_is_rebuilt(cache, counting_nvcc):
    spec = selftest_spec("sm_80", 0.5)
    lib = build(spec)
    data = lib.read_bytes()
    lib.write_bytes(data[: len(data) // 3])   # truncated
    assert not is_complete(lib.parent)
    assert build(spec) == lib and is_complete(lib.parent)
    assert _compiles(counting_nvcc) == 2
    lib.write_bytes(b"\0" * len(data))         # same size, garbage
    assert not is_complete(lib.parent)
    build(spec)
    assert _compiles(counting_nvcc) == 3 and lib.read_bytes()[:4] == b"\x7fELF"


@pytest.mark.compile
def test_build_killed_halfway_is_not_complete(cache, counting_nvcc):
    spec = selftest_spec("sm_80", 0.25)
    entry = entry_dir(spec)
    entry.mkdir(parents=True)
    # what a killed build leaves: a temp output, maybe a lib.so, but no COMPLETE marker
    (entry / "lib.so.tmp.12345").write_bytes(b"\x7fELF partial")
    (entry / "lib.so").write_bytes(b"\x7fELF partial")
    assert not is_complete(entry)
    lib = build(spec)
    assert is_complete(entry) and _compiles(counting_nvcc) == 1
    assert lib.stat().st_size > 1000


@pytest.mark.compile
def test_compile_error_reports_first_errors_and_log(cache):
    spec = replace(selftest_spec("sm_80", 1.0), params=(("scale", "1.0 + undefined_symbol_xyz +"),))
    with pytest.raises(JitBuildError) as info:
        build(spec)
    msg = str(info.value)
    assert "error" in msg and "undefined_symbol_xyz" in msg
    log = msg.rsplit("full log: ", 1)[1].strip()
    assert Path(log).exists() and "undefined_symbol_xyz" in Path(log).read_text()
    assert not is_complete(entry_dir(spec))


def test_unwritable_cache_dir(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("MLA_WRAPPER_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(JitCacheError, match="MLA_WRAPPER_CACHE_DIR"):
        build(selftest_spec("sm_80", 7.0))


def test_arch_normalization():
    assert jit_env.normalize_arch("9.0a") == "sm_90a"
    assert jit_env.normalize_arch("sm_100a") == "sm_100a"
    assert jit_env.normalize_arch("10.0a") == "sm_100a"
    assert jit_env.normalize_arch("8.6") == "sm_86"
    assert jit_env.arch_for_capability(9, 0) == "sm_90a"
    assert jit_env.arch_for_capability(10, 0) == "sm_100a"
    with pytest.raises(ValueError, match="arch"):
        jit_env.normalize_arch("hopper")


def test_arch_list_env(monkeypatch):
    monkeypatch.setenv("MLA_WRAPPER_CUDA_ARCH_LIST", "9.0a,10.0a")
    assert jit_env.requested_archs() == ["sm_90a", "sm_100a"]


def test_import_is_cheap():
    code = ("import sys, time; t = time.time(); import mla_wrapper; dt = time.time() - t; "
            "assert 'torch' not in sys.modules, 'import mla_wrapper imported torch'; "
            "assert not any(m.startswith('mla_wrapper.') and m != 'mla_wrapper' for m in sys.modules "
            "if m.startswith('mla_wrapper.') and 'jit' not in m), sorted(sys.modules); print(dt)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) < 0.5


@pytest.mark.compile
def test_cli_list_clean_info(cache):
    build(selftest_spec("sm_80", 9.0))
    run = lambda *a: subprocess.run([sys.executable, "-m", "mla_wrapper", *a], capture_output=True,
                                    text=True, env=os.environ.copy())
    out = run("list")
    assert out.returncode == 0 and "selftest_9p0_sm_80" in out.stdout and "ok" in out.stdout
    info = run("info")
    assert info.returncode == 0 and "cache dir" in info.stdout and str(cache) in info.stdout
    out = run("clean", "selftest")
    assert out.returncode == 0 and "removed 1" in out.stdout
    assert "selftest_9p0" not in run("list").stdout


@pytest.mark.gpu
def test_selftest_kernel_runs_on_gpu():
    """A library from the cache (built here or shipped from a CPU machine) loads and runs."""
    import torch

    from mla_wrapper.jit import load

    spec = selftest_spec(jit_env.device_arch(), 2.0)
    mod = load(spec)
    x = torch.randn(1000, device="cuda")
    y = torch.full_like(x, float("nan"))
    mod.call("mlaw_selftest_scale", x.data_ptr(), y.data_ptr(), x.numel(),
             torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2.0)
    with pytest.raises(Exception, match="n must be >= 0"):
        mod.call("mlaw_selftest_scale", x.data_ptr(), y.data_ptr(), -1, 0)


@pytest.mark.compile
def test_cli_warmup_then_nothing_to_build(cache):
    env = os.environ.copy()
    cmd = [sys.executable, "-m", "mla_wrapper", "warmup", "--arch", "sm_90a", "--family", "merge",
           "--dtype", "bf16", "--jobs", "2"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr
    assert "2 to build" in first.stdout and "built 2 of 2" in first.stdout
    second = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert second.returncode == 0 and "2 cached, 0 to build" in second.stdout
    bad = subprocess.run(cmd[:-4] + ["--family", "nope"], capture_output=True, text=True, env=env)
    assert bad.returncode != 0 and "--family" in bad.stderr
