"""Sparse (top-k) MLA benchmark (issue 8): decode through BatchSparseMLAWrapper and prefill
through flash_mla_sparse_fwd, each next to our dense wrapper (the family auto picks: sm90 on
Hopper) at the same FLOPs (B requests of topk KV tokens each), in one process on one device.

    python benchmarks/bench_sparse.py [--quick] [--fp8] [--ds-mla] [--variant "-DKNOB=1;-DKNOB=2"]

--fp8: decode rows also through the same cache in e4m3 (kv_data_type=torch.float8_e4m3fn,
scales 1/16 and 1/4; sm90 only), its error against the reference on the dequantized cache;
recorded as fp8_ms / fp8_err, printed as the bf16 cache's time over the fp8 one (with
--fp8-variant, ';'-separated nvcc flag sets or "lib:path/{dt}.so" builds, also each variant
build of the e4m3 library: fp8_variant_ms). Adds H=16 decode rows.

--ds-mla: decode rows also through the same cache as FlashMLA's fp8 rows (kv_data_type
"fp8_ds_mla", reference.ds_mla_pack; sm90 only), its error against the reference on the values
the rows hold, and FlashMLA's own sparse fp8 decode kernel (sparse_decode_fwd, 64 / 128 heads)
on the same rows when its library is there (harness.flashmla_ops); recorded as ds_ms / ds_err,
flashmla_ds_ms / flashmla_ds_err, printed as FlashMLA's time over ours (FlashMLA's kernel takes
64 or 128 heads: fewer are padded to 64, as vLLM does; the copy is not timed). Adds H=16 decode
rows. --ds-variant: ';'-separated nvcc flag sets for the fp8_ds_mla library alone (ds_variant_ms);
--ds-trace: trace builds of it (per-tile traces of its rows of >= 32 tokens); --trace: the same for
the 16-bit sparse library.

--variant: also time the sparse kernel built with each ';'-separated set of extra nvcc flags
(harness.use_variant) on the same tensors; printed and recorded as variant_ms.

FLOPs = 2 * s_q * h_q * valid_topk * (576 + 512). Writes JSON lines to
benchmarks/results/sparse.jsonl ($MLA_WRAPPER_RESULTS_DIR overrides) with the device context
and ceilings; prints one row per case with sparse / dense TFLOP/s and their ratio. B=1 rows are
also timed as CUDA-graph replays (latency).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (ResultWriter, bench_graph_us, bench_ms, ceilings,  # noqa: E402
                     device_context, use_module, use_variant)

from mla_wrapper import backends, sparse_specs  # noqa: E402
from mla_wrapper.sparse import _fwd_wrapper  # noqa: E402
from mla_wrapper import (BatchMLAPagedAttentionWrapper, BatchSparseMLAWrapper,  # noqa: E402
                         flash_mla_sparse_fwd)
from mla_wrapper.reference import (ds_mla_pack, ds_mla_unpack, rel_error,  # noqa: E402
                                   sparse_mla_attention)

SM_SCALE = 1.0 / math.sqrt(192)
TOPK = 2048
# (mode, heads, tokens (decode: batch, prefill: s_q), cache tokens)
FULL = [("decode", h, b, c) for h in (64, 128) for b in (1, 32, 128) for c in (65536, 131072)] \
    + [("prefill", 128, 4096, 131072), ("prefill", 64, 4096, 131072)]
QUICK = [("decode", 128, 1, 65536), ("decode", 128, 128, 131072), ("decode", 64, 32, 65536),
         ("prefill", 128, 4096, 131072)]
FP8_ROWS = [("decode", 16, b, 65536) for b in (1, 32, 128)]
FP8_SCALES = (1.0 / 16, 1.0 / 4)   # ckv, kpe


def flops(tokens, heads, valid):
    return 2.0 * tokens * heads * valid * (576 + 512)


def time_ms(fn, graph):
    """fn's time in ms: replayed from a CUDA graph (the B=1 rows) or launched eagerly."""
    return bench_graph_us(fn) / 1000.0 if graph else bench_ms(fn)


def flag_sets(text):
    """A --*variant option's ';'-separated nvcc flag sets (or lib:path/{dt}.so builds)."""
    return [v.strip() for v in text.split(";") if v.strip()]


