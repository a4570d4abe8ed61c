"""Session 12 diagnostic: the sparse decode kernel (H=128, B=128, topk 2048, cache 131072) next
to the dense kernel over page-1 gathers of the same shape (B=128 requests of 2048 random
tokens) and over page-64 TMA tiles. `ncu`: three runs of each (profile with ncu -k regex:mla_sm90);
`trace`: the per-tile clock64 trace of each (-DMLAW_SM90_TRACE=1 builds)."""
import dataclasses
import math
import sys
from pathlib import Path

import torch

root = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(root / "benchmarks"), str(root / "tests"), str(root)]
from check_sm90_dev import print_trace  # noqa: E402
from harness import use_module, use_variant  # noqa: E402

from mla_wrapper import BatchMLAPagedAttentionWrapper, BatchSparseMLAWrapper, sparse_specs  # noqa: E402
from mla_wrapper.backends import sm90  # noqa: E402

SM_SCALE = 1.0 / math.sqrt(192)
H, B, TOPK, CACHE = 128, 128, 2048, 131072
mode = sys.argv[1]
ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
g = torch.Generator().manual_seed(1)
kv = (torch.randn(CACHE, 1, 576, generator=g) * 0.5).to(torch.bfloat16).cuda()
q = torch.randn(B, H, 576, generator=g).to(torch.bfloat16).cuda()
idx = torch.randint(0, CACHE, (B, 1, TOPK), generator=g, dtype=torch.int32).cuda()
out = torch.empty(B, H, 512, dtype=torch.bfloat16, device="cuda")

ws_sparse = BatchSparseMLAWrapper(ws)
ws_sparse.plan(B, TOPK, H, SM_SCALE, torch.bfloat16)
sparse_fn = lambda: ws_sparse.run(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], idx, out=out)  # noqa


def dense(page):
    pages = TOPK // page
    cache = torch.randn(B * pages, page, 576, dtype=torch.bfloat16, device="cuda") * 0.5
    w = BatchMLAPagedAttentionWrapper(torch.empty_like(ws))
    qo = torch.arange(B + 1, dtype=torch.int32)
    w.plan(qo, qo * pages, torch.randperm(B * pages, dtype=torch.int32).cuda(),
           torch.full((B,), TOPK, dtype=torch.int32), H, 512, 64, page, False, SM_SCALE,
           torch.bfloat16, torch.bfloat16)
    return w, lambda: w.run(q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:], out=out)


runs = [("sparse", ws_sparse, sparse_fn)] + [(f"dense page {p}",) + dense(p) for p in (1, 64)]
for name, w, fn in runs:
    fn()
    if mode == "trace":
        impl = w._impl
        if name == "sparse":
            use_variant(impl, sparse_specs.spec("bf16", impl.arch, kernel="sm90"), sparse_specs.RUN,
                        "bf16", "-DMLAW_SM90_TRACE=1")
        else:
            use_variant(impl, sm90.spec("bf16", impl.arch), sm90.RUN_EXPORT, "bf16",
                        "-DMLAW_SM90_TRACE=1")
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        print_trace(w, name)
    else:
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        print("ran", name)
