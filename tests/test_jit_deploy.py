"""Deployment of the JIT cache (issue 11): prebuilt caches load without nvcc, `warmup --export`,
no stray entries from failed builds, stale temp files cleaned, builds in their own process
group, the first-use compile log, `info --check`, and the CLI / environment parsing."""
from __future__ import annotations

import importlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mla_wrapper.jit.builder as jit_build
import mla_wrapper.jit.env as jit_env
from mla_wrapper.jit import JitBuildError, JitCacheError, build, entry_dir, is_complete, load
from mla_wrapper.jit.registry import warmup_plan
from mla_wrapper.jit.selftest import selftest_spec

jit_load = importlib.import_module("mla_wrapper.jit.load")   # (mla_wrapper.jit.load is the function)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("MLA_WRAPPER_CACHE_DIR", str(d))
    return d


def _no_nvcc_env(cache_dir: Path) -> dict:
    """An environment where no nvcc can be found: PATH without it, CUDA_HOME bogus."""
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and not (Path(p) / "nvcc").exists())
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_PATH",)}
    env.update(PATH=path, CUDA_HOME="/nonexistent", MLA_WRAPPER_CACHE_DIR=str(cache_dir),
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in sys.path if p]))
    return env


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "mla_wrapper", *args], capture_output=True,
                          text=True, env=env or os.environ.copy(), cwd=str(ROOT))


# ------------------------------------------------------------------ 1: prebuilt caches
def test_entry_key_needs_no_compiler(cache, monkeypatch):
    spec = selftest_spec("sm_90a", 2.0)
    key = jit_build.entry_key(spec)[1]
    jit_build._KEY_CACHE.clear()
    monkeypatch.setattr(jit_env, "nvcc_version", lambda: "none")
    monkeypatch.setenv("MLA_WRAPPER_NVCC_THREADS", "4")      # parallelism, not the binary
    assert jit_build.entry_key(spec)[1] == key
    jit_build._KEY_CACHE.clear()


@pytest.mark.compile
def test_exported_cache_loads_without_nvcc(cache, tmp_path):
    shipped = tmp_path / "shipped"
    first = _cli("warmup", "--arch", "sm_90a", "--family", "planner", "--export", str(shipped))
    assert first.returncode == 0, first.stderr
    assert "1 to build" in first.stdout and "exported 1 entries" in first.stdout
    manifest = json.loads((shipped / "MANIFEST.json").read_text())
    (entry,) = manifest["entries"]
    assert entry["name"] == "planner_host" and entry["nvcc_version"] != "none"
    assert is_complete(shipped / entry["entry"])

    env = _no_nvcc_env(shipped)
    again = _cli("warmup", "--arch", "sm_90a", "--family", "planner", env=env)
    assert again.returncode == 0, again.stderr
    assert "1 cached, 0 to build" in again.stdout
    code = "from mla_wrapper import planner; print(planner._module().path)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, cwd=str(tmp_path))
    assert loaded.returncode == 0, loaded.stderr
    assert Path(loaded.stdout.strip()).parent == shipped / entry["entry"]


def test_missing_nvcc_leaves_no_stray_entry(cache, monkeypatch):
    env = _no_nvcc_env(cache)
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    jit_env.cuda_home.cache_clear()
    try:
        with pytest.raises(JitBuildError, match="nvcc not found") as info:
            build(selftest_spec("sm_80", 6.5))
    finally:
        jit_env.cuda_home.cache_clear()
    assert "not in the cache" in str(info.value)
    assert not cache.exists() or not any(p.is_dir() for p in cache.iterdir())


@pytest.mark.compile
def test_driver_too_old_is_refused_with_the_reason(cache, monkeypatch):
    spec = selftest_spec("sm_80", 1.25)
    entry = build(spec).parent
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["arch"] == "sm_80" and meta["cuda_version"] == jit_env.nvcc_version().rsplit(".", 1)[0]
    meta["cuda_version"], meta["nvcc_version"] = "99.0", "99.0.1"
    (entry / "meta.json").write_text(json.dumps(meta))
    monkeypatch.setattr(jit_load, "driver_cuda_version", lambda: (13, 0))
    with pytest.raises(JitCacheError, match=r"built with CUDA 99\.0.*driver here supports CUDA 13\.0"):
        jit_load.KernelModule(spec, entry / "lib.so")
    monkeypatch.setattr(jit_load, "driver_cuda_version", lambda: (99, 2))   # newer minor: ok
    jit_load.KernelModule(spec, entry / "lib.so")