def trace_builds(owner, fn, traces, what, kv_dtype=None):
    """Each trace build (-DMLAW_SM90_TRACE=1 flags or lib:path/{dt}.so) of owner's library (a
    wrapper; kv_dtype: its cache's, None for 16-bit) run once on fn and its per-tile trace printed
    (check_sm90_dev.print_trace)."""
    from check_sm90_dev import print_trace

    def trace(flags):
        fn()
        torch.cuda.synchronize()
        print_trace(owner, f"{flags} {what}")

    for flags in traces:
        over_variants(owner._impl, [flags], lambda: trace(flags), kv_dtype)


def over_variants(impl, variants, measure, kv_dtype=None):
    """{flags: measure()} with impl (a sparse wrapper's _impl) running each variant build of its
    bf16 sparse library (kv_dtype: the cache's, None for 16-bit), the default put back after
    each."""
    spec = sparse_specs.spec("bf16", impl.arch, device=impl.wrapper.device, kernel=impl.kernel,
                             kv_dtype=kv_dtype)
    results = {}
    for flags in variants:
        default = use_variant(impl, spec, sparse_specs.RUN, "bf16", flags)
        results[flags] = measure()
        use_module(impl, default, sparse_specs.RUN)
    return results


def dense_ms(ws, heads, batch, graph):
    """Our dense wrapper on B requests of TOPK tokens each (page 64): the same FLOPs."""
    page = 64
    pages = TOPK // page
    cache = torch.randn(batch * pages, page, 576, dtype=torch.bfloat16, device="cuda") * 0.5
    q = torch.randn(batch, heads, 576, dtype=torch.bfloat16, device="cuda")
    w = BatchMLAPagedAttentionWrapper(ws)
    qo = torch.arange(batch + 1, dtype=torch.int32)
    kv_indptr = qo * pages
    kv_indices = torch.randperm(batch * pages, dtype=torch.int32).cuda()
    w.plan(qo, kv_indptr, kv_indices, torch.full((batch,), TOPK, dtype=torch.int32), heads, 512,
           64, page, False, SM_SCALE, torch.bfloat16, torch.bfloat16)
    out = torch.empty(batch, heads, 512, dtype=torch.bfloat16, device="cuda")
    fn = lambda: w.run(q[..., :512], q[..., 512:], cache[..., :512], cache[..., 512:], out=out)  # noqa: E731
    return time_ms(fn, graph)


def fp8_row(ws, q, kv, idx, out, heads, tokens, graph, variants=()):
    """The decode row's tensors through an e4m3 copy of the cache: time and error (and the
    time of each --variant build of the e4m3 library)."""
    cs, ps = FP8_SCALES
    kv8 = torch.cat([(kv[..., :512].float() / cs).to(torch.float8_e4m3fn),
                     (kv[..., 512:].float() / ps).to(torch.float8_e4m3fn)], -1)
    w = BatchSparseMLAWrapper(ws)
    w.plan(tokens, TOPK, heads, SM_SCALE, torch.bfloat16, kv_data_type=torch.float8_e4m3fn)
    fn = lambda: w.run(q[..., :512], q[..., 512:], kv8[..., :512], kv8[..., 512:], idx,  # noqa: E731
                       out=out, ckv_scale=cs, kpe_scale=ps)
    check = min(tokens, 64)
    ref = sparse_mla_attention(q[:check, :, :512], q[:check, :, 512:], kv8[:, 0, :512],
                               kv8[:, 0, 512:], idx[:check], SM_SCALE, ckv_scale=cs,
                               kpe_scale=ps)[0]
    out.fill_(float("nan"))
    fn()
    err = rel_error(out[:check], ref)
    time = lambda: round(time_ms(fn, graph), 4)  # noqa: E731
    rec = dict(fp8_ms=time(), fp8_err=err)
    if variants:
        rec["fp8_variant_ms"] = over_variants(w._impl, variants, time, torch.float8_e4m3fn)
    return rec


def flashmla_op(name, heads):
    """FlashMLA's op `name` (harness.flashmla_ops), or None without its library, without that
    op, or past its 128 heads."""
    try:
        from harness import flashmla_ops
        ops = flashmla_ops()
    except (FileNotFoundError, OSError, RuntimeError):
        return None
    return getattr(ops, name, None) if heads <= 128 else None


