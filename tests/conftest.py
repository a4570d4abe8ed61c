"""Shared test fixtures: GPU skipping, a private JIT cache, NaN poisoning."""
from __future__ import annotations

import os
import shutil

import pytest


def _cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


HAS_CUDA = _cuda_available()
HAS_NVCC = shutil.which("nvcc") is not None or bool(os.environ.get("CUDA_HOME"))


def _is_sm100() -> bool:
    if not HAS_CUDA:
        return False
    import torch

    return torch.cuda.get_device_capability()[0] == 10


def planned_backends() -> list[str]:
    """The planned kernel families the current GPU runs: sm80 and sm90 on Hopper, sm80
    elsewhere (and without CUDA, where the GPU tests using them skip)."""
    if not HAS_CUDA:
        return ["sm80"]
    import torch

    return ["sm80", "sm90"] if torch.cuda.get_device_capability()[0] == 9 else ["sm80"]


def pytest_generate_tests(metafunc):
    """A test taking ``planned_backend`` runs once per planned family this GPU has."""
    if "planned_backend" in metafunc.fixturenames:
        metafunc.parametrize("planned_backend", planned_backends())


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    skip_sm100 = pytest.mark.skip(reason="needs a Blackwell (SM100) GPU")
    skip_nvcc = pytest.mark.skip(reason="needs nvcc (CUDA_HOME or PATH)")
    for item in items:
        if "gpu" in item.keywords and not HAS_CUDA:
            item.add_marker(skip_gpu)
        if "sm100" in item.keywords and not _is_sm100():
            item.add_marker(skip_sm100)
        if "compile" in item.keywords and not HAS_NVCC:
            item.add_marker(skip_nvcc)


@pytest.fixture
def poison():
    """poison(t) fills t with NaN (the kernel must overwrite every element) and returns it."""
    def _poison(t):
        t.fill_(float("nan"))
        return t
    return _poison


@pytest.fixture
def host_program(tmp_path):
    """host_program(source, *flags, name="prog.cpp") compiles the C++ `source` with nvcc against
    the package's headers (plus `flags`), asserts that it built, runs it and returns the run's
    CompletedProcess (exit status not checked: the caller asserts on it)."""
    import subprocess

    from mla_wrapper.jit import env

    def build_and_run(source: str, *flags: str, name: str = "prog.cpp"):
        src, exe = tmp_path / name, tmp_path / "prog"
        src.write_text(source)
        proc = subprocess.run([str(env.nvcc_path()), "-std=c++17", f"-I{env.include_dir()}",
                               *flags, str(src), "-o", str(exe)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return subprocess.run([str(exe)], capture_output=True, text=True)

    return build_and_run


@pytest.fixture
def wrap_nvcc(tmp_path, monkeypatch):
    """wrap_nvcc(shell) points CUDA_HOME at a bin/nvcc that runs `shell` for each compile (not
    for --version), then execs the real nvcc."""
    import stat
    import textwrap

    import mla_wrapper.jit.env as jit_env

    def install(shell: str) -> None:
        real = jit_env.nvcc_path()
        home = tmp_path / "cuda"
        (home / "bin").mkdir(parents=True, exist_ok=True)
        script = home / "bin" / "nvcc"
        script.write_text(textwrap.dedent(f"""\
            #!/bin/sh
            case "$*" in *--version*) ;; *) {shell} ;; esac
            exec {real} "$@"
            """))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("CUDA_HOME", str(home))
        jit_env.cuda_home.cache_clear()

    yield install
    jit_env.cuda_home.cache_clear()
