"""SM100 (Blackwell) backend: CUTLASS's MLA decode kernel, JIT-instantiated from nvidia-cutlass.

The kernel is ``cutlass::fmha::device::MLA<Sm100FmhaMlaKernelTmaWarpspecialized<...>>`` from
CUTLASS's example 77_blackwell_fmha (see include/mla_wrapper/sm100/mla_adapter.cuh for the
facts it is built on). What it supports, and what this module adds around it:

* Heads: the kernel computes exactly 128 heads per tile. ``run`` pads H < 128 to 128 with a
  small copy of q (never of the cache) and copies rows [0, H) back into ``out``; H > 128 runs
  in chunks of 128 heads.
* Head dims 512 (latent, ``ckv``) and 64 (rope, ``kpe``); decode only (one query per request,
  no causal mask).
* dtypes: bf16 and fp16 (out has the input dtype); fp8 e4m3 q + cache with bf16 out is
  instantiated too (experimental: it compiles for sm_100a, but no test runs it; the kernel has
  no K/V scales, fold them into sm_scale and the output yourself).
* Tile scheduler: 'individual' by default (one tile per CTA). CUTLASS's persistent scheduler
  can deadlock when a CTA meets a tile with no KV work (an empty split of a short request, or
  seq_len 0) and then another tile (see mla_adapter.cuh); ``scheduler="persistent"`` is there
  for callers who know their batches cannot produce that.
* Page sizes (powers of two): 128 uses the TMA load path; 1..64 the cp.async path (it gathers
  128/page_size page-table entries per 128-token tile); 256, 512, ... use the TMA path on
  128-token sub-pages (the page table is expanded, the cache only re-viewed: needs pages whose
  tokens are contiguous, i.e. page stride == page_size * token stride).
* LSE: CUTLASS computes the natural-log LSE; ``run`` returns base 2 (FlashInfer's convention)
  unless ``return_lse_base_on_e=True``.
* kv_len == 0 gives o = 0 and lse = -inf (a small epilogue kernel writes them: CUTLASS writes
  nothing for empty requests).

Constraints the kernel does not check on the device (documented, not validated, since that
would need a device sync): ``seq_lens[b] <= page_table.shape[1] * page_size``; page-table
entries that are read must be valid page ids -- the first ceil(seq_len/page_size) of each row,
and with the cp.async path (page_size < 128) also those up to the next 128-token boundary
(``run`` zero-pads the table's columns to a multiple of 128/page_size when it is narrower);
cache slots read past seq_len (rest of the last 128-token tile) must hold finite values (they
are masked in the softmax, but 0 * NaN is NaN in the P @ V product).
"""
from __future__ import annotations

import functools
import math
from typing import Sequence

from ..jit.spec import Export, KernelSpec

FAMILY = "sm100_mla"
TEMPLATE = "sm100_mla.cu.jinja"

NUM_HEADS_TILE = 128      # CUTLASS TileShapeH: heads per tile (the kernel needs exactly 128)
TILE_KV = 128             # CUTLASS TileShapeS: KV tokens per tile
HEAD_DIM_CKV = 512
HEAD_DIM_KPE = 64
MAX_KV_SPLITS = 256       # the split reduction kernel's maximum (MLA<> instantiates it with 256)
# Bytes of workspace per (split, request) when split > 1: fp32 partial O [128, 512] plus fp32
# partial LSE [128] (Sm100FmhaMlaKernelTmaWarpspecialized::get_workspace_size).
WORKSPACE_BYTES_PER_SPLIT_AND_REQUEST = (4 * HEAD_DIM_CKV + 4) * NUM_HEADS_TILE

SUPPORTED_ARCHS = ("sm_100a", "sm_103a")
DTYPES = ("bf16", "fp16", "fp8_e4m3")
LOADS = ("tma", "cpasync")
SCHEDULERS = ("individual", "persistent")
LOG2E = 1.0 / math.log(2.0)