def flashmla_ds(rows, q, idx, heads, tokens):
    """FlashMLA's sparse fp8 decode (sparse_decode_fwd) on the rows [slots, 656] as its
    [blocks, 64, 1, 656] cache: (run, out), or None without its library. Its Hopper kernel takes
    64 or 128 heads: fewer go in padded to 64 with zero rows, as vLLM does (out: the real heads)."""
    op = flashmla_op("sparse_decode_fwd", heads)
    if op is None:
        return None
    padded = 64 if heads <= 64 else 128
    cache = rows.view(-1, 64, 1, sparse_specs.DS_MLA_ROW_BYTES)
    q4 = torch.zeros(tokens, 1, padded, 576, dtype=q.dtype, device=q.device)
    q4[:, 0, :heads] = q
    idx3 = idx.view(tokens, 1, -1)
    out = torch.empty(tokens, 1, padded, 512, dtype=q.dtype, device=q.device)
    sched = [None, None]  # (tile scheduler metadata, num_splits), made by the first call

    def run():
        _, _, sched[0], sched[1] = op(q4, cache, idx3, None, None, sched[0], sched[1], None,
                                      None, None, 512, SM_SCALE, out)

    return run, out[:, 0, :heads]


def flashmla_prefill(q, kv, idx, heads):
    """FlashMLA's sparse prefill (sparse_prefill_fwd, the kernel flash_mla_sparse_fwd calls) on
    the same q [s_q, h, 576], kv [s_kv, 1, 576] and indices [s_q, 1, topk]: (run, out), or None
    without its library. Heads other than 64 / 128 go in padded to 128 with zero rows, as vLLM
    pads them (out: the real heads)."""
    op = flashmla_op("sparse_prefill_fwd", heads)
    if op is None:
        return None
    padded = heads if heads in (64, 128) else 128
    qp = q
    if padded != heads:
        qp = torch.zeros(q.shape[0], padded, 576, dtype=q.dtype, device=q.device)
        qp[:, :heads] = q
    # (vLLM 0.24's build: (q, kv, indices, sm_scale, d_v, attn_sink, topk_length[, out]))
    nargs = len(op.default._schema.arguments)
    extra = (None,) * (nargs - 5)
    res = [None]

    def run():
        res[0] = op(qp, kv, idx, SM_SCALE, 512, *extra)[0]
        return res[0]

    run()
    return run, lambda: res[0][:, :heads]


