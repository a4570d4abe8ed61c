"""Context-parallel MLA decode benchmark (mla_wrapper.distributed): latency on 1 vs N GPUs and
the share of time spent in communication.

    python benchmarks/bench_cp.py                                # world_size 1 (1-rank group)
    torchrun --nproc-per-node 2 benchmarks/bench_cp.py           # world_size 2

Cases: B=1 with 1M tokens and B=32 with 128k tokens each, H=128 and 16, bf16, page 64. Each
rank holds its shard (interleave = page size by default) of random data. Per case and exchange
(all_gather / all_to_all) x output heads (all / shard), every rank times, with CUDA events over
a fixed number of iterations (the same on every rank: collectives must match):

    attn_ms    the wrapper over the rank's shard alone (return_lse)
    total_ms   ContextParallelMLAWrapper.run(): attention + exchange + merge
    comm_ms    the exchange's NCCL collectives alone (one for the partials, packed (o, lse);
               all_to_all with all heads: + one all-gather of the merged slices)
    merge_ms   merge_partials over the gathered partials alone
    overhead_ms     total_ms - attn_ms (exchange + merge + copies as run() does them)
    single_gpu_ms   (rank 0) the plain wrapper over the whole cache on one GPU, same process

Figures are the max over ranks of each rank's median. comm_share = comm_ms / total_ms.
JSON lines (with "world_size") go to benchmarks/results/cp.jsonl via harness.ResultWriter.
"""
from __future__ import annotations

import argparse
import math
import os
import socket
import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ResultWriter, ceilings, device_context, median_event_ms  # noqa: E402

from mla_wrapper import BatchMLAPagedAttentionWrapper  # noqa: E402
from mla_wrapper.distributed import (ContextParallelMLAWrapper, EXCHANGES,  # noqa: E402
                                     local_kv_lens, merge_partials)

SM_SCALE = 1.0 / math.sqrt(192)
# (name, batch, kv_len per request, heads)
CASES = [("1M", 1, 1 << 20, 128), ("1M", 1, 1 << 20, 16),
         ("128k", 32, 128 << 10, 128), ("128k", 32, 128 << 10, 16)]
QUICK = [("64k", 1, 64 << 10, 128), ("16k", 8, 16 << 10, 16)]


def init_group() -> None:
    """torchrun's env:// group, or a 1-rank group when run as a plain script."""
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(port))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))