_RUN_ARGS = (
    "ptr", "i64", "i64",          # q_nope, stride_b, stride_h
    "ptr", "i64", "i64",          # q_pe
    "ptr", "i64", "i64",          # ckv, stride_page, stride_token
    "ptr", "i64", "i64",          # kpe
    "i32", "i32",                 # num_pages, page_size
    "ptr", "ptr", "i32", "i64", "i32",   # seq_lens, page_table, cols, row stride, batch
    "ptr", "i64", "i64", "ptr",   # o_acc, stride_b, stride_h, lse_acc
    "ptr", "i64", "i64", "i32",   # out, stride_b, stride_h, num_heads
    "ptr", "i64", "f32",          # lse_out, stride_b, lse_scale
    "f32", "i32", "i32",          # sm_scale, num_kv_splits, sm_count
    "ptr", "u64", "stream",       # workspace, bytes, stream
)

EXPORTS = (
    Export("mlaw_sm100_mla_workspace_size", ("i64", "i64", "i32", "i32", "ptr", "ptr")),
    Export("mlaw_sm100_mla_kernel_info", ("ptr",)),
    Export("mlaw_sm100_mla_run", _RUN_ARGS),
)


# ----------------------------------------------------------------------------------------
# Specs
# ----------------------------------------------------------------------------------------

def compile_arch(arch: str) -> str:
    """The arch a spec for ``arch`` is compiled for.

    CUTLASS's MLA kernel body is guarded by CUTLASS_ARCH_MMA_SM100A_ENABLED or ..._SM100F_ENABLED
    (cutlass/arch/config.h): compiled for sm_103a neither is defined and the kernel body is
    empty. B300 (sm_103) therefore gets the family-specific build sm_100f, whose code runs on
    every CC 10.x family member.
    """
    from ..jit.env import normalize_arch  # noqa: PLC0415

    arch = normalize_arch(arch)
    if arch not in SUPPORTED_ARCHS:
        raise ValueError(f"arch: the CUTLASS SM100 MLA kernel needs one of {SUPPORTED_ARCHS}, got {arch!r}")
    return "sm_100a" if arch == "sm_100a" else "sm_100f"


def load_path(page_size: int) -> str:
    """'tma' for page_size >= 128 (128-token pages or sub-pages), 'cpasync' below."""
    _check_page_size(page_size)
    return "tma" if page_size >= TILE_KV else "cpasync"


@functools.lru_cache(maxsize=None)
def _example_include_flags() -> tuple[str, ...]:
    # device/sm100_mla.hpp includes "kernel/..." and "common/pow_2.hpp" relative to
    # examples/77_blackwell_fmha, and "gather_tensor.hpp" from examples/common.
    from ..jit import env  # noqa: PLC0415

    try:
        dirs = env.cutlass_include_dirs()
    except RuntimeError:
        return ()  # nvidia-cutlass missing: the build reports it (use_cutlass=True)
    examples = [d for d in dirs if d.name == "examples"]
    if not examples:
        return ()
    root = examples[0]
    return (f"-I{root / '77_blackwell_fmha'}", f"-I{root / 'common'}")


def spec(dtype_name: str, arch: str = "sm_100a", *, load: str = "tma",
         scheduler: str = "individual") -> KernelSpec:
    """KernelSpec of one CUTLASS SM100 MLA instantiation.

    dtype_name: 'bf16', 'fp16' (output in the same dtype) or 'fp8_e4m3' (bf16 output).
    arch:       'sm_100a' (B200/GB200) or 'sm_103a' (B300: built as sm_100f, see compile_arch).
    load:       'tma' (page_size 128, or 128-token sub-pages of larger pages) or 'cpasync'
                (power-of-two page_size < 128); ``load_path(page_size)`` picks it.
    scheduler:  'individual' (default: one tile per CTA, cannot hit the persistent scheduler's
                empty-tile deadlock) or 'persistent' (CTAs loop over tiles; only safe when no
                CTA sees an empty split/request followed by another tile).
    """
    if dtype_name not in DTYPES:
        raise ValueError(f"dtype_name: expected one of {DTYPES}, got {dtype_name!r}")
    if load not in LOADS:
        raise ValueError(f"load: expected one of {LOADS}, got {load!r}")
    if scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler: expected one of {SCHEDULERS}, got {scheduler!r}")
    return KernelSpec(
        family=FAMILY, template=TEMPLATE, arch=compile_arch(arch),
        params=(("dtype", dtype_name), ("load", load), ("scheduler", scheduler)),
        exports=EXPORTS, header_dirs=("common", "sm100"), use_cutlass=True,
        extra_flags=_example_include_flags() + ("-Xptxas=-v",),
    )