# -------------------------------------------------------------- 4: killed builds
@pytest.mark.compile
def test_stale_temp_files_are_cleaned_on_the_next_build(cache):
    spec = selftest_spec("sm_80", 0.75)
    entry = entry_dir(spec)
    entry.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = [entry / f"lib.so.tmp.{dead.pid}", entry / f"source.cu.tmp.{dead.pid}"]
    live = entry / f"lib.so.tmp.{os.getppid()}"
    for p in stale + [live]:
        p.write_bytes(b"\x7fELF partial")
    build(spec)
    assert is_complete(entry)
    assert not any(p.exists() for p in stale)
    assert live.exists()      # a live process's file is not ours to remove


@pytest.mark.compile
def test_build_runs_in_its_own_process_group(cache, tmp_path, wrap_nvcc):
    record = tmp_path / "pgid"
    wrap_nvcc(f"ps -o pgid= -p $$ > {record}")
    build(selftest_spec("sm_80", 3.75))
    assert int(record.read_text()) != os.getpgid(0)


# ------------------------------------------------------------------- logging, info
@pytest.mark.compile
def test_first_use_compile_is_logged(cache, caplog):
    with caplog.at_level(logging.INFO, logger="mla_wrapper.jit"):
        load(selftest_spec("sm_80", 8.5))
    text = caplog.text
    assert "compiling kernel selftest_8p5_sm_80" in text
    assert "compiled kernel selftest_8p5_sm_80 in" in text and "mla_wrapper warmup" in text


@pytest.mark.compile
def test_info_check(cache):
    out = _cli("info", "--check")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "check         ok" in out.stdout


# ------------------------------------------------------------------- 3: CLI / env
@pytest.mark.parametrize("dtype", ["fp8", "bf16,fp8"])
def test_warmup_unknown_dtype_is_one_line_error(cache, dtype):
    out = _cli("warmup", "--arch", "sm_90a", "--dtype", dtype)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "--dtype" in out.stderr
    assert "valid: bf16, fp16" in out.stderr and "Traceback" not in out.stderr


def test_warmup_dtype_no_selected_family_has_is_an_error():
    with pytest.raises(ValueError, match="unknown dtype 'fp32'.*sm80: bf16,fp16"):
        warmup_plan(["sm_90a"], ["bf16", "fp32"], ["sm80"])
    specs, notes = warmup_plan(["sm_90a"], ["bf16", "fp32"], ["merge", "sm80"])
    assert "merge_fp32_sm_90a" in {s.name for s in specs}
    assert any("fp32" in n and "sm80" in n for n in notes)


@pytest.mark.parametrize("jobs", ["0", "-1", "x"])
def test_warmup_bad_jobs(cache, jobs):
    out = _cli("warmup", "--arch", "sm_90a", "--jobs", jobs)
    assert out.returncode == 2 and "--jobs" in out.stderr and "positive integer" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("cmd", ["list", "info"])
def test_bad_max_jobs_env_does_not_crash(cache, cmd):
    env = dict(os.environ, MLA_WRAPPER_MAX_JOBS="abc")
    out = _cli(cmd, env=env)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "MLA_WRAPPER_MAX_JOBS" in out.stderr


def test_default_jobs_capped_by_memory(monkeypatch):
    monkeypatch.delenv("MLA_WRAPPER_MAX_JOBS", raising=False)
    monkeypatch.setattr(jit_env.os, "cpu_count", lambda: 64)
    monkeypatch.setattr(jit_env, "available_memory_bytes", lambda: 9 << 30)
    assert jit_env.max_jobs() == 2
    monkeypatch.setattr(jit_env, "available_memory_bytes", lambda: 1 << 30)
    assert jit_env.max_jobs() == 1
    monkeypatch.setenv("MLA_WRAPPER_MAX_JOBS", "5")
    assert jit_env.max_jobs() == 5
    help_text = _cli("warmup", "--help").stdout
    assert "4 GB" in " ".join(help_text.split())


def test_old_arch_says_what_was_skipped(cache):
    out = _cli("warmup", "--arch", "sm_75", "--family", "sm80,merge")
    assert out.returncode == 0, out.stderr
    assert "0 kernels" in out.stdout
    assert "skipped sm80" in out.stderr and "skipped merge" in out.stderr
    assert "sm_80 or newer" in out.stderr


def test_cutlass_on_hopper_says_why_nothing_was_built(cache):
    out = _cli("warmup", "--arch", "sm_90a", "--family", "cutlass")
    assert out.returncode == 0, out.stderr
    assert "0 kernels" in out.stdout and "skipped cutlass" in out.stderr
    assert "Blackwell" in out.stderr


def test_sm_100f_builds_the_cutlass_kernel():
    specs, notes = warmup_plan(["sm_100f"], ["bf16"], ["cutlass"])
    assert not notes
    assert {s.arch for s in specs} == {"sm_100f"} and len(specs) == 2   # tma + cp.async
    assert all(s.family == "sm100_mla" for s in specs)
