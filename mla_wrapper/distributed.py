"""Context-parallel MLA decode over a torch.distributed (NCCL) process group.

Long requests (128k to 1M tokens) outgrow one GPU's KV cache and bandwidth. Decode context
parallelism (vLLM's DCP) shards every request's KV cache over the W ranks of a group: global
token position ``t`` lives on rank ``(t // interleave) % W``, blocks of ``interleave`` tokens
dealt round robin (``interleave=1``: token by token; ``interleave=page_size``: page by page).
Each rank attends over its own shard with the paged wrapper, returning the partial output and
its LSE, the ranks exchange the partials with one NCCL collective, and the W partials of each
(token, head) are merged with the library's ``merge_state`` kernel.

Two parts:

* Pure sharding math (CPU, no GPU, no process group): :func:`token_owner`,
  :func:`global_positions`, :func:`local_kv_lens`, :func:`shard_kv_layout` /
  :class:`KVShardLayout` (each rank's lengths and page counts) and :func:`shard_paged_cache`
  (copy a global paged cache into one rank's shard). A serving engine uses them to place each
  new token (``token_owner``) and to size and fill each rank's page table.
* :class:`ContextParallelMLAWrapper`: ``plan()`` / ``run()`` like
  :class:`~mla_wrapper.BatchMLAPagedAttentionWrapper`, over the rank's shard, plus the
  exchange and merge. :func:`merge_partials` merges W partial states on one GPU (also what the
  single-GPU simulation of W ranks uses).

LSE: base 2 everywhere (the wrapper's and ``merge_state``'s convention).
Only torch.distributed is used; the caller creates the process group.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

import torch

from ._validate import check_tensor

__all__ = ["token_owner", "global_positions", "local_kv_lens", "KVShardLayout", "shard_kv_layout",
           "shard_paged_cache", "merge_partials", "all_gather_stacked", "ContextParallelMLAWrapper",
           "EXCHANGES"]

EXCHANGES = ("all_gather", "all_to_all")
_ALIGN = 256     # byte alignment of each packed partial (vectorized kernel loads and stores)
OUTPUT_HEADS = ("all", "shard")

LengthsLike = Union[torch.Tensor, Sequence[int]]


# ------------------------------------------------------------------------ sharding math (CPU)
def _check_int(name: str, value, minimum: int) -> int:
    try:
        v = operator.index(value)
    except TypeError:
        raise ValueError(f"{name}: expected an int, got {type(value).__name__}") from None
    if v < minimum:
        raise ValueError(f"{name}: expected an int >= {minimum}, got {v}")
    return v


def _check_cp(world_size, interleave) -> Tuple[int, int]:
    return _check_int("world_size", world_size, 1), _check_int("interleave", interleave, 1)


def _as_lengths(name: str, x: LengthsLike) -> torch.Tensor:
    """A 1-d int64 CPU tensor of non-negative lengths / positions."""
    t = torch.as_tensor(x)
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        raise ValueError(f"{name}: expected integers, got dtype {t.dtype}")
    t = t.to(device="cpu", dtype=torch.int64).reshape(-1) if t.dim() <= 1 else None
    if t is None:
        raise ValueError(f"{name}: expected a 1-d sequence, got shape {list(torch.as_tensor(x).shape)}")
    if t.numel() and int(t.min()) < 0:
        raise ValueError(f"{name}: expected non-negative values, got min {int(t.min())}")
    return t


def token_owner(positions: LengthsLike, world_size: int, interleave: int
                ) -> Tuple[torch.Tensor, torch.Tensor]:
    """Where global token positions live.

    Args:
        positions: ``[N]`` global token positions (>= 0) within their requests.
        world_size: ranks of the context-parallel group (W >= 1).
        interleave: tokens per round-robin block (>= 1; vLLM's ``cp_kv_cache_interleave_size``).

    Returns:
        ``(rank [N], local_position [N])`` int64: the owning rank and the token's position in
        that rank's shard of the request (its slot in the rank's page table:
        page ``local_position // page_size``, offset ``local_position % page_size``).
    """
    world_size, interleave = _check_cp(world_size, interleave)
    pos = _as_lengths("positions", positions)
    block = pos // interleave
    return block % world_size, (block // world_size) * interleave + pos % interleave


def global_positions(local_len: int, rank: int, world_size: int, interleave: int) -> torch.Tensor:
    """``[local_len]`` int64: the global positions of a rank's first ``local_len`` shard tokens
    (the inverse of :func:`token_owner`; increasing)."""
    world_size, interleave = _check_cp(world_size, interleave)
    local_len = _check_int("local_len", local_len, 0)
    rank = _check_int("rank", rank, 0)
    if rank >= world_size:
        raise ValueError(f"rank: expected 0..{world_size - 1} for world_size {world_size}, got {rank}")
    j = torch.arange(local_len, dtype=torch.int64)
    return (j // interleave) * (interleave * world_size) + rank * interleave + j % interleave


def local_kv_lens(kv_lens: LengthsLike, world_size: int, interleave: int) -> torch.Tensor:
    """``[W, B]`` int32: the tokens of each request held by each rank (rows sum to ``kv_lens``).

    Args:
        kv_lens: ``[B]`` global KV lengths (>= 0).
    """
    world_size, interleave = _check_cp(world_size, interleave)
    lens = _as_lengths("kv_lens", kv_lens)
    cycle = interleave * world_size
    full = lens // cycle
    rem = lens - full * cycle
    ranks = torch.arange(world_size, dtype=torch.int64)[:, None]
    local = full[None, :] * interleave + (rem[None, :] - ranks * interleave).clamp(0, interleave)
    return local.to(torch.int32)


@dataclass(frozen=True)
class KVShardLayout:
    """How a batch's KV cache is split over W ranks (made by :func:`shard_kv_layout`).

    Attributes:
        world_size, interleave, page_size: the sharding parameters.
        kv_len: ``[B]`` int32 global lengths.
        local_kv_len: ``[W, B]`` int32: tokens of request b on rank r (``kv_len_arr`` of the
            rank's plan()).
        local_kv_indptr: ``[W, B+1]`` int32: the rank's ``kv_indptr`` when its requests'
            pages are packed in request order (``ceil(local_kv_len / page_size)`` pages each).
    """

    world_size: int
    interleave: int
    page_size: int
    kv_len: torch.Tensor
    local_kv_len: torch.Tensor
    local_kv_indptr: torch.Tensor

    @property
    def batch_size(self) -> int:
        return int(self.kv_len.numel())

    def num_pages(self, rank: int) -> int:
        """Pages rank ``rank`` needs for this batch."""
        return int(self.local_kv_indptr[rank, -1])

    def check_local(self, rank: int, kv_len_arr: LengthsLike) -> None:
        """Raise ValueError unless ``kv_len_arr`` is rank ``rank``'s shard of the batch."""
        rank = _check_int("rank", rank, 0)
        if rank >= self.world_size:
            raise ValueError(f"rank: expected 0..{self.world_size - 1} for a layout of "
                             f"world_size {self.world_size}, got {rank}")
        got = _as_lengths("kv_len_arr", kv_len_arr)
        want = self.local_kv_len[rank].to(torch.int64)
        if got.numel() != want.numel():
            raise ValueError(f"kv_len_arr: expected {want.numel()} requests (the layout's batch), "
                             f"got {got.numel()}")
        bad = torch.nonzero(got != want).reshape(-1)
        if bad.numel():
            b = int(bad[0])
            raise ValueError(
                f"kv_len_arr: rank {rank}'s shard lengths do not add up to the global lengths: "
                f"request {b} has {int(got[b])} local tokens, expected {int(want[b])} (global "
                f"length {int(self.kv_len[b])} over world_size {self.world_size} with interleave "
                f"{self.interleave}: {self.local_kv_len[:, b].tolist()} per rank)")


def shard_kv_layout(kv_lens: LengthsLike, world_size: int, interleave: int,
                    page_size: int) -> KVShardLayout:
    """Per-rank lengths and page counts of a batch with global lengths ``kv_lens [B]``."""
    world_size, interleave = _check_cp(world_size, interleave)
    page_size = _check_int("page_size", page_size, 1)
    lens = _as_lengths("kv_lens", kv_lens)
    local = local_kv_lens(lens, world_size, interleave)
    pages = (local.to(torch.int64) + page_size - 1) // page_size
    indptr = torch.zeros(world_size, lens.numel() + 1, dtype=torch.int64)
    indptr[:, 1:] = torch.cumsum(pages, dim=1)
    return KVShardLayout(world_size, interleave, page_size, lens.to(torch.int32), local,
                         indptr.to(torch.int32))


def _shard_token_map(layout: KVShardLayout, rank: int, kv_indptr: LengthsLike,
                     kv_indices: torch.Tensor):
    """For every token of rank ``rank``'s shard: (global page id, offset, local page, offset)."""
    ps, W, I = layout.page_size, layout.world_size, layout.interleave
    local = layout.local_kv_len[rank].to(torch.int64)
    n = int(local.sum())
    req = torch.repeat_interleave(torch.arange(layout.batch_size), local)
    starts = torch.cumsum(local, 0) - local
    j = torch.arange(n, dtype=torch.int64) - starts[req]            # position in the shard
    g = (j // I) * (I * W) + rank * I + j % I                        # global position
    kv_indptr = _as_lengths("kv_indptr", kv_indptr)
    gpage = kv_indices.to("cpu", torch.int64)[kv_indptr[req] + g // ps]
    lpage = layout.local_kv_indptr[rank].to(torch.int64)[req] + j // ps
    return gpage, g % ps, lpage, j % ps


def shard_paged_cache(layout: KVShardLayout, rank: int, caches: Sequence[torch.Tensor],
                      kv_indptr: LengthsLike, kv_indices: torch.Tensor, device=None):
    """Copy rank ``rank``'s shard of a global paged cache into a packed local paged cache.

    For tests, benchmarks and cache migration (a serving engine writes each new token straight
    to its owner: :func:`token_owner`).

    Args:
        layout: from :func:`shard_kv_layout` over the global lengths.
        caches: global caches ``[P, page_size, D]`` (e.g. ``(ckv [P, ps, 512], kpe [P, ps, 64])``
            or one ``[P, ps, 576]``); views are fine.
        kv_indptr ``[B+1]``, kv_indices ``[>= kv_indptr[-1]]``: the global page table.
        device: where the local caches go (default: the caches' device).

    Returns:
        ``(local_caches, kv_indptr [B+1] int32 CPU, kv_indices [pages] int32 on device,
        kv_len_arr [B] int32 CPU)``: ``local_caches`` are new contiguous
        ``[max(pages, 1), page_size, D]`` tensors (unused slots zero); the rest is the rank's
        plan() input.
    """
    rank = _check_int("rank", rank, 0)
    if rank >= layout.world_size:
        raise ValueError(f"rank: expected 0..{layout.world_size - 1}, got {rank}")
    indptr = _as_lengths("kv_indptr", kv_indptr)
    if indptr.numel() != layout.batch_size + 1:
        raise ValueError(f"kv_indptr: expected {layout.batch_size + 1} entries for the layout's "
                         f"batch of {layout.batch_size}, got {indptr.numel()}")
    check_tensor("kv_indices", kv_indices, ndim=1)
    for k, c in enumerate(caches):
        check_tensor(f"caches[{k}]", c, ndim=3, shape=(None, layout.page_size, None))
    gpage, goff, lpage, loff = _shard_token_map(layout, rank, indptr, kv_indices)
    pages = layout.num_pages(rank)
    out = []
    for c in caches:
        dev = c.device if device is None else torch.device(device)
        local = torch.zeros(max(pages, 1), layout.page_size, c.shape[2], dtype=c.dtype, device=dev)
        gp, go = gpage.to(c.device), goff.to(c.device)
        local[lpage.to(dev), loff.to(dev)] = c[gp, go].to(dev)
        out.append(local)
    idx_dev = device if device is not None else (caches[0].device if caches else "cpu")
    return (out, layout.local_kv_indptr[rank].clone(),
            torch.arange(pages, dtype=torch.int32, device=idx_dev),
            layout.local_kv_len[rank].clone())


# ----------------------------------------------------------------------------- merge (GPU)
def merge_partials(v: torch.Tensor, s: torch.Tensor, v_out: Optional[torch.Tensor] = None,
                   s_out: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Merge W partial attention states with the ``merge_state`` kernel (base-2 LSE).

    Args:
        v: ``[W, N, H, D]`` partial outputs (bf16 / fp16 / fp32, CUDA, contiguous last dim).
        s: ``[W, N, H]`` their log2-sum-exp (float32); -inf marks an empty partial.
        v_out, s_out: optional outputs ``[N, H, D]`` (v's dtype) and ``[N, H]`` float32; they
            may alias ``v[0]`` / ``s[0]`` (the merge runs in place).

    Returns:
        ``(v_out, s_out)``. W - 1 chained launches: partial 0 with 1 into the outputs, then the
        outputs with 2, 3, ... in place (intermediates are rounded to v's dtype). W = 1
        copies (rows with an infinite LSE become empty). All partials empty gives v = 0 and
        s = -inf.
    """
    from .ops import merge_state  # noqa: PLC0415  (lazy: the kernel library loads on use)

    check_tensor("v", v, ndim=4, last_dim_contiguous=True)
    W, N, H, D = v.shape
    check_tensor("s", s, dtypes=(torch.float32,), shape=(W, N, H))
    if W < 1:
        raise ValueError("v: expected at least one partial (dim 0), got 0")
    if v_out is None:
        v_out = torch.empty((N, H, D), dtype=v.dtype, device=v.device)
    if s_out is None:
        s_out = torch.empty((N, H), dtype=torch.float32, device=v.device)
    if W == 1:
        check_tensor("v_out", v_out, dtypes=(v.dtype,), shape=(N, H, D), device=v.device)
        check_tensor("s_out", s_out, dtypes=(torch.float32,), shape=(N, H), device=v.device)
        empty = torch.isinf(s[0])     # as merge_state: +-inf is an empty state (v = 0, -inf)
        v_out.copy_(v[0]).masked_fill_(empty[..., None], 0)
        s_out.copy_(s[0]).masked_fill_(empty, -float("inf"))
        return v_out, s_out
    merge_state(v[0], s[0], v[1], s[1], v_out, s_out)
    for k in range(2, W):
        merge_state(v_out, s_out, v[k], s[k], v_out, s_out)
    return v_out, s_out


def all_gather_stacked(out: torch.Tensor, inp: torch.Tensor, group=None) -> None:
    """All-gather ``inp [n, ...]`` of every rank into contiguous ``out [W, n, ...]`` (``inp`` may
    be ``out[rank]``: in place). Passed to torch.distributed in the concatenated
    ``[W * n, ...]`` form, which every backend (NCCL, gloo) takes."""
    import torch.distributed as dist  # noqa: PLC0415

    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    gather(out.view((-1,) + tuple(out.shape[2:])), inp, group=group)


# ----------------------------------------------------------------- the context-parallel wrapper
class ContextParallelMLAWrapper:
    """MLA decode over a KV cache sharded across the ranks of a process group (vLLM DCP).

    Every rank holds the queries of all ``H`` heads (``q_nope [T, H, 512]``, ``q_pe [T, H, 64]``,
    the same on every rank) and its own shard of each request's cache (tokens placed by
    :func:`token_owner`). ``plan()`` takes the rank's page table and shard lengths (see
    :func:`shard_kv_layout`); ``run()`` attends over the shard (the paged wrapper, with LSE),
    exchanges the partials and merges them with the ``merge_state`` kernel.

    Args:
        float_workspace_buffer: CUDA scratch for the local wrapper (128 MB is plenty); its
            device is this rank's device: every run() tensor must be on it.
        group: the torch.distributed process group (default: the default group), NCCL for
            CUDA tensors. A 1-rank group works (the collectives degenerate to copies).
        interleave: tokens per round-robin block of the sharding (checked against a layout).
        exchange: ``"all_gather"``: every rank gathers all W partials ``(o, lse)`` and merges
            them; ``"all_to_all"``: rank r receives head slice r of every partial (1/W of the
            all-gather's traffic), merges it, and (with ``output_heads="all"``) all-gathers the
            merged slices. ``all_to_all`` needs ``num_heads % W == 0``.
        output_heads: ``"all"``: run() returns all H heads on every rank; ``"shard"``: rank r
            gets heads ``r*H/W .. (r+1)*H/W - 1`` (what a tensor-parallel o_proj wants;
            needs ``num_heads % W == 0``).
        backend: the local wrapper's backend.
        wrapper: instead of a workspace, an existing
            :class:`~mla_wrapper.BatchMLAPagedAttentionWrapper` to run the shard with (this
            object's plan() re-plans it).
    """

    def __init__(self, float_workspace_buffer: Optional[torch.Tensor] = None, group=None,
                 interleave: int = 1, exchange: str = "all_gather", output_heads: str = "all",
                 backend: str = "auto", wrapper=None):
        import torch.distributed as dist  # noqa: PLC0415

        if exchange not in EXCHANGES:
            raise ValueError(f"exchange: expected one of {EXCHANGES}, got {exchange!r}")
        if output_heads not in OUTPUT_HEADS:
            raise ValueError(f"output_heads: expected one of {OUTPUT_HEADS}, got {output_heads!r}")
        self.interleave = _check_int("interleave", interleave, 1)
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError("ContextParallelMLAWrapper: torch.distributed is not initialized "
                               "(call torch.distributed.init_process_group first)")
        if (float_workspace_buffer is None) == (wrapper is None):
            raise ValueError("float_workspace_buffer / wrapper: pass exactly one of them")
        if wrapper is None:
            check_tensor("float_workspace_buffer", float_workspace_buffer, cuda=True)
            from .wrapper import BatchMLAPagedAttentionWrapper  # noqa: PLC0415

            wrapper = BatchMLAPagedAttentionWrapper(float_workspace_buffer, backend=backend)
        self.wrapper = wrapper
        self.device = wrapper.device
        self._dist = dist
        self.group = group
        self.world_size = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.exchange = exchange
        self.output_heads = output_heads
        self._planned = None      # (T, H, dtype, head_dim_ckv)
        self._bufs = {}

    # ------------------------------------------------------------------ plan
    def plan(self, qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads: int,
             head_dim_ckv: int, head_dim_kpe: int, page_size: int, causal: bool,
             sm_scale: float, q_data_type: torch.dtype, kv_data_type: torch.dtype,
             layout: Optional[KVShardLayout] = None) -> None:
        """Plan this rank's shard (host work, no device sync for host index tensors).

        Arguments as :meth:`BatchMLAPagedAttentionWrapper.plan`, describing THIS rank's shard:
        ``kv_indptr [B+1]`` / ``kv_indices`` its page table, ``kv_len_arr [B]`` its local
        lengths (``layout.local_kv_len[rank]``; 0 where the rank holds no token of a request).
        ``layout``: the batch's :class:`KVShardLayout`; when given, its world size, interleave
        and page size must match and ``kv_len_arr`` must be this rank's shard of it.
        ``causal`` with more than one query token per request is not supported (a shard's
        causal mask depends on global positions): decode (qo_len 1) or ``causal=False``.
        """
        if layout is not None:
            if layout.world_size != self.world_size:
                raise ValueError(f"layout: built for world_size {layout.world_size}, but the "
                                 f"process group has {self.world_size} ranks")
            if layout.interleave != self.interleave:
                raise ValueError(f"layout: interleave {layout.interleave} differs from the "
                                 f"wrapper's {self.interleave}")
            if layout.page_size != page_size:
                raise ValueError(f"layout: page_size {layout.page_size} differs from plan()'s "
                                 f"{page_size}")
            layout.check_local(self.rank, kv_len_arr)
        qo = _as_lengths("qo_indptr", qo_indptr)
        if causal and qo.numel() > 1 and int((qo[1:] - qo[:-1]).max()) > 1:
            raise ValueError("causal: context-parallel decode supports causal=True only with one "
                             "query token per request (a shard's causal mask needs global "
                             "positions); pass causal=False or qo_len 1")
        heads_split = self.exchange == "all_to_all" or self.output_heads == "shard"
        if heads_split and num_heads % self.world_size:
            raise ValueError(f"num_heads: {num_heads} is not divisible by the world size "
                             f"{self.world_size} (exchange={self.exchange!r}, "
                             f"output_heads={self.output_heads!r} split heads over ranks)")
        self.wrapper.plan(qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads, head_dim_ckv,
                          head_dim_kpe, page_size, False, sm_scale, q_data_type, kv_data_type)
        self._planned = (int(qo[-1] - qo[0]) if qo.numel() else 0, num_heads, q_data_type,
                         head_dim_ckv)

    # ------------------------------------------------------------------- run
    def _packed(self, name: str, heads: int):
        """A ``[W, bytes]`` uint8 buffer whose row k packs one partial state ``(o [T, heads,
        512], lse [T, heads] float32)``, so each exchange is ONE collective; returns it and its
        ``o [W, T, heads, 512]`` / ``lse [W, T, heads]`` views."""
        T, _, dtype, D = self._planned
        key = (T, heads, dtype, D)
        buf = self._bufs.get(name)
        if buf is None or buf[3] != key:
            ob = T * heads * D * torch.finfo(dtype).bits // 8
            sb = T * heads * 4
            lse_at = -(-ob // _ALIGN) * _ALIGN      # rows and both parts start 256-byte aligned
            nbytes = -(-(lse_at + sb) // _ALIGN) * _ALIGN
            t = torch.empty((self.world_size, nbytes), dtype=torch.uint8, device=self.device)
            buf = self._bufs[name] = (
                t, t[:, :ob].view(dtype).view(-1, T, heads, D),
                t[:, lse_at:lse_at + sb].view(torch.float32).view(-1, T, heads), key)
        return buf[:3]

    def _exchange_partials(self) -> None:
        """The partials' collective alone (on the buffers the last run() used)."""
        r = self.rank
        if self.exchange == "all_gather":
            gathered = self._packed("gathered", self._planned[1])[0]
            all_gather_stacked(gathered, gathered[r], self.group)   # in place: row r is ours
        else:
            send = self._packed("send", self._planned[1] // self.world_size)[0]
            recv = self._packed("recv", self._planned[1] // self.world_size)[0]
            self._dist.all_to_all_single(recv, send, group=self.group)

    def _gather_merged(self) -> None:
        """all_to_all with output_heads="all": all-gather the merged head slices."""
        merged = self._packed("merged", self._planned[1] // self.world_size)[0]
        all_gather_stacked(merged, merged[self.rank], self.group)

    def run(self, q_nope: torch.Tensor, q_pe: torch.Tensor, ckv_cache: torch.Tensor,
            kpe_cache: torch.Tensor, return_lse: bool = False):
        """Attend over the shard, exchange, merge. Collective: every rank of the group calls it.

        Args:
            q_nope ``[T, H, 512]``, q_pe ``[T, H, 64]``: all heads (the same on every rank).
            ckv_cache ``[P, page_size, 512]``, kpe_cache ``[P, page_size, 64]``: this rank's
                shard (views of one ``[P, page_size, 576]`` buffer are fine).

        Returns:
            ``out [T, H_out, 512]`` in q's dtype (``H_out = H``, or ``H / W`` with
            ``output_heads="shard"``: this rank's heads), and with ``return_lse`` also
            ``lse [T, H_out]`` float32, base 2, over the whole (global) cache. New tensors
            (never views of internal buffers).
        """
        if self._planned is None:
            raise RuntimeError("run() called before plan()")
        T, H, dtype, D = self._planned
        for name, t in (("q_nope", q_nope), ("q_pe", q_pe), ("ckv_cache", ckv_cache),
                        ("kpe_cache", kpe_cache)):
            check_tensor(name, t)
            if t.device != self.device:
                raise ValueError(f"{name}: expected this rank's device {self.device} (the "
                                 f"workspace's; rank {self.rank}), got {t.device}")
        W, r = self.world_size, self.rank
        h = H // W
        if self.exchange == "all_gather":
            _, parts_o, parts_s = self._packed("gathered", H)
            self.wrapper.run(q_nope, q_pe, ckv_cache, kpe_cache, out=parts_o[r], lse=parts_s[r],
                             return_lse=True)
            self._exchange_partials()
            if self.output_heads == "shard":
                parts_o, parts_s = parts_o[:, :, r * h:(r + 1) * h], parts_s[:, :, r * h:(r + 1) * h]
            out, lse = merge_partials(parts_o, parts_s)
        else:
            o, s = self.wrapper.run(q_nope, q_pe, ckv_cache, kpe_cache, return_lse=True)
            _, send_o, send_s = self._packed("send", h)
            send_o.copy_(o.view(T, W, h, D).transpose(0, 1))   # row k: head slice k
            send_s.copy_(s.view(T, W, h).transpose(0, 1))
            self._exchange_partials()
            _, recv_o, recv_s = self._packed("recv", h)
            if self.output_heads == "shard":
                out, lse = merge_partials(recv_o, recv_s)
            else:
                _, full_o, full_s = self._packed("merged", h)
                merge_partials(recv_o, recv_s, full_o[r], full_s[r])
                self._gather_merged()
                out = torch.empty((T, H, D), dtype=dtype, device=self.device)
                lse = torch.empty((T, H), dtype=torch.float32, device=self.device)
                out.view(T, W, h, D).copy_(full_o.transpose(0, 1))
                lse.view(T, W, h).copy_(full_s.transpose(0, 1))
        return (out, lse) if return_lse else out