def warmup_specs(arch: str, dtypes: Sequence[str]) -> list[KernelSpec]:
    """Specs to prebuild for ``arch``: both load paths (TMA, cp.async) per dtype, default
    scheduler. Empty for archs other than sm_100a / sm_103a."""
    try:
        from ..jit.env import normalize_arch  # noqa: PLC0415

        arch = normalize_arch(arch)
    except ValueError:
        return []
    if arch not in SUPPORTED_ARCHS:
        return []
    return [spec(d, arch, load=load) for d in dtypes if d in DTYPES for load in LOADS]


# ----------------------------------------------------------------------------------------
# Split heuristic and workspace (pure Python mirror of CUTLASS)
# ----------------------------------------------------------------------------------------

def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _check_page_size(page_size: int) -> None:
    if not isinstance(page_size, int) or page_size < 1 or page_size & (page_size - 1):
        raise ValueError(f"page_size: expected a power of two (1, 2, ..., 64, 128, 256, ...), got {page_size!r}")


def _device_sm_count() -> int:
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        raise ValueError("sm_count: pass the GPU's SM count (e.g. 148 for B200); sm_count <= 0 "
                         "queries the current CUDA device and there is none")
    return _sm_count_of(torch.cuda.current_device())


@functools.lru_cache(maxsize=None)
def _sm_count_of(device_index: int) -> int:
    import torch  # noqa: PLC0415

    return torch.cuda.get_device_properties(device_index).multi_processor_count


