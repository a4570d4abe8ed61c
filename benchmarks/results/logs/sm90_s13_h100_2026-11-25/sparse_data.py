"""Session 13 diagnostic: is the sparse kernel's gap to the dense kernel (H=128 B=128, topk 2048)
in the kernel's code or in the rows it reads? Times, on the same device in one process:
  sparse  rand   : the sparse wrapper, indices randint(0, 131072) (bench_sparse's data)
  dense1  rand   : the dense kernel at page 1, its page table = the same indices, same cache
  dense1  perm   : the dense kernel at page 1 over B x 2048 distinct random rows (session 12)
  sparse  perm   : the sparse wrapper over those same distinct rows
  sparse  sorted : bench data with each token's list sorted
  dense64        : the dense kernel at page 64 (TMA), bench_sparse's dense reference
Optional argv[1] = ';'-separated sets of extra nvcc flags (or lib:path/{dt}.so) for sparse
variant builds (also timed on rand data), or "trace" [extra flags of the sparse trace build]:
the per-tile clock64 trace (-DMLAW_SM90_TRACE=1 builds) of the first three cases."""
import math
import sys
from pathlib import Path

import torch

root = Path(__file__).resolve().parents[4]
sys.path[:0] = [str(root / "benchmarks"), str(root)]
from check_sm90_dev import print_trace  # noqa: E402
from harness import bench_ms, use_variant  # noqa: E402

from mla_wrapper import BatchMLAPagedAttentionWrapper, BatchSparseMLAWrapper, sparse_specs  # noqa: E402
from mla_wrapper.backends import sm90  # noqa: E402

SM_SCALE = 1.0 / math.sqrt(192)
TOPK, CACHE = 2048, 131072
ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
flags = sys.argv[1] if len(sys.argv) > 1 else ""
trace = flags == "trace"
TRACE = "-DMLAW_SM90_TRACE=1"
TRACE_SPARSE = " ".join([TRACE] + sys.argv[2:3])


def sparse_fn(q, kv, idx, variant=""):
    B, H = q.shape[0], q.shape[1]
    w = BatchSparseMLAWrapper(torch.empty_like(ws))
    w.plan(B, TOPK, H, SM_SCALE, torch.bfloat16)
    out = torch.empty(B, H, 512, dtype=torch.bfloat16, device="cuda")
    fn = lambda: w.run(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], idx, out=out)  # noqa
    fn()
    if variant:
        use_variant(w._impl, sparse_specs.spec("bf16", w._impl.arch, kernel="sm90"),
                    sparse_specs.RUN, "bf16", variant)
        fn()
    return fn, w, sparse_specs.spec("bf16", w._impl.arch, kernel="sm90"), sparse_specs.RUN


def dense_fn(q, cache, table, page):
    B, H = q.shape[0], q.shape[1]
    pages = TOPK // page
    w = BatchMLAPagedAttentionWrapper(torch.empty_like(ws))
    qo = torch.arange(B + 1, dtype=torch.int32)
    w.plan(qo, qo * pages, table, torch.full((B,), TOPK, dtype=torch.int32), H, 512, 64, page,
           False, SM_SCALE, torch.bfloat16, torch.bfloat16)
    out = torch.empty(B, H, 512, dtype=torch.bfloat16, device="cuda")
    fn = lambda: w.run(q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:], out=out)  # noqa
    fn()
    return fn, w, sm90.spec("bf16", w._impl.arch), sm90.RUN_EXPORT


for H, B in ((128, 128), (128, 32), (64, 128)):
    g = torch.Generator().manual_seed(1)
    kv = (torch.randn(CACHE, 1, 576, generator=g) * 0.5).to(torch.bfloat16).cuda()
    q = torch.randn(B, H, 576, generator=g).to(torch.bfloat16).cuda()
    idx = torch.randint(0, CACHE, (B, 1, TOPK), generator=g, dtype=torch.int32).cuda()
    kvp = (torch.randn(B * TOPK, 1, 576, generator=g) * 0.5).to(torch.bfloat16).cuda()
    perm = torch.randperm(B * TOPK, generator=g, dtype=torch.int32).cuda()
    cache64 = (torch.randn(B * TOPK // 64, 64, 576, generator=g) * 0.5).to(torch.bfloat16).cuda()
    runs = {
        "sparse rand": sparse_fn(q, kv, idx),
        "dense1 rand": dense_fn(q, kv.view(CACHE, 1, 576), idx.flatten(), 1),
        "dense1 perm": dense_fn(q, kvp, perm, 1),
        "sparse perm": sparse_fn(q, kvp, perm.view(B, 1, TOPK)),
        "sparse sorted": sparse_fn(q, kv, idx.sort(dim=-1).values.contiguous()),
        "dense64": dense_fn(q, cache64, torch.randperm(B * TOPK // 64, dtype=torch.int32).cuda(), 64),
    }
    if trace:
        for name in ("sparse rand", "dense1 rand", "dense1 perm"):
            fn, w, spec, export = runs[name]
            use_variant(w._impl, spec, export, "bf16", TRACE_SPARSE if "sparse" in name else TRACE)
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            print_trace(w, f"H={H} B={B} {name}")
        continue
    for i, v in enumerate(f for f in flags.split(";") if f.strip()):
        runs[f"sparse rand VARIANT {i}"] = sparse_fn(q, kv, idx, v.strip())
    base = None
    for name, (fn, *_) in runs.items():
        ms = bench_ms(fn)
        base = base or ms
        print(f"H={H:3d} B={B:3d} {name:20s} {ms * 1000:8.1f} us  ({base / ms:5.3f}x sparse rand)",
              flush=True)
