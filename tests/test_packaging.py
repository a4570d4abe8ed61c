"""The wheel carries include/ and jit_templates/, so an installed wheel JIT-compiles without the
source tree."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", str(ROOT), "--no-deps",
                    "--no-build-isolation", "-w", str(out)], check=True)
    return next(out.glob("mla_wrapper-*.whl"))


def test_wheel_carries_headers_and_templates(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for rel in ("include/mla_wrapper/common/plan.h", "include/mla_wrapper/sm80/mla_kernel.cuh",
                "include/mla_wrapper/planner/planner.h", "jit_templates/sm80_mla.cu.jinja",
                "jit_templates/merge.cu.jinja", "jit_templates/sm100_mla.cu.jinja",
                "include/mla_wrapper/sm90/launcher.cuh", "jit_templates/sm90_mla.cu.jinja"):
        assert f"mla_wrapper/_data/{rel}" in names, rel
    for mod in ("jit/builder.py", "backends/__init__.py", "backends/planned.py", "backends/sm80.py",
                "backends/sm90.py", "backends/cutlass.py"):
        assert f"mla_wrapper/{mod}" in names, mod
    assert "mla_wrapper/py.typed" in names        # PEP 561: the package ships type information


@pytest.mark.compile
def test_installed_wheel_builds_a_kernel(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True)
    code = ("import mla_wrapper.jit.env as e, mla_wrapper.jit as j; "
            "from mla_wrapper.jit.selftest import selftest_spec; "
            "assert '_data' in str(e.data_dir()), e.data_dir(); "
            "print(j.build(selftest_spec('sm_80', 5.0)))")
    env = dict(os.environ, PYTHONPATH=str(target), MLA_WRAPPER_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).exists()
