"""The one validation helper: checks that raise ValueError naming the argument and the fix, and
the small argument helpers the entry points share (dtype names, a device's index)."""
from __future__ import annotations

import operator
from typing import Iterable, Optional, Sequence

import torch

INT32_MAX = (1 << 31) - 1

DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32",
               torch.float8_e4m3fn: "fp8_e4m3"}


def dtype_name(dtype: torch.dtype) -> str:
    try:
        return DTYPE_NAMES[dtype]
    except KeyError:
        raise ValueError(f"unsupported dtype {dtype}") from None


def device_index(device: torch.device) -> int:
    """The CUDA index of ``device`` (the current device for a bare ``cuda``)."""
    return device.index if device.index is not None else torch.cuda.current_device()


def check_tensor(name: str, t, *, dtypes: Optional[Iterable[torch.dtype]] = None,
                 ndim: Optional[int] = None, shape: Optional[Sequence[Optional[int]]] = None,
                 device: Optional[torch.device] = None, cuda: bool = False,
                 last_dim_contiguous: bool = False) -> None:
    """Validate one tensor argument. ``shape`` entries of None match any size."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if dtypes is not None:
        dtypes = tuple(dtypes)
        if t.dtype not in dtypes:
            want = " or ".join(str(d).replace("torch.", "") for d in dtypes)
            hint = " (convert with .int())" if torch.int32 in dtypes and t.dtype == torch.int64 else ""
            raise ValueError(f"{name}: expected dtype {want}, got {str(t.dtype).replace('torch.', '')}{hint}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name}: expected a {ndim}-d tensor, got shape {tuple(t.shape)}")
    if shape is not None:
        if t.dim() != len(shape) or any(s is not None and s != d for s, d in zip(shape, t.shape)):
            want = "[" + ", ".join("*" if s is None else str(s) for s in shape) + "]"
            raise ValueError(f"{name}: expected shape {want}, got {list(t.shape)}")
    if cuda and t.device.type != "cuda":
        raise ValueError(f"{name}: expected a CUDA tensor, got one on {t.device} (move it with .cuda())")
    if device is not None and t.device != device:
        raise ValueError(f"{name}: expected device {device}, got {t.device}")
    if last_dim_contiguous and t.dim() > 0 and t.shape[-1] > 1 and t.stride(-1) != 1:
        raise ValueError(f"{name}: the last dimension must be contiguous (stride 1), got strides "
                         f"{t.stride()} (call .contiguous())")


def check_int(name: str, value, minimum: Optional[int] = None, maximum: int = INT32_MAX,
              hint: str = "") -> int:
    """An integer argument (int or numpy integer; not bool, float or str) in
    [minimum, maximum]; returns it as a Python int."""
    if isinstance(value, bool):
        raise ValueError(f"{name}: expected an int, got bool {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise ValueError(f"{name}: expected an int, got {type(value).__name__} {value!r}") from None
    if (minimum is not None and value < minimum) or value > maximum:
        lo = "" if minimum is None else f">= {minimum} and "
        raise ValueError(f"{name}: expected an int {lo}<= {maximum}{hint}, got {value}")
    return value


def check_same_device(**tensors) -> torch.device:
    devices = {name: t.device for name, t in tensors.items() if t is not None}
    first = next(iter(devices.values()))
    for name, dev in devices.items():
        if dev != first:
            others = ", ".join(f"{n}={d}" for n, d in devices.items())
            raise ValueError(f"{name}: all tensors must be on one device, got {others}")
    return first
