"""Context-parallel decode check, one process per GPU (run by tests/test_distributed.py):

    torchrun --nproc-per-node 2 tests/cp_worker.py      # also works with 1 (a 1-rank group)

Every rank builds the same global batch (same seed), copies its shard of the cache
(shard_paged_cache), runs ContextParallelMLAWrapper and compares with the single-GPU wrapper
over the whole cache on its own GPU; then run() captured in a CUDA graph, re-planned and
replayed (graph_case). Prints one line per case; exits 1 if any case fails.
Also holds the helpers the single-process tests share.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_wrapper import SM_SCALE, TOL, capture_graph, make_batch, plan  # noqa: E402

from mla_wrapper.distributed import shard_kv_layout, shard_paged_cache  # noqa: E402
from mla_wrapper.reference import rel_error  # noqa: E402

# (global kv lengths, heads, page size, interleave); world_size 2 gives rank 1 zero tokens of
# the requests shorter than interleave + 1, and both ranks zero tokens of the empty request
CASES = [
    ([1, 0, 5000, 63, 64, 65, 3001], 16, 16, 1),
    ([1, 0, 5000, 63, 64, 65, 3001], 128, 16, 16),
    ([7, 40000, 129, 2, 1000], 128, 64, 64),
    ([100, 17, 12345], 16, 1, 1),
    ([3, 70000], 32, 64, 8),
    ([3, 1], 16, 16, 16),           # ranks other than 0 hold no token of the whole batch
]


def shard_batch(b: dict, world_size: int, interleave: int, rank: int, device=None) -> dict:
    """Rank ``rank``'s shard of a make_batch() batch: its caches and plan() arguments."""
    layout = shard_kv_layout(b["kv_len"], world_size, interleave, b["page_size"])
    (ckv, kpe), kv_indptr, kv_indices, kv_len = shard_paged_cache(
        layout, rank, (b["ckv"], b["kpe"]), b["kv_indptr"], b["kv_indices"], device=device)
    return dict(b, ckv=ckv, kpe=kpe, kv_indptr=kv_indptr, kv_indices=kv_indices, kv_len=kv_len,
                layout=layout)


def whole_cache_output(b: dict, workspace: torch.Tensor):
    """(out, lse) of the single-GPU wrapper over the whole cache."""
    from mla_wrapper import BatchMLAPagedAttentionWrapper

    w = BatchMLAPagedAttentionWrapper(workspace)
    plan(w, b, False)
    return w.run(b["q_nope"], b["q_pe"], b["ckv"], b["kpe"], return_lse=True)


def compare(out, lse, ref_out, ref_lse, dtype) -> str:
    """'' when (out, lse) match the reference outputs, else what differs."""
    err, lse_err = rel_error(out, ref_out), rel_error(lse, ref_lse)
    if err < TOL[dtype] and lse_err < 1e-3:
        return ""
    return f"out rel error {err}, lse rel error {lse_err}"


# One CUDA graph of ContextParallelMLAWrapper.run(), re-planned with other lengths at the same
# batch size (a serving engine's graph per batch bucket) and replayed (graph_case)
GRAPH_BATCHES = ([900, 3, 0, 2500], [17, 4000, 1200, 64], [1, 1, 1, 1])
GRAPH_HEADS, GRAPH_PAGE, GRAPH_INTERLEAVE = 16, 16, 16


