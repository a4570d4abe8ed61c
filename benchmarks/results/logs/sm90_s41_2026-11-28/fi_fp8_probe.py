"""Session 41 probe: does the carried FlashInfer (0.5.3) run its MLA wrapper over an fp8 cache
(bf16 q), and how fast next to ours (sm90 fp8 / bf16) on two rows? One process, same tensors."""
import math, sys, torch, triton
sys.path.insert(0, "benchmarks")
from bench_decode import make_case  # noqa: E402
from mla_wrapper import BatchMLAPagedAttentionWrapper  # noqa: E402
import flashinfer  # noqa: E402

S = 1 / math.sqrt(192)
ws_fi = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
ws = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
print("flashinfer", flashinfer.__version__, torch.cuda.get_device_name())
for H, B, L in ((16, 128, 4096), (128, 64, 4096)):
    c = make_case(H, B, L, 64, 1, "cuda", seed=7)
    c8 = c["cache"].to(torch.float8_e4m3fn)
    row = {}
    for name, kvdt, ckv, kpe in (("sm90_bf16", torch.bfloat16, c["ckv"], c["kpe"]),
                                 ("sm90_fp8", torch.float8_e4m3fn, c8[..., :512], c8[..., 512:])):
        w = BatchMLAPagedAttentionWrapper(ws, backend="sm90")
        w.plan(c["qo_indptr"], c["kv_indptr"], c["kv_indices"], c["lens"], H, 512, 64, 64, False,
               S, torch.bfloat16, kvdt)
        row[name] = triton.testing.do_bench(lambda: w.run(c["q_nope"], c["q_pe"], ckv, kpe)) * 1e3
    for kvdt, ckv, kpe, name in ((torch.bfloat16, c["ckv"], c["kpe"], "fi_fa3_bf16"),
                                 (torch.float8_e4m3fn, c8[..., :512], c8[..., 512:], "fi_fa3_fp8")):
        try:
            fw = flashinfer.mla.BatchMLAPagedAttentionWrapper(ws_fi, backend="fa3")
            fw.plan(c["qo_indptr"].cuda(), c["kv_indptr"].cuda(), c["kv_indices"], c["lens"].cuda(),
                    H, 512, 64, 64, False, S, torch.bfloat16, kvdt)
            fw.run(c["q_nope"], c["q_pe"], ckv, kpe)
            row[name] = triton.testing.do_bench(lambda: fw.run(c["q_nope"], c["q_pe"], ckv, kpe)) * 1e3
        except Exception as e:  # noqa: BLE001
            row[name] = f"{type(e).__name__}: {str(e)[:150]}"
    print(f"H={H} B={B} L={L}:", {k: (round(v, 1) if isinstance(v, float) else v) for k, v in row.items()})