def get_num_kv_splits(max_seq_len: int, num_batches: int, sm_count: int = 0,
                      num_kv_splits: int = 1, page_size: int = TILE_KV) -> int:
    """The split count ``run`` uses (CUTLASS's MLA::set_split_kv, mirrored).

    num_kv_splits >= 1 is used as given; <= 0 (auto) applies CUTLASS's heuristic on the
    problem's K = ceil(max_seq_len / page_size) * page_size (what ``run`` derives from a page
    table with ceil(max_seq_len / page_size) columns):
        max_splits    = ceil(K / 128)
        sms_per_batch = max(1, sm_count // B)
        split_heur    = min(max_splits, sms_per_batch)
        k_waves       = ceil(max_splits / split_heur)
        split         = ceil(max_splits / k_waves)
    """
    max_seq_len, num_batches = int(max_seq_len), int(num_batches)
    num_kv_splits, sm_count = int(num_kv_splits), int(sm_count)
    if max_seq_len < 1:
        raise ValueError(f"max_seq_len: expected >= 1, got {max_seq_len}")
    if num_batches < 1:
        raise ValueError(f"num_batches: expected >= 1, got {num_batches}")
    if num_kv_splits > MAX_KV_SPLITS:
        raise ValueError(f"num_kv_splits: expected <= {MAX_KV_SPLITS} (or <= 0 for auto), got {num_kv_splits}")
    _check_page_size(page_size)
    if num_kv_splits >= 1:
        return num_kv_splits
    if sm_count <= 0:
        sm_count = _device_sm_count()
    k = _ceil_div(max_seq_len, page_size) * page_size
    max_splits = _ceil_div(k, TILE_KV)
    sms_per_batch = max(1, sm_count // num_batches)
    split_heur = min(max_splits, sms_per_batch)
    k_waves = _ceil_div(max_splits, split_heur)
    return _ceil_div(max_splits, k_waves)


def get_workspace_size(max_seq_len: int, num_batches: int, sm_count: int = 0,
                       num_kv_splits: int = 1, page_size: int = TILE_KV) -> int:
    """Workspace bytes ``run`` needs; pure Python, no GPU and no compile needed.

    Mirrors CUTLASS (examples/77_blackwell_fmha): MLA::get_workspace_size = the attention
    kernel's get_workspace_size + the reduction kernel's (0). For the split (non-fused)
    reduction the kernel needs, per split and request, an fp32 partial O [128, 512] and an fp32
    partial LSE [128]:

        split = get_num_kv_splits(max_seq_len, num_batches, sm_count, num_kv_splits, page_size)
        bytes = (4 * 512 + 4) * 128 * split * num_batches   if split > 1 else 0

    sm_count <= 0 uses the current CUDA device's SM count (there must be one). With auto
    splits (num_kv_splits <= 0) the size is not monotonic in max_seq_len (the wave-aware
    heuristic can pick fewer splits for a longer K); but split > 1 implies split <=
    sm_count // num_batches, so (4*512+4)*128*sm_count bytes (~38.9 MB for 148 SMs) always
    suffices for auto splits on a GPU with sm_count SMs (``max_auto_workspace_size``).
    """
    split = get_num_kv_splits(max_seq_len, num_batches, sm_count, num_kv_splits, page_size)
    if split <= 1:
        return 0
    return WORKSPACE_BYTES_PER_SPLIT_AND_REQUEST * split * int(num_batches)


def max_auto_workspace_size(sm_count: int = 0) -> int:
    """Workspace bytes that suffice for auto splits (num_kv_splits <= 0) at any batch size and
    length on a GPU with ``sm_count`` SMs: split > 1 only when split * B <= sm_count."""
    sm_count = int(sm_count) if int(sm_count) > 0 else _device_sm_count()
    return WORKSPACE_BYTES_PER_SPLIT_AND_REQUEST * sm_count


# ----------------------------------------------------------------------------------------
# run
# ----------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _module_for(dtype_name: str, load: str, scheduler: str, device_index: int):
    from ..jit import env, load as jit_load  # noqa: PLC0415

    arch = env.device_arch(device_index)
    try:
        kernel_spec = spec(dtype_name, arch, load=load, scheduler=scheduler)
    except ValueError as e:
        raise RuntimeError(f"the CUTLASS SM100 MLA kernel needs a Blackwell (SM100) GPU; "
                           f"cuda:{device_index} is {arch} ({e})") from None
    return jit_load(kernel_spec)


def _aligned16(t) -> bool:
    es = t.element_size()
    return t.data_ptr() % 16 == 0 and all((s * es) % 16 == 0 for s in t.stride()[:-1])


def _split_kv_cache(kv_cache):
    """(ckv, kpe, name_ckv, name_kpe) from one [P, ps, 576] tensor or a (ckv, kpe) pair."""
    import torch  # noqa: PLC0415

    if isinstance(kv_cache, torch.Tensor):
        if kv_cache.dim() != 3 or kv_cache.shape[-1] != HEAD_DIM_CKV + HEAD_DIM_KPE:
            raise ValueError(f"kv_cache: expected shape [num_pages, page_size, "
                             f"{HEAD_DIM_CKV + HEAD_DIM_KPE}] (ckv {HEAD_DIM_CKV} + kpe {HEAD_DIM_KPE}), "
                             f"got {list(kv_cache.shape)}")
        return kv_cache[..., :HEAD_DIM_CKV], kv_cache[..., HEAD_DIM_CKV:], "kv_cache", "kv_cache"
    if isinstance(kv_cache, (tuple, list)) and len(kv_cache) == 2:
        return kv_cache[0], kv_cache[1], "ckv_cache", "kpe_cache"
    raise ValueError("kv_cache: expected a [num_pages, page_size, 576] tensor or a "
                     f"(ckv_cache, kpe_cache) pair, got {type(kv_cache).__name__}")


def run(q_nope, q_pe, kv_cache, seq_lens, page_table, workspace, sm_scale: float,
        num_kv_splits: int = 1, out=None, lse=None, *, return_lse: bool = False,
        return_lse_base_on_e: bool = False, scheduler: str = "individual"):
    """MLA decode on Blackwell with CUTLASS's kernel (sgl-kernel's ``cutlass_mla_decode`` contract).

    q_nope [B, H, 512], q_pe [B, H, 64]: any strides with a contiguous last dim (no concat).
    kv_cache: one [num_pages, page_size, 576] tensor (ckv = [..., :512], kpe = [..., 512:]) or a
        pair (ckv_cache [num_pages, page_size, 512], kpe_cache [num_pages, page_size, 64]).
        Never copied. page_size: a power of two (see the module doc for the load paths).
    seq_lens int32 [B] (KV tokens per request, 0 allowed), page_table int32 [B, max_blocks]
        (row stride free, last dim contiguous).
    workspace: a CUDA byte buffer of at least ``get_workspace_size(page_table.shape[1] *
        page_size, B, sm_count, num_kv_splits, page_size)`` bytes (0 when there is one split).
    num_kv_splits: 1..256, or <= 0 for CUTLASS's heuristic.
    out: optional [B, H, 512] (q's dtype; bf16 for fp8 inputs); lse: optional [B, H] float32.
    Returns out, or (out, lse) when ``lse`` is given or ``return_lse``. The LSE is base 2
    (log2 of the sum of exp of the scaled logits, FlashInfer's convention) unless
    ``return_lse_base_on_e``. Requests with seq_len 0 give out = 0 and lse = -inf.
    """
    import torch  # noqa: PLC0415

    from .._validate import check_same_device, check_tensor  # noqa: PLC0415

    # ---- shapes and dtypes (device checks last, so every error is reachable on a CPU box) --
    in_dtypes = (torch.bfloat16, torch.float16, torch.float8_e4m3fn)
    check_tensor("q_nope", q_nope, dtypes=in_dtypes, ndim=3, last_dim_contiguous=True)
    if q_nope.shape[-1] != HEAD_DIM_CKV:
        raise ValueError(f"q_nope: head dim must be {HEAD_DIM_CKV} (head_dim_ckv), got {q_nope.shape[-1]}")
    B, H = int(q_nope.shape[0]), int(q_nope.shape[1])
    check_tensor("q_pe", q_pe, dtypes=(q_nope.dtype,), ndim=3, last_dim_contiguous=True)
    if q_pe.shape[-1] != HEAD_DIM_KPE:
        raise ValueError(f"q_pe: head dim must be {HEAD_DIM_KPE} (head_dim_kpe), got {q_pe.shape[-1]}")
    if tuple(q_pe.shape[:2]) != (B, H):
        raise ValueError(f"q_pe: expected shape [{B}, {H}, {HEAD_DIM_KPE}] like q_nope, got {list(q_pe.shape)}")
    if H < 1:
        raise ValueError("q_nope: needs at least one head")
    ckv, kpe, ckv_name, kpe_name = _split_kv_cache(kv_cache)
    check_tensor(ckv_name, ckv, dtypes=(q_nope.dtype,), ndim=3, last_dim_contiguous=True)
    check_tensor(kpe_name, kpe, dtypes=(q_nope.dtype,), ndim=3, last_dim_contiguous=True)
    if ckv.shape[-1] != HEAD_DIM_CKV:
        raise ValueError(f"{ckv_name}: head dim must be {HEAD_DIM_CKV}, got {ckv.shape[-1]}")
    if kpe.shape[-1] != HEAD_DIM_KPE:
        raise ValueError(f"{kpe_name}: head dim must be {HEAD_DIM_KPE}, got {kpe.shape[-1]}")
    if tuple(kpe.shape[:2]) != tuple(ckv.shape[:2]):
        raise ValueError(f"{kpe_name}: expected {list(ckv.shape[:2])} pages x page_size like "
                         f"{ckv_name}, got {list(kpe.shape[:2])}")
    num_pages, page_size = int(ckv.shape[0]), int(ckv.shape[1])
    if page_size < 1 or page_size & (page_size - 1):
        raise ValueError(f"{ckv_name}: page size (dim 1) must be a power of two, got {page_size}")
    check_tensor("seq_lens", seq_lens, dtypes=(torch.int32,), shape=(B,), last_dim_contiguous=True)
    check_tensor("page_table", page_table, dtypes=(torch.int32,), ndim=2, last_dim_contiguous=True)
    if page_table.shape[0] != B:
        raise ValueError(f"page_table: expected {B} rows (one per request), got {page_table.shape[0]}")
    if not isinstance(workspace, torch.Tensor):
        raise ValueError(f"workspace: expected a torch.Tensor byte buffer, got {type(workspace).__name__}")
    if not workspace.is_contiguous():
        raise ValueError("workspace: must be contiguous")
    out_dtype = torch.bfloat16 if q_nope.dtype == torch.float8_e4m3fn else q_nope.dtype
    if out is not None:
        check_tensor("out", out, dtypes=(out_dtype,), shape=(B, H, HEAD_DIM_CKV), last_dim_contiguous=True)
    if lse is not None:
        check_tensor("lse", lse, dtypes=(torch.float32,), shape=(B, H), last_dim_contiguous=True)
    num_kv_splits = int(num_kv_splits)
    if num_kv_splits > MAX_KV_SPLITS:
        raise ValueError(f"num_kv_splits: expected 1..{MAX_KV_SPLITS} or <= 0 for auto, got {num_kv_splits}")
    if scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler: expected one of {SCHEDULERS}, got {scheduler!r}")
    for name, t in ((ckv_name, ckv), (kpe_name, kpe)):
        if not _aligned16(t):
            raise ValueError(f"{name}: needs a 16-byte aligned base and page/token strides that are "
                             f"multiples of 16 bytes, got strides {t.stride()}")
    for name, t in (("q_nope", q_nope), ("q_pe", q_pe), ("seq_lens", seq_lens),
                    ("page_table", page_table), ("workspace", workspace), ("out", out), ("lse", lse)):
        if t is not None and t.device.type != "cuda":
            raise ValueError(f"{name}: expected a CUDA tensor, got one on {t.device} (move it with .cuda())")
    if ckv.device.type != "cuda" or kpe.device.type != "cuda":
        raise ValueError(f"{ckv_name}: expected a CUDA tensor, got one on {ckv.device}")
    device = check_same_device(q_nope=q_nope, q_pe=q_pe, ckv=ckv, kpe=kpe, seq_lens=seq_lens,
                               page_table=page_table, workspace=workspace, out=out, lse=lse)

    # ---- outputs ---------------------------------------------------------------------------
    want_lse = lse is not None or return_lse
    if out is None:
        out = torch.empty((B, H, HEAD_DIM_CKV), dtype=out_dtype, device=device)
    if want_lse and lse is None:
        lse = torch.empty((B, H), dtype=torch.float32, device=device)
    if B == 0:
        return (out, lse) if want_lse else out

    # ---- page size -> load path, page table / cache views ---------------------------------
    cols = int(page_table.shape[1])
    max_seq_len = cols * page_size
    if page_size < TILE_KV:
        path = "cpasync"
        per_tile = TILE_KV // page_size
        if cols % per_tile:
            # The cp.async loader reads 128/page_size entries per 128-token tile.
            padded = torch.zeros((B, _ceil_div(cols, per_tile) * per_tile), dtype=torch.int32, device=device)
            padded[:, :cols] = page_table
            page_table = padded
    else:
        path = "tma"
        if page_size > TILE_KV:
            r = page_size // TILE_KV
            for name, t in ((ckv_name, ckv), (kpe_name, kpe)):
                if t.stride(0) != page_size * t.stride(1):
                    raise ValueError(f"{name}: page_size {page_size} > {TILE_KV} is run on {TILE_KV}-token "
                                     f"sub-pages and needs page stride == page_size * token stride, "
                                     f"got strides {t.stride()}")
            if num_pages * r > 2**31 - 1:
                raise ValueError(f"{ckv_name}: too many {TILE_KV}-token sub-pages ({num_pages * r})")
            ckv = ckv.as_strided((num_pages * r, TILE_KV, HEAD_DIM_CKV),
                                 (TILE_KV * ckv.stride(1), ckv.stride(1), 1))
            kpe = kpe.as_strided((num_pages * r, TILE_KV, HEAD_DIM_KPE),
                                 (TILE_KV * kpe.stride(1), kpe.stride(1), 1))
            sub = torch.arange(r, dtype=torch.int32, device=device)
            page_table = (page_table[:, :, None] * r + sub).reshape(B, cols * r)
            num_pages, page_size = num_pages * r, TILE_KV

    dtype_key = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float8_e4m3fn: "fp8_e4m3"}[q_nope.dtype]
    dev_index = device.index if device.index is not None else torch.cuda.current_device()
    sm_count = _sm_count_of(dev_index)
    if max_seq_len > 0:
        split = get_num_kv_splits(max_seq_len, B, sm_count, num_kv_splits)
        needed = get_workspace_size(max_seq_len, B, sm_count, num_kv_splits)
    else:
        split, needed = 1, 0
    ws_bytes = workspace.numel() * workspace.element_size()
    if ws_bytes < needed:
        raise ValueError(f"workspace: {needed} bytes needed (batch={B}, max_seq_len={max_seq_len}, "
                         f"num_kv_splits={split}, sm_count={sm_count}), got {ws_bytes}; size it with "
                         f"mla_wrapper.backends.cutlass.get_workspace_size(...)")

    mod = _module_for(dtype_key, path, scheduler, dev_index)
    fn = mod.mlaw_sm100_mla_run
    lse_scale = 1.0 if return_lse_base_on_e else LOG2E
    in_es = q_nope.element_size()
    guard = torch.cuda.device(dev_index) if dev_index != torch.cuda.current_device() else _NullCtx()
    with guard:
        stream = torch.cuda.current_stream(device).cuda_stream
        for h0 in range(0, H, NUM_HEADS_TILE):
            hc = min(NUM_HEADS_TILE, H - h0)
            qn, qp = q_nope[:, h0:h0 + hc], q_pe[:, h0:h0 + hc]
            if hc == NUM_HEADS_TILE and _aligned16(qn) and _aligned16(qp):
                qn_ptr, qn_sb, qn_sh = qn.data_ptr(), qn.stride(0), qn.stride(1)
                qp_ptr, qp_sb, qp_sh = qp.data_ptr(), qp.stride(0), qp.stride(1)
            else:
                # Pad to the kernel's 128-head tile (Q is small; the cache is never copied).
                width = HEAD_DIM_CKV + HEAD_DIM_KPE
                qbuf = torch.empty((B, NUM_HEADS_TILE, width), dtype=q_nope.dtype, device=device)
                qbuf[:, :hc, :HEAD_DIM_CKV].copy_(qn)
                qbuf[:, :hc, HEAD_DIM_CKV:].copy_(qp)
                if hc < NUM_HEADS_TILE:
                    qbuf[:, hc:].zero_()
                qn_ptr, qn_sb, qn_sh = qbuf.data_ptr(), NUM_HEADS_TILE * width, width
                qp_ptr, qp_sb, qp_sh = qbuf.data_ptr() + HEAD_DIM_CKV * in_es, NUM_HEADS_TILE * width, width
            oc = out[:, h0:h0 + hc]
            direct = (hc == NUM_HEADS_TILE and _aligned16(oc)
                      and (split == 1 or (H == NUM_HEADS_TILE and out.is_contiguous())))
            if direct:
                o_acc, o_sb, o_sh = oc, oc.stride(0), oc.stride(1)
            else:
                o_acc = torch.empty((B, NUM_HEADS_TILE, HEAD_DIM_CKV), dtype=out_dtype, device=device)
                o_sb, o_sh = o_acc.stride(0), o_acc.stride(1)
            # The kernel's natural-log LSE, [B, 128] contiguous: needed for the caller's lse and
            # whenever split > 1 (the kernel stores partial LSEs only when it has this buffer).
            lse_acc, lse_out_ptr, lse_sb = None, None, 0
            if want_lse and H == NUM_HEADS_TILE and lse.is_contiguous():
                lse_acc = lse   # converted in place (base 2 / e) by the epilogue kernel
            elif want_lse or split > 1:
                lse_acc = torch.empty((B, NUM_HEADS_TILE), dtype=torch.float32, device=device)
            if want_lse:
                lc = lse[:, h0:h0 + hc]
                lse_out_ptr, lse_sb = lc.data_ptr(), lc.stride(0)
            status = fn(
                qn_ptr, qn_sb, qn_sh, qp_ptr, qp_sb, qp_sh,
                ckv.data_ptr(), ckv.stride(0), ckv.stride(1),
                kpe.data_ptr(), kpe.stride(0), kpe.stride(1),
                num_pages, page_size,
                seq_lens.data_ptr(), page_table.data_ptr(), int(page_table.shape[1]),
                page_table.stride(0), B,
                o_acc.data_ptr(), o_sb, o_sh, None if lse_acc is None else lse_acc.data_ptr(),
                oc.data_ptr(), oc.stride(0), oc.stride(1), hc,
                lse_out_ptr, lse_sb, lse_scale,
                float(sm_scale), num_kv_splits, sm_count,
                workspace.data_ptr(), ws_bytes, stream)
            if status != 0:
                raise mod.error("mlaw_sm100_mla_run", status)
    return (out, lse) if want_lse else out