def graph_case(ws: torch.Tensor, rank: int, world_size: int, exchange: str,
               output_heads: str) -> str:
    """run() of a ContextParallelMLAWrapper over a use_cuda_graph wrapper's fixed buffers,
    captured once after the first batch's plan(), then re-planned with each of GRAPH_BATCHES
    and replayed into NaN-poisoned outputs (ws on the current device). Collective: every rank
    calls it. Returns '' when every replay matches the single-GPU wrapper over the whole cache,
    else what differs."""
    from mla_wrapper import BatchMLAPagedAttentionWrapper
    from mla_wrapper.distributed import ContextParallelMLAWrapper

    dev = ws.device
    B, H, ps = len(GRAPH_BATCHES[0]), GRAPH_HEADS, GRAPH_PAGE
    pages = max(sum(-(-n // ps) for n in lens) for lens in GRAPH_BATCHES) + 8
    index = dict(qo_indptr=torch.zeros(B + 1, dtype=torch.int32, device=dev),
                 kv_indptr=torch.zeros(B + 1, dtype=torch.int32, device=dev),
                 kv_indices=torch.zeros(pages, dtype=torch.int32, device=dev),
                 kv_len_arr=torch.zeros(B, dtype=torch.int32, device=dev))
    inner = BatchMLAPagedAttentionWrapper(ws, use_cuda_graph=True, **index)
    w = ContextParallelMLAWrapper(wrapper=inner, interleave=GRAPH_INTERLEAVE, exchange=exchange,
                                  output_heads=output_heads)
    q = torch.empty(B, H, 576, dtype=torch.bfloat16, device=dev)
    cache = torch.empty(pages, ps, 576, dtype=torch.bfloat16, device=dev)
    q_nope, q_pe, ckv, kpe = q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:]
    ref_ws = torch.empty(64 << 20, dtype=torch.uint8, device=dev)   # not the graph's workspace
    graph, out, lse = None, None, None
    h = H // world_size
    for k, lens in enumerate(GRAPH_BATCHES):
        b = make_batch(lens, 1, H, ps, torch.bfloat16, seed=300 + k, device=dev)
        ref_out, ref_lse = whole_cache_output(b, ref_ws)
        if output_heads == "shard":
            ref_out, ref_lse = ref_out[:, rank * h:(rank + 1) * h], ref_lse[:, rank * h:(rank + 1) * h]
        s = shard_batch(b, world_size, GRAPH_INTERLEAVE, rank)
        w.plan(s["qo_indptr"], s["kv_indptr"], s["kv_indices"], s["kv_len"], H, 512, 64, ps,
               False, SM_SCALE, torch.bfloat16, torch.bfloat16, layout=s["layout"])
        q_nope.copy_(s["q_nope"])
        q_pe.copy_(s["q_pe"])
        n = s["ckv"].shape[0]
        ckv[:n].copy_(s["ckv"])
        kpe[:n].copy_(s["kpe"])
        if graph is None:
            graph, (out, lse) = capture_graph(
                lambda: w.run(q_nope, q_pe, ckv, kpe, return_lse=True))
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize(dev)
        why = compare(out, lse, ref_out, ref_lse, torch.bfloat16)
        if why:
            return f"replay after plan {k} (lens {lens}): {why}"
    return ""


def main() -> int:
    import torch.distributed as dist

    from mla_wrapper.distributed import ContextParallelMLAWrapper

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=dev)
    rank, W = dist.get_rank(), dist.get_world_size()
    ws = torch.empty(128 << 20, dtype=torch.uint8, device=dev)
    failures = 0
    for k, (lens, heads, page_size, interleave) in enumerate(CASES):
        b = make_batch(lens, 1, heads, page_size, torch.bfloat16, seed=100 + k, device=dev)
        ref_out, ref_lse = whole_cache_output(b, ws)
        s = shard_batch(b, W, interleave, rank)
        for exchange in ("all_gather", "all_to_all"):
            for output_heads in ("all", "shard"):
                cp = ContextParallelMLAWrapper(ws, interleave=interleave, exchange=exchange,
                                               output_heads=output_heads)
                cp.plan(s["qo_indptr"], s["kv_indptr"], s["kv_indices"], s["kv_len"], heads, 512,
                        64, page_size, False, SM_SCALE, torch.bfloat16, torch.bfloat16,
                        layout=s["layout"])
                out, lse = cp.run(s["q_nope"], s["q_pe"], s["ckv"], s["kpe"], return_lse=True)
                torch.cuda.synchronize(dev)
                if output_heads == "shard":
                    h = heads // W
                    ro, rl = ref_out[:, rank * h:(rank + 1) * h], ref_lse[:, rank * h:(rank + 1) * h]
                else:
                    ro, rl = ref_out, ref_lse
                why = compare(out, lse, ro, rl, torch.bfloat16)
                local = s["kv_len"].tolist()
                print(f"rank {rank}/{W} case {k} lens {lens} local {local} H={heads} ps={page_size} "
                      f"interleave={interleave} {exchange}/{output_heads}: "
                      f"{'FAIL ' + why if why else 'ok'}", flush=True)
                failures += bool(why)
    for exchange in ("all_gather", "all_to_all"):
        for output_heads in ("all", "shard"):
            why = graph_case(ws, rank, W, exchange, output_heads)
            print(f"rank {rank}/{W} CUDA graph, re-planned {len(GRAPH_BATCHES)} times, "
                  f"{exchange}/{output_heads}: {'FAIL ' + why if why else 'ok'}", flush=True)
            failures += bool(why)
    total = torch.tensor([failures], device=dev)
    dist.all_reduce(total)
    dist.destroy_process_group()
    if rank == 0:
        print(f"cp_worker: world_size {W}, {int(total)} failures", flush=True)
    return 1 if int(total) else 0


if __name__ == "__main__":
    sys.exit(main())