def ds_row(ws, q, kv, idx, out, heads, tokens, graph, variants=(), traces=()):
    """The decode row's tensors through FlashMLA's fp8 rows: ours and FlashMLA's kernel, time
    and error against the reference on the values the rows hold. traces: trace builds
    (-DMLAW_SM90_TRACE=1) of the fp8_ds_mla library, each run once and its per-tile trace
    printed (check_sm90_dev.print_trace), on rows of >= 32 tokens."""
    rows = ds_mla_pack(kv[:, 0, :512].float(), kv[:, 0, 512:])
    lat, rope = ds_mla_unpack(rows)
    w = BatchSparseMLAWrapper(ws)
    w.plan(tokens, TOPK, heads, SM_SCALE, torch.bfloat16, kv_data_type="fp8_ds_mla")
    fn = lambda: w.run(q[..., :512], q[..., 512:], rows, None, idx, out=out)  # noqa: E731
    check = min(tokens, 64)
    ref = sparse_mla_attention(q[:check, :, :512], q[:check, :, 512:], lat, rope, idx[:check],
                               SM_SCALE)[0]
    time = lambda f: round(time_ms(f, graph), 4)  # noqa: E731

    def error(f, o):
        o.fill_(float("nan"))
        f()
        return rel_error(o[:check], ref)

    rec = dict(ds_err=error(fn, out))
    rec["ds_ms"] = time(fn)
    if variants:
        res = over_variants(w._impl, variants, lambda: (error(fn, out), time(fn)), "fp8_ds_mla")
        rec["ds_variant_err"] = {flags: e for flags, (e, _) in res.items()}
        rec["ds_variant_ms"] = {flags: t for flags, (_, t) in res.items()}
    if traces and tokens >= 32:
        trace_builds(w, fn, traces, f"H={heads} tokens={tokens}", "fp8_ds_mla")
    peer = flashmla_ds(rows, q, idx, heads, tokens)
    if peer is not None:
        pfn, pout = peer
        rec["flashmla_ds_err"] = error(pfn, pout)
        rec["flashmla_ds_ms"] = time(pfn)
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--variant", default="", help="';'-separated sets of extra nvcc flags")
    ap.add_argument("--fp8", action="store_true", help="decode rows over an e4m3 cache too")
    ap.add_argument("--ds-mla", action="store_true",
                    help="decode rows over FlashMLA's fp8 rows too (ours and FlashMLA's)")
    ap.add_argument("--fp8-variant", default="",
                    help="';'-separated sets of extra nvcc flags for the e4m3 library")
    ap.add_argument("--ds-variant", default="",
                    help="';'-separated sets of extra nvcc flags for the fp8_ds_mla library")
    ap.add_argument("--trace", default="",
                    help="';'-separated trace builds of the 16-bit sparse library (flags with "
                         "-DMLAW_SM90_TRACE=1 or lib:path/{dt}.so): per-tile traces of its rows")
    ap.add_argument("--ds-trace", default="",
                    help="';'-separated trace builds of the fp8_ds_mla library (flags with "
                         "-DMLAW_SM90_TRACE=1 or lib:path/{dt}.so): per-tile traces of its rows")
    args = ap.parse_args()
    variants = flag_sets(args.variant)
    ctx = dict(device_context(), **ceilings())
    writer = ResultWriter("sparse", ctx)
    ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print(f"{ctx['device']}  copy {ctx['copy_gbs']} GB/s  bf16 matmul {ctx['matmul_bf16_tflops']} TFLOP/s")
    print(f"{'mode':8} {'H':>4} {'tokens':>6} {'cache':>7} {'sparse ms':>10} {'TFLOP/s':>8} "
          f"{'dense ms':>9} {'TFLOP/s':>8} {'ratio':>6} {'err':>8}")
    # The planned family both wrappers run here (its module name: sm90 or sm80).
    family = backends.routed_family(torch.cuda.get_device_capability()).__name__.rsplit(".", 1)[-1]
    rows = (QUICK if args.quick else FULL) + (FP8_ROWS if args.fp8 or args.ds_mla else [])
    for mode, heads, tokens, cache_tokens in rows:
        g = torch.Generator().manual_seed(tokens + heads)
        kv = (torch.randn(cache_tokens, 1, 576, generator=g) * 0.5).to(torch.bfloat16).cuda()
        q = torch.randn(tokens, heads, 576, generator=g).to(torch.bfloat16).cuda()
        idx = torch.randint(0, cache_tokens, (tokens, 1, TOPK), generator=g,
                            dtype=torch.int32).cuda()   # duplicates count per occurrence
        graph = mode == "decode" and tokens == 1
        if mode == "decode":
            w = BatchSparseMLAWrapper(ws)
            w.plan(tokens, TOPK, heads, SM_SCALE, torch.bfloat16)
            out = torch.empty(tokens, heads, 512, dtype=torch.bfloat16, device="cuda")
            fn = lambda: w.run(q[..., :512], q[..., 512:], kv[..., :512], kv[..., 512:], idx,  # noqa: E731
                               out=out)
        else:
            fn = lambda: flash_mla_sparse_fwd(q, kv, idx, SM_SCALE)  # noqa: E731
        check = min(tokens, 64)
        ref = sparse_mla_attention(q[:check, :, :512], q[:check, :, 512:], kv[:, 0, :512],
                                   kv[:, 0, 512:], idx[:check], SM_SCALE)[0]

        def error():  # of one NaN-poisoned run against the reference's first tokens
            if mode == "decode":
                out.fill_(float("nan"))
                fn()
                return rel_error(out[:check], ref)
            return rel_error(fn()[0][:check], ref)

        err = error()
        ms = time_ms(fn, graph)
        prefill_peer = {}
        pf = flashmla_prefill(q, kv, idx, heads) if mode == "prefill" else None
        if pf is not None:  # FlashMLA's sparse prefill on the same tensors (run once already)
            pfn, pout = pf
            prefill_peer = dict(flashmla_ms=round(time_ms(pfn, False), 4),
                                flashmla_err=rel_error(pout()[:check], ref))
        # the same tensors through each development build of the kernel
        owner = w if mode == "decode" else _fwd_wrapper(q.device)  # (the wrapper fn runs)
        res = over_variants(owner._impl, variants, lambda: (error(), round(time_ms(fn, graph), 4)))
        if args.trace and tokens >= 32:
            trace_builds(owner, fn, flag_sets(args.trace), f"{mode} H={heads} tokens={tokens}")
        variant_err = {flags: e for flags, (e, _) in res.items()}
        variant_ms = {flags: t for flags, (_, t) in res.items()}
        fp8 = {}
        if args.fp8 and mode == "decode":
            fp8 = fp8_row(ws, q, kv, idx, out, heads, tokens, graph, flag_sets(args.fp8_variant))
        if args.ds_mla and mode == "decode":
            fp8.update(ds_row(ws, q, kv, idx, out, heads, tokens, graph,
                              flag_sets(args.ds_variant), flag_sets(args.ds_trace)))
        dms = dense_ms(ws, heads, tokens, graph)
        f = flops(tokens, heads, TOPK)
        rec = dict(mode=mode, heads=heads, tokens=tokens, cache_tokens=cache_tokens, topk=TOPK,
                   sparse_ms=round(ms, 4), sparse_tflops=round(f / ms / 1e9, 1),
                   dense_ms=round(dms, 4), dense_tflops=round(f / dms / 1e9, 1),
                   ratio=round(dms / ms, 3), graph_replay=graph, rel_error=err,
                   family=family, **fp8, **prefill_peer, **({"variant_ms": variant_ms, "variant_err": variant_err} if variants else {}))
        writer.write(rec)
        print(f"{mode:8} {heads:4} {tokens:6} {cache_tokens:7} {ms:10.4f} {rec['sparse_tflops']:8.1f} "
              f"{dms:9.4f} {rec['dense_tflops']:8.1f} {rec['ratio']:6.2f} {err:8.1e}")
        if prefill_peer:
            pms = prefill_peer["flashmla_ms"]
            print(f"    FlashMLA sparse prefill: {pms:.4f} ms ({pms / ms:.2f}x ours), "
                  f"{f / pms / 1e9:.1f} TFLOP/s, err {prefill_peer['flashmla_err']:.1e}")
        if "ds_ms" in fp8:
            peer = (f", FlashMLA {fp8['flashmla_ds_ms']:.4f} ms ({fp8['flashmla_ds_ms'] / fp8['ds_ms']:.2f}x"
                    f" ours), err {fp8['flashmla_ds_err']:.1e}" if "flashmla_ds_ms" in fp8 else "")
            print(f"    fp8_ds_mla rows: {fp8['ds_ms']:.4f} ms, {ms / fp8['ds_ms']:.2f}x the bf16 "
                  f"cache's speed, err {fp8['ds_err']:.1e}{peer}")
            for flags, vms in fp8.get("ds_variant_ms", {}).items():
                print(f"    ds variant {flags}: {vms:.4f} ms, {vms / fp8['ds_ms']:.3f}x the "
                      f"default build's time, err {fp8['ds_variant_err'][flags]:.1e}")
        if "fp8_ms" in fp8:
            print(f"    fp8 cache: {fp8['fp8_ms']:.4f} ms, {ms / fp8['fp8_ms']:.2f}x the bf16 "
                  f"cache's speed, err {fp8['fp8_err']:.1e}")
            for flags, vms in fp8.get("fp8_variant_ms", {}).items():
                print(f"    fp8 variant {flags}: {vms:.4f} ms, {vms / fp8['fp8_ms']:.3f}x the "
                      f"default fp8 build's time")
        for flags, vms in variant_ms.items():
            print(f"    variant {flags}: {vms:.4f} ms, {f / vms / 1e9:.1f} TFLOP/s, "
                  f"{ms / vms:.3f}x the default build, {dms / vms:.2f}x dense, "
                  f"err {variant_err[flags]:.1e}")
        del kv, q, idx


if __name__ == "__main__":
    main()