class _NullCtx:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ----------------------------------------------------------------------------------------
# The wrapper's backend object
# ----------------------------------------------------------------------------------------

class CutlassKernel:
    """The SM100 backend of BatchMLAPagedAttentionWrapper: CUTLASS's MLA kernel, which takes a
    dense page table [B, max_pages] and device seq_lens. plan() builds both on the device from
    kv_indptr / kv_indices (a gather of page ids, never of the cache) and picks CUTLASS's split
    heuristic; run() launches. Compile-verified for sm_100a; not run on a Blackwell GPU by this
    project yet."""

    def __init__(self, name: str, wrapper):
        if wrapper._use_cuda_graph:
            raise ValueError("backend='cutlass': CUDA-graph mode is not supported by the SM100 "
                             "backend yet; use backend='sm80' (or 'auto') with use_cuda_graph")
        self.name = name
        self.wrapper = wrapper

    def plan(self, qo_h, kv_h, len_h, kv_indices, num_heads, page_size, causal, sm_scale, dtype,
             kv_dtype=None):
        # (kv_dtype is q's here: backends.why_not refuses the wrapper's fp8 cache for cutlass)
        import numpy as np  # noqa: PLC0415
        import torch  # noqa: PLC0415

        dev = self.wrapper.device
        batch = len_h.shape[0]
        pages = (len_h.astype(np.int64) + page_size - 1) // page_size
        width = max(int(pages.max()) if batch else 1, 1)
        cols = np.arange(width, dtype=np.int64)
        idx = kv_h[:-1, None].astype(np.int64) + np.minimum(cols[None, :], np.maximum(pages - 1, 0)[:, None])
        idx = np.minimum(idx, max(kv_indices.numel() - 1, 0))
        self.page_table = kv_indices[torch.from_numpy(idx).to(dev, non_blocking=True)]
        self.seq_lens = torch.from_numpy(len_h.copy()).to(dev, non_blocking=True)
        self.sm_scale = sm_scale
        self.page_size = page_size
        need = get_workspace_size(width * page_size, max(batch, 1), self.wrapper._sm_count, -1,
                                  page_size)
        if need > self.wrapper._float_ws_bytes:
            raise ValueError(f"float_workspace_buffer: the cutlass backend needs {need} bytes for "
                             f"this batch, got {self.wrapper._float_ws_bytes}")

    def run(self, q_nope, q_pe, ckv, kpe, out, lse, lse_base_e, stream, strides):
        import torch  # noqa: PLC0415

        ws = self.wrapper._float_ws.view(torch.uint8)
        run(q_nope, q_pe, (ckv, kpe), self.seq_lens, self.page_table, ws, self.sm_scale, -1,
            out=out, lse=lse, return_lse_base_on_e=lse_base_e)
