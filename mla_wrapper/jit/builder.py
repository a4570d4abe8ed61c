"""The one build path: render -> build.ninja -> ninja/nvcc -> atomic rename into the cache.

Cache entry layout, ``$MLA_WRAPPER_CACHE_DIR/<name>-<hash>/``:
    source.cu (or .cpp)   the rendered template
    build.ninja           the command that built it
    build.log             nvcc's output
    lib.so                the library (written as lib.so.tmp.<pid>, then renamed)
    COMPLETE              "<size> <sha256>" of lib.so, written last (atomically)

An entry counts as built only when COMPLETE exists and matches lib.so; anything else (a
build killed halfway, a truncated or corrupt library) is rebuilt. One file lock per entry
makes N processes asking for the same kernel compile it once.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from filelock import FileLock

from . import env
from .spec import KernelSpec

BASE_FLAGS = ("-O3", "-std=c++17", "-shared", "-Xcompiler=-fPIC", "-Xcompiler=-fvisibility=hidden",
              "-DNDEBUG", "-lineinfo")
CUDA_FLAGS = ("--expt-relaxed-constexpr", "--expt-extended-lambda", "-cudart=static",
              "-Xptxas=--warn-on-spills")


class JitBuildError(RuntimeError):
    """nvcc failed; the message holds its first error lines and the full log's path."""


class JitCacheError(RuntimeError):
    """The cache directory cannot be used."""


def render(spec: KernelSpec) -> str:
    import jinja2  # noqa: PLC0415 (only needed when building)

    loader = jinja2.FileSystemLoader(str(env.templates_dir()))
    jenv = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True)
    try:
        template = jenv.get_template(spec.template)
    except jinja2.TemplateNotFound as e:
        raise ValueError(f"KernelSpec.template: no template {spec.template!r} in "
                         f"{env.templates_dir()}") from e
    return template.render(spec=spec, name=spec.name, **spec.param_dict)


def gencode_flags(arch: str) -> list[str]:
    if arch == "host":
        return []
    num = arch[len("sm_"):]
    return [f"-gencode=arch=compute_{num},code=sm_{num}"]


def compile_flags(spec: KernelSpec) -> list[str]:
    flags = list(BASE_FLAGS)
    inc = [env.include_dir()]
    if spec.use_cutlass:
        inc += list(env.cutlass_include_dirs())
    flags += [f"-I{p}" for p in inc]
    if not spec.is_host:
        flags += list(CUDA_FLAGS) + gencode_flags(spec.arch)
        if env.nvcc_threads() > 1:
            flags.append(f"--threads={env.nvcc_threads()}")
    flags += list(spec.extra_flags)
    return flags


def _headers_digest(spec: KernelSpec, h) -> None:
    root = env.include_dir() / "mla_wrapper"
    for sub in sorted(set(("common",) + tuple(spec.header_dirs))):
        folder = root / sub
        if not folder.is_dir():
            raise ValueError(f"KernelSpec.header_dirs: no folder {folder}")
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                h.update(str(path.relative_to(root)).encode())
                h.update(path.read_bytes())


_KEY_CACHE: dict[KernelSpec, tuple[str, str]] = {}


def entry_key(spec: KernelSpec) -> tuple[str, str]:
    """(rendered source, hash): the hash covers the source, our headers, the flags, nvcc's
    version, the arch and (for CUTLASS kernels) the nvidia-cutlass version."""
    cached = _KEY_CACHE.get(spec)
    if cached is not None:
        return cached
    source = render(spec)
    h = hashlib.sha256()
    h.update(source.encode())
    _headers_digest(spec, h)
    h.update(" ".join(str(f) for f in compile_flags(spec) if not f.startswith("-I")).encode())
    h.update(env.nvcc_version().encode())
    h.update(spec.arch.encode())
    if spec.use_cutlass:
        h.update(env.cutlass_version().encode())
    key = (source, h.hexdigest()[:16])
    _KEY_CACHE[spec] = key
    return key


def entry_dir(spec: KernelSpec) -> Path:
    return env.cache_dir() / f"{spec.name}-{entry_key(spec)[1]}"


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_complete(entry: Path) -> bool:
    """True when entry/lib.so exists and matches the size + sha256 recorded in COMPLETE."""
    marker, lib = entry / "COMPLETE", entry / "lib.so"
    try:
        size, digest = marker.read_text().split()
        if lib.stat().st_size != int(size):
            return False
        with open(lib, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return False
        return _file_digest(lib) == digest
    except (OSError, ValueError):
        return False


def _ensure_cache_root() -> Path:
    root = env.cache_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=root, prefix=".probe-", delete=True)
        probe.close()
    except OSError as e:
        raise JitCacheError(
            f"cache directory {root} is not writable ({e.strerror}): point "
            f"MLA_WRAPPER_CACHE_DIR at a writable folder"
        ) from e
    return root


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _ninja_escape(s: str) -> str:
    return s.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def _first_errors(log: str, limit: int = 12) -> str:
    lines = log.splitlines()
    errs = [i for i, line in enumerate(lines) if "error" in line.lower()]
    if not errs:
        return "\n".join(lines[-limit:])
    first = errs[0]
    return "\n".join(lines[max(0, first - 1): first + limit])


def _ninja_binary() -> str:
    try:
        import ninja  # noqa: PLC0415

        return str(Path(ninja.BIN_DIR) / "ninja")
    except ImportError:
        return "ninja"


def build(spec: KernelSpec) -> Path:
    """Build spec into the cache (if not already there) and return the library's path."""
    source, digest = entry_key(spec)
    root = _ensure_cache_root()
    entry = root / f"{spec.name}-{digest}"
    lib = entry / "lib.so"
    if is_complete(entry):
        return lib
    with FileLock(str(root / f"{spec.name}-{digest}.lock")):
        if is_complete(entry):  # another process built it while we waited
            return lib
        entry.mkdir(parents=True, exist_ok=True)
        (entry / "COMPLETE").unlink(missing_ok=True)
        src = entry / ("source.cpp" if spec.is_host else "source.cu")
        _atomic_write(src, source)
        tmp_lib = f"lib.so.tmp.{os.getpid()}"
        flags = " ".join(_ninja_escape(str(f)) for f in compile_flags(spec))
        ninja_file = (
            "ninja_required_version = 1.3\n"
            f"nvcc = {_ninja_escape(str(env.nvcc_path()))}\n"
            f"flags = {flags}\n"
            "rule nvcc\n"
            "  command = $nvcc $flags $in -o $out\n"
            "  description = nvcc " + spec.name + "\n"
            f"build {tmp_lib}: nvcc {src.name}\n"
        )
        _atomic_write(entry / "build.ninja", ninja_file)
        log_path = entry / "build.log"
        try:
            proc = subprocess.run([_ninja_binary(), "-C", str(entry), "-f", "build.ninja"],
                                  capture_output=True, text=True)
        except OSError as e:
            raise JitBuildError(f"could not run ninja for {spec.name}: {e}") from e
        log_path.write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            (entry / tmp_lib).unlink(missing_ok=True)
            raise JitBuildError(
                f"building kernel {spec.name} failed:\n{_first_errors(proc.stdout + proc.stderr)}\n"
                f"full log: {log_path}"
            )
        os.replace(entry / tmp_lib, lib)
        _atomic_write(entry / "COMPLETE", f"{lib.stat().st_size} {_file_digest(lib)}\n")
    return lib
