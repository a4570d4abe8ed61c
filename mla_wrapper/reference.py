"""The one PyTorch reference for every feature (float32 math by default, float64 on request).

Readable, slow, obviously right: tests and benchmarks compare every kernel against it.
LSE conventions (see each function): MLA attention and ``merge_state`` use base 2
(FlashInfer); ``merge_state_v2`` and ``merge_attn_states`` use the natural log (vLLM).
"""
from __future__ import annotations

import math

import torch

LOG2E = 1.0 / math.log(2.0)


def mla_attention(q_nope: torch.Tensor, q_pe: torch.Tensor, ckv_cache: torch.Tensor,
                  kpe_cache: torch.Tensor, qo_indptr, kv_indptr, kv_indices: torch.Tensor,
                  kv_len_arr, page_size: int, causal: bool, sm_scale: float,
                  dtype: torch.dtype = torch.float32, *, ckv_scale: float | None = None,
                  kpe_scale: float | None = None):
    """Absorbed MLA over a paged cache.

    q_nope [T, H, 512], q_pe [T, H, 64], ckv_cache [P, page_size, 512], kpe_cache [P, page_size, 64]
    (16-bit, or float8_e4m3fn with ckv_scale / kpe_scale: real value = stored value x scale,
    FlashInfer's meaning; None = 1.0)
    qo_indptr [B+1], kv_indptr [B+1] (into kv_indices, in pages), kv_len_arr [B] (tokens).
    Returns (out [T, H, 512] in ``dtype``, lse [T, H] base 2 in ``dtype``).
    Rows that see no KV token get o = 0 and lse = -inf.
    """
    qo_indptr = [int(x) for x in torch.as_tensor(qo_indptr).tolist()]
    kv_indptr = [int(x) for x in torch.as_tensor(kv_indptr).tolist()]
    kv_len_arr = [int(x) for x in torch.as_tensor(kv_len_arr).tolist()]
    T, H, D = q_nope.shape
    if ckv_cache.element_size() == 1:  # an fp8 cache: converted whole, then gathered
        ckv_cache, kpe_cache = ckv_cache.to(dtype), kpe_cache.to(dtype)
    out = torch.zeros(T, H, D, dtype=dtype, device=q_nope.device)
    lse = torch.full((T, H), -math.inf, dtype=dtype, device=q_nope.device)
    for r in range(len(kv_len_arr)):
        q0, q1 = qo_indptr[r], qo_indptr[r + 1]
        L = kv_len_arr[r]
        if q1 == q0 or L == 0:
            continue
        num_pages = (L + page_size - 1) // page_size
        pages = kv_indices[kv_indptr[r]: kv_indptr[r] + num_pages].long()
        ckv = ckv_cache[pages].reshape(-1, ckv_cache.shape[-1])[:L].to(dtype)   # [L, 512]
        kpe = kpe_cache[pages].reshape(-1, kpe_cache.shape[-1])[:L].to(dtype)   # [L, 64]
        if ckv_scale is not None:
            ckv = ckv * ckv_scale
        if kpe_scale is not None:
            kpe = kpe * kpe_scale
        qn = q_nope[q0:q1].to(dtype)  # [q, H, 512]
        qp = q_pe[q0:q1].to(dtype)
        s = (torch.einsum("qhd,ld->qhl", qn, ckv) + torch.einsum("qhd,ld->qhl", qp, kpe)) * sm_scale
        if causal:
            qlen = q1 - q0
            limit = torch.arange(qlen, device=s.device) + (L - qlen)   # last visible position
            pos = torch.arange(L, device=s.device)
            mask = pos[None, :] > limit[:, None]                       # [q, L]
            s = s.masked_fill(mask[:, None, :], -math.inf)
        m = s.amax(dim=-1, keepdim=True)
        visible = torch.isfinite(m)
        m = torch.where(visible, m, torch.zeros_like(m))
        p = torch.exp(s - m)
        denom = p.sum(dim=-1, keepdim=True)
        o = torch.einsum("qhl,ld->qhd", p, ckv) / torch.where(visible, denom, torch.ones_like(denom))
        out[q0:q1] = torch.where(visible, o, torch.zeros_like(o))
        row_lse = (m + torch.log(denom)).squeeze(-1) * LOG2E
        lse[q0:q1] = torch.where(visible.squeeze(-1), row_lse, torch.full_like(row_lse, -math.inf))
    return out, lse


