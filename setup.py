"""Packaging hook: the wheel carries the kernel headers (include/) and the JIT templates
(jit_templates/) under mla_wrapper/_data so an installed wheel can JIT-compile without the
source tree. Editable installs read them from the repository root instead."""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent.resolve()


class BuildPyWithData(build_py):
    def run(self):
        super().run()
        if self.editable_mode:
            return
        dest = Path(self.build_lib) / "mla_wrapper" / "_data"
        for name in ("include", "jit_templates"):
            target = dest / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(ROOT / name, target, ignore=shutil.ignore_patterns("__pycache__"))


setup(cmdclass={"build_py": BuildPyWithData})
