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
                  dtype: torch.dtype = torch.float32):
    """Absorbed MLA over a paged cache.

    q_nope [T, H, 512], q_pe [T, H, 64], ckv_cache [P, page_size, 512], kpe_cache [P, page_size, 64]
    qo_indptr [B+1], kv_indptr [B+1] (into kv_indices, in pages), kv_len_arr [B] (tokens).
    Returns (out [T, H, 512] in ``dtype``, lse [T, H] base 2 in ``dtype``).
    Rows that see no KV token get o = 0 and lse = -inf.
    """
    qo_indptr = [int(x) for x in torch.as_tensor(qo_indptr).tolist()]
    kv_indptr = [int(x) for x in torch.as_tensor(kv_indptr).tolist()]
    kv_len_arr = [int(x) for x in torch.as_tensor(kv_len_arr).tolist()]
    T, H, D = q_nope.shape
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
