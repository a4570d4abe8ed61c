"""Session 70 diagnostic: where flash_mla_with_kvcache's dense path (sm90_fmla) loses to the
wrapper (sm90) on some rows: host microseconds a call (GPU kept busy), GPU microseconds (a
CUDA-graph replay of one call, no flush), do_bench's figure, and the balanced plan's shape."""
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))   # benchmarks/
from bench_decode import RUNNERS, make_case  # noqa: E402
from harness import bench_ms  # noqa: E402

from mla_wrapper import ops  # noqa: E402

dev = torch.device("cuda")
ws = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
big = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)


def host_us(fn, n=200):
    torch.cuda.synchronize()
    for _ in range(60):
        big @ big            # ~ms of queued work: launches only enqueue
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t = (time.perf_counter() - t0) * 1e6 / n
    torch.cuda.synchronize()
    return t


def graph_us(fn, n=20):
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(n):
        g.replay()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1e3 / n


CASES = ((16, 1, 1024), (16, 64, 1024), (128, 64, 1024), (16, 64, 4096), (32, 64, 4096),
         (128, 64, -4096), (16, 64, -4096))
for H, B, L in CASES if __name__ == "__main__" else ():
    c = make_case(H, B, L, 64, 1, dev, seed=B)
    row = []
    for name in ("sm90", "sm90_fmla"):
        fn, _ = RUNNERS[name](c, ws)
        fn()
        torch.cuda.synchronize()
        row.append((name, host_us(fn), graph_us(fn), bench_ms(fn) * 1e3))
        if name == "sm90_fmla":
            sched = fn.__closure__
    print(f"H={H} B={B} L={L}: " + "; ".join(f"{n} host {h:.1f} graph {g:.1f} do_bench {d:.1f}"
                                             for n, h, g, d in row), flush=True)
# the plan of one case, decoded
from mla_wrapper import flash_mla_with_kvcache, get_mla_metadata  # noqa: E402
for H, B, L in ((16, 64, 1024), (128, 64, -4096), (16, 1, 1024)) if __name__ == "__main__" else ():
    c = make_case(H, B, L, 64, 1, dev, seed=B)
    from bench_decode import flashmla_tensors  # noqa: E402
    q, cache, table, seqlens, out = flashmla_tensors(c, dev)
    meta, _ = get_mla_metadata()
    flash_mla_with_kvcache(q, cache, table, seqlens, 512, meta, None, 0.07, False, out=out)
    torch.cuda.synchronize()
    sm = torch.cuda.get_device_properties(dev).multi_processor_count
    tiles = -(-H // 64)
    offsets, *_ = ops._balanced_layout(B, tiles, sm)
    a = meta._dense.workspace.cpu().numpy().view(np.int32)
    counts = a[offsets["counts"]: offsets["counts"] + 4]
    indptr = a[offsets["cta_work_indptr"]: offsets["cta_work_indptr"] + sm + 1]
    per = np.diff(indptr)
    work = a[offsets["work_info"]: offsets["work_info"] + counts[0] * 9].reshape(-1, 9)
    lens = (work[:, 3] - work[:, 2])
    cta_tokens = [int(lens[indptr[i]:indptr[i + 1]].sum()) for i in range(sm)]
    print(f"plan H={H} B={B} L={L}: items {counts[0]} merges {counts[1]}, items a CTA max "
          f"{per.max()} busy CTAs {(per > 0).sum()}, tokens a CTA max {max(cta_tokens)} mean "
          f"{statistics.mean(cta_tokens):.0f}; args pdl {meta._dense.args.enable_pdl} "
          f"num_pages {meta._dense.args.num_pages} num_q_tokens {meta._dense.args.num_q_tokens}",
          flush=True)
    # one more call: reused?
    first = meta._dense
    t0 = time.perf_counter()
    flash_mla_with_kvcache(q, cache, table, seqlens, 512, meta, None, 0.07, False, out=out)
    print(f"  reused: {meta._dense is first}, second call host {1e6 * (time.perf_counter() - t0):.1f} us")
