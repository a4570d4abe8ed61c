"""MLA decode benchmark over BENCHMARKS.md's grid: every backend of this project and FlashInfer
(fa2 / fa3) when importable, in one process on the same tensors, with a correctness check.

    python benchmarks/bench_decode.py [--quick] [--backends sm80,sm90,sm90_fp8,sm90_fmla,fi_fa2,fi_fa3,flashmla] [--cases ...]

(flashmla: FlashMLA's dense decode kernel, from the library benchmarks/fetch_flashmla.sh fetches;
sm90_fmla: ours through FlashMLA's call, flash_mla_with_kvcache without indices, on the same
tensors: its plan written on the GPU from device lengths, once per scheduling-metadata object.
sm90_cutlass / sm90_cutlass1: ours through sgl-kernel's cutlass_mla_decode (routed to the
planned family off SM100, a plan kernel every call), num_kv_splits -1 / 1; qo_len 1 rows.)
sm90_fp8: our sm90 kernel over an FP8 (e4m3) copy of the case's cache (same page table,
ckv_scale = kpe_scale = 1.0; bf16 queries and output). Its error (`err` in the table,
`rel_err` in the JSON line) is against the reference on that fp8-rounded cache, and
`rel_err_bf16` against the bf16 cache's reference (~3e-2: the rounding to e4m3); its GB/s
count the cache at one byte an element. `--backends sm90,sm90_fp8,fi_fa3` compares it with
the 16-bit kernels in one process; the ours/best-peer column stays 16-bit (ours vs peers),
with the fp8 runner's ratio to the best peer after it.

Writes JSON lines to benchmarks/results/decode.jsonl (device, date, versions and the copy /
matmul ceilings measured in this run on every line) and prints a table with ratios to the
best peer. Latency rows (B=1) are also timed as CUDA-graph replays (back to back; with
--flush clean also each replay after a read flush, `graph_replay_flushed_us`: in a model the
GEMMs between two attention launches evict the kernels' code and data from L2).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import ResultWriter, bench_graph_us, bench_ms, ceilings, device_context, heat  # noqa: E402

from mla_wrapper import BatchMLAPagedAttentionWrapper  # noqa: E402
from mla_wrapper.reference import mla_attention, rel_error  # noqa: E402

SM_SCALE = 1.0 / math.sqrt(192)

# (name, heads, batch, kv_len, page_size, qo_len)
FULL_GRID = [
    ("compute", 128, 128, 16384, 64, 1), ("compute", 128, 128, 4096, 64, 1),
    ("compute", 128, 64, 16384, 64, 1), ("compute", 128, 64, 4096, 64, 1),
    ("memory", 16, 128, 16384, 64, 1), ("memory", 16, 64, 16384, 64, 1),
    ("memory", 16, 128, 4096, 64, 1), ("memory", 16, 64, 4096, 64, 1),
    ("middle", 16, 16, 4096, 64, 1), ("middle", 16, 64, 1024, 64, 1),
    ("middle", 128, 16, 4096, 64, 1), ("middle", 128, 64, 1024, 64, 1),
    ("latency", 16, 1, 1024, 64, 1), ("latency", 128, 1, 1024, 64, 1),
    ("latency", 16, 1, 4096, 64, 1), ("latency", 128, 1, 4096, 64, 1),
    ("page1", 128, 64, 4096, 1, 1), ("page1", 16, 64, 4096, 1, 1),
    ("page16", 128, 64, 4096, 16, 1), ("page16", 16, 64, 4096, 16, 1),
    ("page32", 128, 64, 4096, 32, 1), ("page32", 16, 64, 4096, 32, 1),
    ("tp4", 32, 64, 4096, 64, 1), ("tp2", 64, 64, 4096, 64, 1),
    ("mtp", 16, 64, 4096, 64, 2), ("mtp", 128, 32, 4096, 64, 2),
    ("ragged", 128, 64, -4096, 64, 1), ("ragged", 16, 64, -4096, 64, 1),
    ("ragged_mtp", 128, 32, -4096, 64, 2),
]
QUICK_GRID = [FULL_GRID[i] for i in (0, 1, 4, 8, 9, 12, 13, 16, 24, 26)]
# Shapes between and beyond the grid's (batch 2-512, contexts 512-65536, page sizes 1-256,
# MTP 3-4), where a serving engine also runs: the weak spots the grid could miss. Run only
# when asked for (--cases sweep).
SWEEP_GRID = [
    ("sweep", H, B, L, ps, qo) for H in (16, 128) for B, L, ps, qo in (
        (2, 8192, 64, 1), (2, 65536, 64, 1), (4, 2048, 64, 1), (4, 32768, 64, 1),
        (8, 8192, 64, 1), (8, 8192, 1, 1), (8, 8192, 16, 1), (32, 1024, 64, 1),
        (32, 8192, 64, 1), (32, 4096, 128, 1), (32, 4096, 256, 1), (256, 1024, 64, 1),
        (256, 4096, 64, 1), (512, 512, 64, 1), (32, 4096, 64, 3), (16, 4096, 64, 4))
] + [("sweep", 64, B, L, 64, 1) for B, L in ((8, 8192), (32, 2048), (128, 8192))]


def case_lens(B, L, qo_len, g):
    """KV lengths of a case: L each, or for L < 0 ragged, uniform in [qo_len, 2 |L|) drawn from
    generator g (mean ~|L|)."""
    if L < 0:
        return torch.randint(qo_len, 2 * -L, (B,), generator=g, dtype=torch.int32)
    return torch.full((B,), L, dtype=torch.int32)


# Value distributions of the inputs (--data). A tensor core's energy per operation depends on
# the operand bits, and at the power cap (H=128 rows) energy per call sets the clock, so the
# compute-bound figures depend on the data: "randn" (standard normal, the default and the
# method's), "fp8kv" (the cache's values rounded to e4m3, as a bf16 cache dequantized from an
# FP8 one holds: 3 mantissa bits), "uniform" (U[0, 1) for query and cache).
DATA = ("randn", "fp8kv", "uniform")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def make_data(shape, data, device, is_kv, dtype=torch.bfloat16):
    if data not in DATA:
        raise ValueError(f"data must be one of {DATA}, got {data!r}")
    if data == "uniform":
        return torch.rand(shape, dtype=dtype, device=device)
    t = torch.randn(shape, dtype=dtype, device=device)
    return t.to(torch.float8_e4m3fn).to(dtype) if data == "fp8kv" and is_kv else t


def make_case(H, B, L, page_size, qo_len, device, seed, data="randn", dtype=torch.bfloat16):
    """Random inputs of element type `dtype` (bf16 or fp16; values drawn as `data` says, see
    DATA); pages in a random permutation of the cache. L < 0: ragged lengths with mean |L|.
    Returns a dict of tensors and host index arrays."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    lens = case_lens(B, L, qo_len, g)
    pages_per = (lens + page_size - 1) // page_size
    kv_indptr = torch.zeros(B + 1, dtype=torch.int32)
    kv_indptr[1:] = torch.cumsum(pages_per, 0)
    num_pages = int(kv_indptr[-1])
    kv_indices = torch.randperm(num_pages, generator=g).to(torch.int32)
    qo_indptr = torch.arange(B + 1, dtype=torch.int32) * qo_len
    T = B * qo_len
    cache = make_data((num_pages, page_size, 576), data, device, is_kv=True, dtype=dtype)
    q = make_data((T, H, 576), data, device, is_kv=False, dtype=dtype)
    return {
        "H": H, "B": B, "page_size": page_size, "qo_len": qo_len, "lens": lens,
        "qo_indptr": qo_indptr, "kv_indptr": kv_indptr, "kv_indices": kv_indices.to(device),
        "ckv": cache[..., :512], "kpe": cache[..., 512:], "cache": cache,
        "q_nope": q[..., :512], "q_pe": q[..., 512:], "q": q,
    }


