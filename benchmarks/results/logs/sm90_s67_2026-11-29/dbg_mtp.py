"""Session 67 run 5: which rows of test_fp8_tall_mtp[16-2-64-lens0-bf16] have a wrong lse on the
tall instance's MTP items (MLA_WRAPPER_SM90_TALL_MTP=1), against the 64-row plans."""
import math, os, sys
sys.path.insert(0, "tests")
import torch
from test_fp8_kv import make_fp8_batch, scale_query_heads, RAGGED
from test_wrapper import plan, scales, SM_SCALE
from mla_wrapper import BatchMLAPagedAttentionWrapper
from mla_wrapper.reference import mla_attention

ws = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
for name, lens, factors in (("ragged72", RAGGED * 9, [2.0 ** 9, 2.0 ** -10, 1.0, 2.0 ** 5]),
                            ("ragged72-unscaled", RAGGED * 9, [1.0]),
                            ("ragged8", RAGGED, [2.0 ** 9, 2.0 ** -10, 1.0, 2.0 ** 5])):
    for mtp_env in ("1", "0"):
        os.environ["MLA_WRAPPER_SM90_TALL"] = "all"
        os.environ["MLA_WRAPPER_SM90_TALL_MTP"] = mtp_env
        b = make_fp8_batch(lens, 2, 16, 64, torch.bfloat16, seed=16 * 100 + 20 + 64 + len(lens),
                           ckv_scale=0.37, kpe_scale=1.9)
        scale_query_heads(b, factors)
        w = BatchMLAPagedAttentionWrapper(ws, backend="sm90")
        plan(w, b, True)
        out, lse = w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], return_lse=True, **scales(b))
        ro, rl = mla_attention(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], b["qo_indptr"],
                               b["kv_indptr"], b["kv_indices"], b["kv_len"], b["page_size"], True,
                               SM_SCALE, **scales(b))
        rl = rl.to(lse.device); ro = ro.to(out.device)
        d = (lse.double() - rl.double()).abs()
        d[~torch.isfinite(rl)] = 0
        oe = ((out.float() - ro.float()).norm(dim=-1) / ro.float().norm(dim=-1).clamp_min(1e-6))
        qo = b["qo_indptr"].tolist()
        rows = w._impl.layout.rows_per_tile
        bad = (d > 0.05).nonzero().tolist()
        print(f"{name} TALL_MTP={mtp_env} rows/tile {rows}: {len(bad)} bad lse rows, "
              f"max {float(d.max()):.3f}; out rows err > 2e-2: {int((oe > 2e-2).sum())}", flush=True)
        for t, h in bad[:24]:
            r = next(i for i in range(len(qo) - 1) if qo[i] <= t < qo[i + 1])
            print(f"   token {t} (request {r}, query {t - qo[r]} of {qo[r+1]-qo[r]}, kv_len "
                  f"{lens[r]}) head {h}: lse {float(lse[t, h]):.4f} ref {float(rl[t, h]):.4f} "
                  f"out err {float(oe[t, h]):.3g}", flush=True)
