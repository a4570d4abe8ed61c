"""The JIT: KernelSpec -> rendered template -> ninja/nvcc -> cached shared library -> ctypes.

See builder.py for the cache layout and env.py for the environment variables.
"""
from .builder import JitBuildError, JitCacheError, build, entry_dir, is_complete, render
from .load import KernelError, KernelModule, load
from .spec import Export, KernelSpec

__all__ = ["Export", "KernelSpec", "KernelModule", "KernelError", "JitBuildError",
           "JitCacheError", "build", "entry_dir", "is_complete", "load", "render"]