def flops_bytes(c, kv_bytes=2):
    """FLOPs and bytes moved (cache read once at kv_bytes an element, q read, out written)."""
    H, qo = c["H"], c["qo_len"]
    L = c["lens"].double()
    flops = float((2 * H * qo * L * (576 + 512)).sum())
    T = c["B"] * qo
    nbytes = float(L.sum()) * 576 * kv_bytes + T * H * 576 * 2 + T * H * 512 * 2
    return flops, nbytes


def fp8_cache(c):
    """The case's cache rounded to e4m3 (made once per case, kept in c): [pages, page, 576]."""
    if "cache_fp8" not in c:
        c["cache_fp8"] = c["cache"].to(torch.float8_e4m3fn)
    return c["cache_fp8"]


def runner_ours(backend, c, ws, fp8=False):
    """Our wrapper on the case's tensors; fp8: over an e4m3 copy of its cache (views of one
    [pages, page, 576] fp8 buffer, same page table), scales 1.0 passed explicitly."""
    w = BatchMLAPagedAttentionWrapper(ws, backend=backend)
    causal = c["qo_len"] > 1
    dt = c["q"].dtype
    w.plan(c["qo_indptr"], c["kv_indptr"], c["kv_indices"], c["lens"], c["H"], 512, 64,
           c["page_size"], causal, SM_SCALE, dt, torch.float8_e4m3fn if fp8 else dt)
    ckv, kpe, scales = c["ckv"], c["kpe"], {}
    if fp8:
        cache = fp8_cache(c)
        ckv, kpe, scales = cache[..., :512], cache[..., 512:], {"ckv_scale": 1.0, "kpe_scale": 1.0}
    out = torch.empty(c["q_nope"].shape, dtype=dt, device=ws.device)
    lse = torch.empty(c["q_nope"].shape[:2], dtype=torch.float32, device=ws.device)
    return lambda: w.run(c["q_nope"], c["q_pe"], ckv, kpe, out=out, lse=lse, **scales), out