def time_ms(fn, iters: int, warmup: int = 3, barrier: bool = True) -> float:
    """This rank's median ms per call (a barrier first so the ranks start together)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    if barrier:
        dist.barrier()
    return median_event_ms(fn, iters)


def max_over_ranks(x: float) -> float:
    t = torch.tensor([x], dtype=torch.float64, device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t)


def paged_case(lens, H: int, page_size: int, seed: int):
    """Random cache holding ``lens`` tokens (pages in a random order), queries, plan inputs."""
    B = lens.numel()
    pages = (lens.long() + page_size - 1) // page_size
    kv_indptr = torch.zeros(B + 1, dtype=torch.int32)
    kv_indptr[1:] = torch.cumsum(pages, 0)
    n = max(int(kv_indptr[-1]), 1)
    g = torch.Generator(device="cuda").manual_seed(seed)
    cache = torch.randn(n, page_size, 576, dtype=torch.bfloat16, device="cuda", generator=g)
    gq = torch.Generator(device="cuda").manual_seed(1234)   # the same queries on every rank
    q = torch.randn(B, H, 576, dtype=torch.bfloat16, device="cuda", generator=gq)
    return dict(qo_indptr=torch.arange(B + 1, dtype=torch.int32), kv_indptr=kv_indptr,
                kv_indices=torch.randperm(n, device="cuda", generator=g).to(torch.int32),
                kv_len=lens.to(torch.int32), ckv=cache[..., :512], kpe=cache[..., 512:],
                q_nope=q[..., :512], q_pe=q[..., 512:])


def plan_args(c, H, page_size):
    return (c["qo_indptr"], c["kv_indptr"], c["kv_indices"], c["kv_len"], H, 512, 64, page_size,
            False, SM_SCALE, torch.bfloat16, torch.bfloat16)


def received_bytes(cp: ContextParallelMLAWrapper) -> int:
    """Bytes one rank receives per run() (packed rows, alignment padding included)."""
    W, H = cp.world_size, cp._planned[1]
    if cp.exchange == "all_gather":
        return (W - 1) * cp._packed("gathered", H)[0].shape[1]
    row = cp._packed("recv", H // W)[0].shape[1]
    return (W - 1) * row * (2 if cp.output_heads == "all" else 1)


def comm_fn(cp: ContextParallelMLAWrapper):
    """run()'s collectives alone, on the buffers run() used."""
    if cp.exchange == "all_to_all" and cp.output_heads == "all":
        return lambda: (cp._exchange_partials(), cp._gather_merged())
    return cp._exchange_partials


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small cases (a smoke run)")
    ap.add_argument("--page-size", type=int, default=64)
    ap.add_argument("--interleave", type=int, default=0, help="default: the page size")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--exchanges", default=",".join(EXCHANGES))
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    init_group()
    W, rank = dist.get_world_size(), dist.get_rank()
    ps = args.page_size
    interleave = args.interleave or ps
    ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    writer = None
    if rank == 0:
        ctx = {**device_context(), **ceilings(), "nccl": ".".join(map(str, torch.cuda.nccl.version())),
               "bench": "cp", "tag": args.tag}
        writer = ResultWriter("cp", ctx)
    dist.barrier()
    for name, B, L, H in (QUICK if args.quick else CASES):
        lens = torch.full((B,), L, dtype=torch.int64)
        local = local_kv_lens(lens, W, interleave)[rank]
        c = paged_case(local, H, ps, seed=rank)
        w = BatchMLAPagedAttentionWrapper(ws)
        w.plan(*plan_args(c, H, ps))
        attn = max_over_ranks(time_ms(lambda: w.run(c["q_nope"], c["q_pe"], c["ckv"], c["kpe"],
                                                    return_lse=True), args.iters))
        single = attn
        if W > 1:
            single = -1.0
            if rank == 0:   # the whole cache on one GPU (the other ranks wait at the barrier)
                whole = paged_case(lens, H, ps, seed=99)
                w1 = BatchMLAPagedAttentionWrapper(ws)
                w1.plan(*plan_args(whole, H, ps))
                fn1 = lambda: w1.run(whole["q_nope"], whole["q_pe"], whole["ckv"], whole["kpe"],  # noqa: E731
                                     return_lse=True)
                single = time_ms(fn1, args.iters, barrier=False)
                del whole, w1, fn1
                torch.cuda.empty_cache()
            dist.barrier()
            single = max_over_ranks(single)
        parts_o = torch.randn(W, B, H, 512, device="cuda").to(torch.bfloat16)
        parts_s = torch.randn(W, B, H, device="cuda")
        merge_all = max_over_ranks(time_ms(lambda: merge_partials(parts_o, parts_s), args.iters))
        for exchange in args.exchanges.split(","):
            for output_heads in ("all", "shard"):
                if (exchange == "all_to_all" or output_heads == "shard") and H % W:
                    continue
                cp = ContextParallelMLAWrapper(ws, interleave=interleave, exchange=exchange,
                                               output_heads=output_heads)
                cp.plan(*plan_args(c, H, ps))
                total = max_over_ranks(time_ms(
                    lambda: cp.run(c["q_nope"], c["q_pe"], c["ckv"], c["kpe"], return_lse=True),
                    args.iters))
                comm = max_over_ranks(time_ms(comm_fn(cp), args.iters)) if W > 1 else 0.0
                merge = merge_all if output_heads == "all" and exchange == "all_gather" else \
                    max_over_ranks(time_ms(lambda: merge_partials(parts_o[:, :, :H // W],
                                                                  parts_s[:, :, :H // W]), args.iters))
                rec = dict(case=name, B=B, kv_len=L, H=H, page_size=ps, interleave=interleave,
                           world_size=W, exchange=exchange, output_heads=output_heads,
                           local_tokens_max=int(local_kv_lens(lens, W, interleave).sum(1).max()),
                           attn_ms=round(attn, 4), total_ms=round(total, 4), comm_ms=round(comm, 4),
                           merge_ms=round(merge, 4), overhead_ms=round(total - attn, 4),
                           comm_share=round(comm / total, 4), received_bytes=received_bytes(cp),
                           single_gpu_ms=round(single, 4), speedup_vs_1gpu=round(single / total, 3))
                if writer is not None:
                    writer.write(rec)
                    print(f"{name:>5} B={B:<3} H={H:<4} W={W} {exchange:>10}/{output_heads:<5} "
                          f"attn {attn:8.3f} ms  total {total:8.3f} ms  comm {comm:7.3f} ms "
                          f"({100 * comm / total:5.1f}%)  merge {merge:6.3f} ms  "
                          f"1-GPU {single:8.3f} ms  speedup {single / total:5.2f}x", flush=True)
        del c, w, parts_o, parts_s
        torch.cuda.empty_cache()
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