def sparse_mla_attention(q_nope: torch.Tensor, q_pe: torch.Tensor, ckv: torch.Tensor,
                         kpe: torch.Tensor, indices: torch.Tensor, sm_scale: float,
                         topk_length=None, attn_sink=None, dtype: torch.dtype = torch.float32,
                         chunk_elems: int = 1 << 26, *, ckv_scale: float | None = None,
                         kpe_scale: float | None = None):
    """Sparse (top-k) MLA: gather each token's slots, then dense attention (FlashMLA's
    flash_mla_sparse_fwd contract).

    q_nope [T, H, 512], q_pe [T, H, 64]; ckv [S, 512], kpe [S, 64] (the cache viewed flat:
    slot = page * page_size + offset; 16-bit, or float8_e4m3fn with ckv_scale / kpe_scale as in
    mla_attention); indices [T, topk] or [T, 1, topk] slot ids, an id < 0 or
    >= S skipped; topk_length [T]: ids at positions >= topk_length[t] skipped; attn_sink [H]:
    a logit per head that joins the softmax denominator only. A duplicated id counts once per
    occurrence. Returns (out [T, H, 512], max_logits [T, H], lse [T, H]) in ``dtype``:
    max_logits = max of sm_scale * q.k (-inf for a row with no valid slot), lse natural log
    without the sink (+inf for a row with no valid slot, whose out is 0).
    Tokens are processed in chunks of about ``chunk_elems`` gathered elements.
    """
    T, H, D = q_nope.shape
    if ckv.element_size() == 1:  # an fp8 cache: converted whole, then gathered
        ckv, kpe = ckv.to(dtype), kpe.to(dtype)
    idx = indices.reshape(T, -1).long()
    K = idx.shape[1]
    S = ckv.shape[0]
    dev = q_nope.device
    valid = (idx >= 0) & (idx < S)
    if topk_length is not None:
        lens = torch.as_tensor(topk_length, device=dev).long()
        valid &= torch.arange(K, device=dev)[None, :] < lens[:, None]
    safe = torch.where(valid, idx, torch.zeros_like(idx))
    out = torch.zeros(T, H, D, dtype=dtype, device=dev)
    max_logits = torch.full((T, H), -math.inf, dtype=dtype, device=dev)
    lse = torch.full((T, H), math.inf, dtype=dtype, device=dev)
    step = max(1, chunk_elems // max(1, K * (D + q_pe.shape[-1] + H)))
    for t0 in range(0, T, step):
        t1 = min(T, t0 + step)
        kc = ckv[safe[t0:t1]].to(dtype)                                  # [t, K, 512]
        kp = kpe[safe[t0:t1]].to(dtype)                                  # [t, K, 64]
        if ckv_scale is not None:
            kc = kc * ckv_scale
        if kpe_scale is not None:
            kp = kp * kpe_scale
        s = (torch.einsum("thd,tkd->thk", q_nope[t0:t1].to(dtype), kc)
             + torch.einsum("thd,tkd->thk", q_pe[t0:t1].to(dtype), kp)) * sm_scale
        s = s.masked_fill(~valid[t0:t1, None, :], -math.inf)
        m = s.amax(dim=-1)
        row_lse = torch.logsumexp(s, dim=-1)
        empty = torch.isneginf(row_lse)
        lse_o = row_lse
        if attn_sink is not None:
            lse_o = torch.logaddexp(row_lse, attn_sink.to(device=dev, dtype=dtype)[None, :])
        lse_o = torch.where(empty, torch.zeros_like(lse_o), lse_o)
        p = torch.exp(s - lse_o[..., None])                              # 0 where masked
        out[t0:t1] = torch.einsum("thk,tkd->thd", p, kc)
        max_logits[t0:t1] = m
        lse[t0:t1] = torch.where(empty, torch.full_like(row_lse, math.inf), row_lse)
    return out, max_logits, lse


DS_MLA_ROW_BYTES = 656   # FlashMLA's fp8 row: 512 e4m3, 4 float32 scales, 64 bf16 rope values


def ds_mla_pack(latent: torch.Tensor, rope: torch.Tensor) -> torch.Tensor:
    """FlashMLA's fp8 rows (vLLM's "fp8_ds_mla" cache) from latent [..., 512] (float) and rope
    [..., 64] (bf16): per row 512 e4m3 values (each 128 divided by their scale, amax / 448),
    the 4 float32 scales, the 64 bf16 values as they are. Returns uint8 [..., 656]."""
    groups = latent.float().unflatten(-1, (4, 128))
    scales = (groups.abs().amax(-1) / 448.0).clamp_min(1e-10)
    fp8 = (groups / scales[..., None]).to(torch.float8_e4m3fn)
    return torch.cat([fp8.flatten(-2).view(torch.uint8), scales.view(torch.uint8),
                      rope.to(torch.bfloat16).contiguous().view(torch.uint8)], -1)


def ds_mla_unpack(rows: torch.Tensor, dtype: torch.dtype = torch.float32):
    """The values FlashMLA's fp8 rows [..., 656] (uint8) hold: (latent [..., 512], rope
    [..., 64]) in ``dtype``; latent value i is e4m3 value i times scale i // 128."""
    rows = rows.view(torch.uint8)
    fp8 = rows[..., :512].contiguous().view(torch.float8_e4m3fn).to(dtype)
    scales = rows[..., 512:528].contiguous().view(torch.float32).to(dtype)
    rope = rows[..., 528:].contiguous().view(torch.bfloat16).to(dtype)
    return (fp8.unflatten(-1, (4, 128)) * scales[..., None]).flatten(-2), rope


def merge_states(v_a: torch.Tensor, s_a: torch.Tensor, v_b: torch.Tensor, s_b: torch.Tensor,
                 base_e: bool, dtype: torch.dtype = torch.float64):
    """Merge two partial attention states. v [N, H, D], s [N, H].

    base_e=False: s is log2-sum-exp (FlashInfer / sgl-kernel ``merge_state``);
    base_e=True: natural log (vLLM / sgl-kernel ``merge_state_v2``).
    An LSE of -inf or +inf marks an empty side (vLLM treats +inf as empty); both sides empty
    gives v = 0 and s = -inf. Returns (v, s) in ``dtype``.
    """
    va, vb = v_a.to(dtype), v_b.to(dtype)
    sa, sb = s_a.to(dtype), s_b.to(dtype)
    sa = torch.where(torch.isinf(sa), torch.full_like(sa, -math.inf), sa)
    sb = torch.where(torch.isinf(sb), torch.full_like(sb, -math.inf), sb)
    m = torch.maximum(sa, sb)
    empty = torch.isneginf(m)
    m_safe = torch.where(empty, torch.zeros_like(m), m)
    exp = torch.exp if base_e else torch.exp2
    log = torch.log if base_e else torch.log2
    wa, wb = exp(sa - m_safe), exp(sb - m_safe)
    denom = wa + wb
    denom_safe = torch.where(empty, torch.ones_like(denom), denom)
    v = (va * (wa / denom_safe)[..., None] + vb * (wb / denom_safe)[..., None])
    v = torch.where(empty[..., None], torch.zeros_like(v), v)
    s = torch.where(empty, torch.full_like(m, -math.inf), m_safe + log(denom_safe))
    return v, s


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64; inf when out has a NaN (NaN never passes)."""
    out64, ref64 = out.double(), ref.double()
    if torch.isnan(out64).any():
        return math.inf
    finite = torch.isfinite(ref64)
    if not torch.equal(torch.isfinite(out64), finite):
        return math.inf
    if not torch.equal(out64[~finite], ref64[~finite]):
        return math.inf
    num = (out64[finite] - ref64[finite]).norm()
    den = ref64[finite].norm()
    return float(num / den) if den > 0 else float(num)