def runner_flashinfer(fi_backend, c, ws):
    import flashinfer

    w = flashinfer.mla.BatchMLAPagedAttentionWrapper(ws, backend=fi_backend)
    dev = ws.device
    causal = c["qo_len"] > 1
    w.plan(c["qo_indptr"].to(dev), c["kv_indptr"].to(dev), c["kv_indices"], c["lens"].to(dev),
           c["H"], 512, 64, c["page_size"], causal, SM_SCALE, c["q"].dtype, c["q"].dtype)
    q_nope, q_pe = c["q_nope"].contiguous(), c["q_pe"].contiguous()
    ckv, kpe = c["ckv"], c["kpe"]
    out = torch.empty(q_nope.shape, dtype=q_nope.dtype, device=dev)
    return lambda: w.run(q_nope, q_pe, ckv, kpe, out=out), out


def flashmla_tensors(c, dev):
    """FlashMLA's call tensors for case c: q (B, qo_len, H, 576), the cache as (pages, page, 1,
    576), a block table made from the case's page list, cache_seqlens, out (B, qo_len, H, 512)."""
    B, qo, H = c["B"], c["qo_len"], c["H"]
    indptr = c["kv_indptr"].tolist()
    pages = c["kv_indices"].cpu()
    table = torch.zeros(B, max(1, max(b - a for a, b in zip(indptr, indptr[1:]))), dtype=torch.int32)
    for b in range(B):
        table[b, :indptr[b + 1] - indptr[b]] = pages[indptr[b]:indptr[b + 1]]
    out = torch.empty(B, qo, H, 512, dtype=c["q"].dtype, device=dev)
    return c["q"].view(B, qo, H, 576), c["cache"].unsqueeze(2), table.to(dev), c["lens"].to(dev), out


def runner_flashmla(c, ws):
    """FlashMLA's dense decode kernel (SM90) on the case's tensors (flashmla_tensors). FlashMLA
    takes page 64 and one query length for every request only; it makes its schedule on the
    first call and reuses it (as a serving engine does within a decode step)."""
    from harness import flashmla_ops

    ops = flashmla_ops()
    if c["page_size"] != 64:
        raise ValueError("FlashMLA takes page_size 64 only")
    B, qo, H = c["B"], c["qo_len"], c["H"]
    q, cache, table, seqlens, out = flashmla_tensors(c, ws.device)
    # FlashMLA's own view of the output: (B, kv heads = 1, qo_len x H rows, 512), token-major
    # rows: the same bytes as (B, qo_len, H, 512)
    out_rows = out.view(B, 1, qo * H, 512)
    sched = [None, None]  # (tile scheduler metadata, num_splits), made by the first call

    def run():
        _, _, sched[0], sched[1] = ops.dense_decode_fwd(q, cache, 512, seqlens, table, SM_SCALE,
                                                        qo > 1, sched[0], sched[1], out_rows)

    return run, out.view(B * qo, H, 512)


def runner_ours_flashmla_api(c, ws):
    """Our flash_mla_with_kvcache (FlashMLA's dense decode call: a plan written on the GPU from
    device lengths, then the planned family) on the tensors runner_flashmla gives FlashMLA,
    with one scheduling-metadata object, planned by the first call and reused (a decode step)."""
    from mla_wrapper import flash_mla_with_kvcache, get_mla_metadata

    B, qo, H = c["B"], c["qo_len"], c["H"]
    q, cache, table, seqlens, out = flashmla_tensors(c, ws.device)
    sched, _ = get_mla_metadata()

    def run():
        flash_mla_with_kvcache(q, cache, table, seqlens, 512, sched, None, SM_SCALE, qo > 1,
                               out=out)

    return run, out.view(B * qo, H, 512)


def runner_ours_cutlass_api(c, ws, num_kv_splits=-1):
    """Our cutlass_mla_decode (sgl-kernel's call) on a non-SM100 GPU: routed to the planned
    family (sm90 on Hopper) with its plan written on the GPU on every call (no step object);
    num_kv_splits <= 0: the library's choice. qo_len 1 only (the call has no query length)."""
    from mla_wrapper import cutlass_mla_decode, cutlass_mla_get_workspace_size

    if c["qo_len"] != 1:
        raise ValueError("cutlass_mla_decode takes one query token a request")
    B, H = c["B"], c["H"]
    q, cache, table, seqlens, _ = flashmla_tensors(c, ws.device)
    q_nope, q_pe = c["q_nope"], c["q_pe"]
    size = cutlass_mla_get_workspace_size(table.shape[1] * c["page_size"], B, 0, num_kv_splits)
    work = torch.empty(size, dtype=torch.uint8, device=ws.device)
    out = torch.empty(B, H, 512, dtype=q.dtype, device=ws.device)
    calls = [0]

    def run():
        # (the call returns a new tensor: the first call, the benchmark's check, copies it out)
        res = cutlass_mla_decode(q_nope, q_pe, c["cache"], seqlens, table, work, SM_SCALE,
                                 num_kv_splits)
        if calls[0] == 0:
            out.copy_(res)
        calls[0] += 1

    return run, out


RUNNERS = {
    "sm80": lambda c, ws: runner_ours("sm80", c, ws),
    "sm90": lambda c, ws: runner_ours("sm90", c, ws),
    "sm90_fp8": lambda c, ws: runner_ours("sm90", c, ws, fp8=True),
    "fi_fa2": lambda c, ws: runner_flashinfer("fa2", c, ws),
    "fi_fa3": lambda c, ws: runner_flashinfer("fa3", c, ws),
    "flashmla": runner_flashmla,
    "sm90_fmla": runner_ours_flashmla_api,
    "sm90_cutlass": runner_ours_cutlass_api,
    "sm90_cutlass1": lambda c, ws: runner_ours_cutlass_api(c, ws, 1),
}
PEERS = ("fi_fa2", "fi_fa3", "flashmla")
# Runners over an e4m3 copy of the cache (ours): checked against the reference on the
# fp8-rounded cache, their bytes counted at one a cache element, left out of the 16-bit
# ours/best-peer ratio (shown after it).
FP8_KV = ("sm90_fp8",)
CELL = 34  # a backend's column in the printed table


def table_cell(rec: dict | None, flops_bound: bool) -> str:
    """One backend's cell of the printed table, right-aligned to CELL characters, never cut:
    the time a call, its rate (TFLOP/s where the row tile is full of heads, else GB/s), for the
    latency rows the CUDA-graph replay in us (g<replay>[/<replay after a flush>]), and the
    relative error against the reference; "fail" where the backend could not run the case."""
    if not rec:
        return f"{'fail':>{CELL}}"
    perf = f"{rec['tflops']:.0f}TF" if flops_bound else f"{rec['gbs']:.0f}GB/s"
    lat = f" g{rec['graph_replay_us']:.0f}" if rec.get("graph_replay_us") else ""
    if rec.get("graph_replay_flushed_us"):
        lat += f"/{rec['graph_replay_flushed_us']:.0f}"
    return f"{rec['us']:7.1f}us {perf:>8}{lat} err{rec['rel_err']:.0e}".rjust(CELL)


def reference_out(c, fp8=False):
    """The reference output of case c (float32 math): on its 16-bit cache, or with fp8=True on
    the cache rounded to e4m3 (as sm90_fp8 reads it, scales 1.0)."""
    if fp8:
        cache = fp8_cache(c)
        ckv, kpe = cache[..., :512], cache[..., 512:]
    else:
        ckv, kpe = c["ckv"], c["kpe"]
    out, _ = mla_attention(c["q_nope"], c["q_pe"], ckv, kpe, c["qo_indptr"],
                           c["kv_indptr"], c["kv_indices"], c["lens"], c["page_size"],
                           c["qo_len"] > 1, SM_SCALE)
    return out


def ratio_cell(row: dict, names: list[str]) -> str:
    """The last column: best peer time / best 16-bit ours time, and where an fp8-cache runner
    ran, best peer time / its time ("fp8 <x>x")."""
    peers = [row[n]["ms"] for n in names if n in PEERS and row.get(n)]
    ours = [row[n]["ms"] for n in names if n not in PEERS and n not in FP8_KV and row.get(n)]
    fp8 = [row[n]["ms"] for n in names if n in FP8_KV and row.get(n)]
    cell = f"{min(peers) / min(ours):.2f}x" if ours and peers else "-"
    if fp8 and peers:
        cell += f" fp8 {min(peers) / min(fp8):.2f}x"
    return cell


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a 10-case subset")
    ap.add_argument("--backends", default="sm80,sm90,fi_fa2,fi_fa3",
                    help=f"comma list of {','.join(RUNNERS)}; sm90_fp8: our sm90 kernel over an "
                    "e4m3 copy of the cache (scales 1.0), its err against the reference on that "
                    "fp8-rounded cache")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--budget-s", type=float, default=420.0, help="stop starting new cases after this")
    ap.add_argument("--warmup-ms", type=int, default=25,
                    help="do_bench's warm-up before each backend's timed calls (25: its default, "
                    "the method's); at the power cap a backend timed right after the GPU idled "
                    "(the row's setup) runs at a higher clock for ~100 ms: session 71 run 5, "
                    "2-5%% on the compute rows for the row's first backend")
    ap.add_argument("--heat-s", type=float, default=5.0,
                    help="run matmuls this long before the ceilings and the first case "
                    "(harness.heat: the matmul ceiling and the first rows then meet a chip at "
                    "its sustained state; 0: none, as before session 71)")
    ap.add_argument("--cases", default="", help="comma list of case kinds to run (e.g. latency,middle; "
                    "sweep: SWEEP_GRID, off the grid)")
    ap.add_argument("--cost", default="", help="planner cost model override, e.g. min_chunk=128,fixed=32")
    ap.add_argument("--tag", default="", help="label stored with each result line")
    ap.add_argument("--flush", choices=("dirty", "clean"), default="dirty",
                    help="L2 flush between timed calls: do_bench's (dirty lines left in L2, the "
                    "default and BENCHMARKS.md's method) or harness.clean_flush (clean lines)")
    ap.add_argument("--data", choices=DATA, default="randn",
                    help="value distribution of the query and cache (DATA; randn is the method's)")
    ap.add_argument("--dtype", choices=tuple(DTYPES), default="bf16",
                    help="element type of the query, the 16-bit cache and the output (the "
                    "method's is bf16; sm90_fp8 reads an e4m3 copy of the cache either way)")
    args = ap.parse_args()
    if args.cost:
        from mla_wrapper import planner

        planner.DEFAULT_COST = planner.CostModel(
            **{k: int(v) for k, v in (kv.split("=") for kv in args.cost.split(","))})
        from mla_wrapper.backends import sm90  # its own cost model (planner_cost) follows too

        sm90.planner_cost = lambda: planner.DEFAULT_COST
    dev = torch.device("cuda")
    ctx = device_context()
    heat(args.heat_s)
    ctx.update(ceilings(args.flush))
    ctx["heat_s"] = args.heat_s
    if args.warmup_ms != 25:
        ctx["warmup_ms"] = args.warmup_ms
    print(f"# {ctx['device']} {ctx['date']} copy {ctx['copy_gbs']} GB/s, "
          f"matmul {ctx['matmul_bf16_tflops']} TFLOP/s", flush=True)
    writer = ResultWriter("decode", ctx)
    ws = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    names = [b for b in args.backends.split(",") if b]
    grid = QUICK_GRID if args.quick else FULL_GRID
    if args.cases:
        grid = [g for g in grid + SWEEP_GRID if g[0] in args.cases.split(",")]
    t_start = time.time()
    if any(n in FP8_KV for n in names):
        print(f"# {','.join(n for n in names if n in FP8_KV)}: e4m3 cache (1 byte an element in "
              "GB/s), err against the reference on the fp8-rounded cache", flush=True)
    print(f"{'case':8} {'H':>4} {'B':>4} {'L':>6} {'ps':>3} {'q':>2} | " +
          " | ".join(f"{n:>{CELL}}" for n in names) + " | ours/best-peer", flush=True)
    for i, (kind, H, B, L, ps, qo) in enumerate(grid):
        if time.time() - t_start > args.budget_s:
            print(f"# budget reached, skipped {len(grid) - i} cases")
            break
        c = make_case(H, B, L, ps, qo, dev, seed=1000 + i, data=args.data,
                      dtype=DTYPES[args.dtype])
        flops, nbytes = flops_bytes(c)
        ref = None if args.no_check else reference_out(c)
        ref_fp8 = None      # made for the first fp8-cache runner (reference_out(c, fp8=True))
        row = {}
        for n in names:
            try:
                fn, out = RUNNERS[n](c, ws)
                out.fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                err = rel_error(out, ref) if ref is not None else float("nan")
                err_bf16 = None
                if n in FP8_KV and ref is not None:
                    if ref_fp8 is None:
                        ref_fp8 = reference_out(c, fp8=True)
                    err, err_bf16 = rel_error(out, ref_fp8), err
                ms = bench_ms(fn, flush=args.flush, warmup_ms=args.warmup_ms)
                graph_us = bench_graph_us(fn) if kind == "latency" else None
                graph_cold_us = (bench_graph_us(fn, flush="clean")
                                 if kind == "latency" and args.flush == "clean" else None)
            except Exception as e:  # noqa: BLE001 (a peer may not support a case)
                row[n] = None
                print(f"# {n} failed on {kind} H={H} B={B} L={L}: {type(e).__name__}: {e}",
                      file=sys.stderr)
                if os.environ.get("BENCH_TRACE"):
                    traceback.print_exc()
                continue
            run_bytes = flops_bytes(c, kv_bytes=1)[1] if n in FP8_KV else nbytes
            rec = {"case": kind, "heads": H, "batch": B, "kv_len": L, "page_size": ps,
                   "qo_len": qo, "backend": n, "ms": ms, "us": ms * 1e3,
                   "tflops": flops / (ms * 1e-3) / 1e12, "gbs": run_bytes / (ms * 1e-3) / 1e9,
                   "rel_err": err, "graph_replay_us": graph_us, "cost": args.cost, "tag": args.tag,
                   "flush": args.flush, "graph_replay_flushed_us": graph_cold_us,
                   "data": args.data, "dtype": args.dtype}
            if n in FP8_KV:
                rec.update(kv_dtype="fp8_e4m3", rel_err_bf16=err_bf16)
            writer.write(rec)
            row[n] = rec
        ratio = ratio_cell(row, names)
        cells = [table_cell(row.get(n), flops_bound=H * qo >= 64) for n in names]
        print(f"{kind:8} {H:4d} {B:4d} {L:6d} {ps:3d} {qo:2d} | " + " | ".join(cells) + f" | {ratio}",
              flush=True)
        del c, ref, ref_fp8
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
