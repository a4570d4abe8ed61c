"""Quick device check while developing a planned family: one wrapper per case against the
reference (NaN-poisoned outputs, fresh random data), then a short timing next to sm80.

    python benchmarks/check_sm90_dev.py [--backend sm90] [--small]
    python benchmarks/check_sm90_dev.py --backend sm90 --profile H B L   # one case, 3 runs (ncu;
      with --variant, of that build; --backend fi_fa3 / fi_fa2 / flashmla: the peers' kernels)
    python benchmarks/check_sm90_dev.py --trace H B L --variant=-DMLAW_SM90_TRACE=1  # per-tile
      phase times (clock64) of the first CTAs' warpgroups (sm90/dev.cuh, MLAW_SM90_TRACE)
    python benchmarks/check_sm90_dev.py --timeline H B L [--variant ...] [--fp8]  # CUDA-graph
      replays of sm90 (--fp8: also over an e4m3 copy of the cache) and FlashInfer fa3 under
      torch.profiler: each kernel's mean time and the replay's span
    python benchmarks/check_sm90_dev.py --backend sm90 --variant "-DKNOB=1"  # checks + A/B timing
      of the family's library built with extra nvcc flags against the default build
      (--variant "lib:path/{dt}.so": a library built elsewhere, e.g. another schedule;
      --variant lib:self: a copy of the default build, the A/A control of the slots' bias;
      --variant "cost:split_per_row=1,...": the same kernel planned with another cost model,
      with --ab-cases cuts: ragged and cut batches; --variant "planner:path/lib.so": the same
      kernel planned by another build of the planner library; --variant "env:NAME=VALUE,...":
      the same kernels planned with those environment variables set, e.g.
      MLA_WRAPPER_SM90_TALL=0 / all (the e4m3 tall instance's 32-row plans: none / at every
      batch size); --fp8: over
      an e4m3 copy of the cache; --ab-dtype fp16: the A/B with fp16 queries)
    python benchmarks/check_sm90_dev.py --power H B L [--variant ...]  # each kernel (sm90, the
      variant, fi_fa3, flashmla) back to back for a few seconds while nvidia-smi samples the SM clock, power
      and throttle reasons: time per call next to the clock it ran at (the second round's rows
      go to power.jsonl, tagged with --tag)
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # (harness, bench_decode)
from bench_decode import DATA  # noqa: E402
from test_wrapper import DTYPES, make_batch  # noqa: E402

from mla_wrapper import BatchMLAPagedAttentionWrapper  # noqa: E402
from mla_wrapper.reference import mla_attention, rel_error  # noqa: E402

SM_SCALE = 1.0 / math.sqrt(192)


def use_variant(w, flags):
    """Point a planned dense wrapper's kernel at a development build (harness.use_variant); a
    planner variant ('cost:...') keeps the kernel (ab_timing plans with its cost model)."""
    if not flags or flags.startswith(("cost:", "planner:", "env:")):
        return
    from harness import use_variant as use_build
    from mla_wrapper.jit.env import device_arch

    dt = "bf16" if w._plan_config[5] == torch.bfloat16 else "fp16"
    impl = w._impl
    kv = w._plan_config[6] if w._plan_config[6] == torch.float8_e4m3fn else None
    spec = impl.family.spec(str(w._plan_config[5]).split(".")[-1], device_arch(w.device),
                            device=w.device, kv_dtype=kv)
    use_build(impl, spec, impl.family.RUN_EXPORT, dt, flags)


def run_cache(b, fp8, gain=1.0, ckv_scale=1.0, kpe_scale=1.0):
    """The cache a run reads and run()'s scale keywords: batch b's 16-bit cache (no keywords),
    or with fp8 an e4m3 copy of (its values x gain) as (ckv, kpe) views of one [P, page, 576]
    buffer, with the scales its values mean."""
    if not fp8:
        return b["ckv"], b["kpe"], {}
    cache8 = (torch.cat([b["ckv"], b["kpe"]], -1) * gain).to(torch.float8_e4m3fn)
    return cache8[..., :512], cache8[..., 512:], {"ckv_scale": ckv_scale, "kpe_scale": kpe_scale}


def check(backend, kv_lens, qo_len, heads, page_size, dtype, ws, variant="", fp8=False):
    b = make_batch(kv_lens, qo_len, heads, page_size, dtype)
    causal = (max(qo_len) if isinstance(qo_len, list) else qo_len) > 1
    # an fp8 cache with scales that are not powers of two (the reference dequantizes)
    ckv, kpe, scales = run_cache(b, fp8, gain=2.5, ckv_scale=0.37, kpe_scale=1.9)
    w = BatchMLAPagedAttentionWrapper(ws, backend=backend)
    w.plan(b["qo_indptr"], b["kv_indptr"], b["kv_indices"], b["kv_len"], heads, 512, 64,
           page_size, causal, SM_SCALE, dtype, ckv.dtype)
    use_variant(w, variant)
    out = torch.full(b["q_nope"].shape, float("nan"), dtype=dtype, device="cuda")
    lse = torch.full(b["q_nope"].shape[:2], float("nan"), dtype=torch.float32, device="cuda")
    w.run(b["q_nope"], b["q_pe"], ckv, kpe, out=out, lse=lse, **scales)
    ref_o, ref_lse = mla_attention(b["q_nope"], b["q_pe"], ckv, kpe, b["qo_indptr"],
                                   b["kv_indptr"], b["kv_indices"], b["kv_len"], page_size,
                                   causal, SM_SCALE, **scales)
    err = rel_error(out, ref_o)
    fin = torch.isfinite(ref_lse)
    lerr = (lse[fin] - ref_lse[fin].to(lse.device)).abs().max().item() if fin.any() else 0.0
    nan = bool(torch.isnan(out).any() or torch.isnan(lse).any())
    ok = err < 1e-2 and lerr < 1e-2 and not nan
    print(f"{'ok ' if ok else 'BAD'} H={heads:3d} ps={page_size:3d} qo={qo_len} {str(dtype)[6:]:8} "
          f"{'fp8 cache ' if fp8 else ''}"
          f"lens={kv_lens if len(kv_lens) < 6 else f'{len(kv_lens)} reqs'} err={err:.2e} "
          f"lse_err={lerr:.2e} nan={nan}", flush=True)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="sm90")
    ap.add_argument("--small", action="store_true", help="four small cases (compute-sanitizer)")
    ap.add_argument("--fp8", action="store_true", help="the checks over an fp8 (e4m3) cache "
                    "with scales (sm90); the A/B timing, --trace, --spans and --profile of ours "
                    "over an e4m3 copy of the cache; --timeline and --power: sm90 over that copy "
                    "too")
    ap.add_argument("--variant", default="", help="extra nvcc flags: check that build, then "
                    "time it against the default one")
    ap.add_argument("--profile", nargs=3, type=int, metavar=("H", "B", "L"),
                    help="only run one decode case (--page, default 64) three times, for ncu")
    ap.add_argument("--spans", nargs=3, type=int, metavar=("H", "B", "L"),
                    help="one decode case (--page) with a -DMLAW_SM90_TRACE=1 --variant: print "
                         "when its CTAs start, get their first tile and finish (global timer)")
    ap.add_argument("--trace", nargs=3, type=int, metavar=("H", "B", "L"),
                    help="one decode case (--page) with a -DMLAW_SM90_TRACE=1 --variant: "
                    "print its per-tile phase times")
    ap.add_argument("--flush", choices=("dirty", "clean"), default="dirty",
                    help="A/B timing: L2 flush between calls (harness.bench_ms)")
    ap.add_argument("--ab-dtype", choices=tuple(DTYPES), default="bf16",
                    help="A/B timing: the query's element type")
    ap.add_argument("--warm-code", action="store_true",
                    help="--spans --cold: after the flush, a tiny run of another plan (132 CTAs "
                    "of one tile) puts the kernel's code back in L2 before the traced run")
    ap.add_argument("--cold", action="store_true",
                    help="--trace / --spans: flush L2 before the traced run, as bench_ms does "
                    "(--flush: do_bench's zeroing, or a read flush)")
    ap.add_argument("--timeline", nargs=3, type=int, metavar=("H", "B", "L"),
                    help="kernel times inside CUDA-graph replays, sm90 next to fi_fa3")
    ap.add_argument("--power", nargs=3, type=int, metavar=("H", "B", "L"),
                    help="sustained runs of sm90 (and the variant), fi_fa3 and flashmla under nvidia-smi "
                    "sampling: time per call, SM clock, power, throttle reasons")
    ap.add_argument("--tag", default="", help="tag of the rows --power records (power.jsonl)")
    ap.add_argument("--power-flush", action="store_true",
                    help="--power with do_bench's flush (a 256 MB buffer zeroed before each "
                    "call, untimed): the clock and power of the grid's method; time per call "
                    "the median of per-call events")
    ap.add_argument("--data", choices=DATA, default="randn",
                    help="--power: value distribution of the inputs (bench_decode.DATA)")
    ap.add_argument("--ab-ws", choices=("own", "shared"), default="own",
                    help="A/B timing: each wrapper plans on a float workspace of its own (own), "
                         "or both on one (shared: the partials at the same addresses)")
    ap.add_argument("--preceded", action="store_true",
                    help="A/B timing: a copy kernel writes the query rows right before each run()")
    ap.add_argument("--ab-only", action="store_true",
                    help="skip the checks: only the A/B timing (a variant that is wrong on purpose)")
    ap.add_argument("--ab-cases", choices=sorted(AB_CASES), default="grid",
                    help="the A/B timing's cases (split: B=1 and other split launches)")
    ap.add_argument("--page", type=int, default=64,
                    help="page size of --profile, --trace and the A/B timing")
    args = ap.parse_args()
    ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    if args.timeline:
        timeline(*args.timeline, args.page, args.variant, ws, fp8=args.fp8)
        return
    if args.power:
        power(*args.power, args.page, args.variant, ws, args.tag, data=args.data, fp8=args.fp8,
              flush=args.power_flush)
        return
    if args.profile or args.trace or args.spans:
        h, batch, length = args.profile or args.trace or args.spans
        from bench_decode import PEERS, RUNNERS, make_case
        from harness import clean_flush, dirty_flush

        if args.profile and args.backend in PEERS:  # a peer under ncu
            fn, _ = RUNNERS[args.backend](make_case(h, batch, length, args.page, 1, "cuda", 0), ws)
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            print(f"profiled {args.backend} H={h} B={batch} L={length}")
            return
        def planned(b, kv, buf):  # a wrapper planned for batch b (bf16 decode, cache kv) on
            # the variant
            pw = BatchMLAPagedAttentionWrapper(buf, backend=args.backend)
            pw.plan(b["qo_indptr"], b["kv_indptr"], b["kv_indices"], b["kv_len"], h, 512, 64,
                    args.page, False, SM_SCALE, torch.bfloat16, kv[0].dtype)
            use_variant(pw, args.variant)
            return pw

        b = make_batch([length] * batch, 1, h, args.page, torch.bfloat16)
        kv = run_cache(b, args.fp8)
        w = planned(b, kv, ws)
        if args.warm_code:
            warm_b = make_batch([64] * 132, 1, h, args.page, torch.bfloat16, seed=1)
            warm_kv = run_cache(warm_b, args.fp8)
            warm_w = planned(warm_b, warm_kv, torch.empty_like(ws))
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        for i in range(3):
            if args.cold and i == 2:  # the traced run starts with a cold L2, as bench_ms's do
                if args.flush == "clean":
                    clean_flush()
                else:
                    dirty_flush()
                if args.warm_code:  # another plan's tiny run: the kernel's code back in L2
                    warm_w.run(warm_b["q_nope"], warm_b["q_pe"], *warm_kv[:2], **warm_kv[2])
                    read_spans(w)  # (its spans dropped: the read clears them)
            ev[0].record()
            w.run(b["q_nope"], b["q_pe"], *kv[:2], **kv[2])
            ev[1].record()
        torch.cuda.synchronize()
        if args.spans:
            state = ("" if not args.cold else " cold" if args.flush == "dirty" else
                     " read-flushed")
            print_spans(w, f"{args.backend} {args.variant} H={h} B={batch} L={length} "
                           f"page {args.page}{state}", ev[0].elapsed_time(ev[1]) * 1e3)
        elif args.trace:
            print_trace(w, f"{args.backend} {args.variant} H={h} B={batch} L={length} "
                           f"page {args.page}")
        else:
            print(f"profiled {args.backend} H={h} B={batch} L={length}")
        return
    bad = 0
    cases = [
        ([100], 1, 16, 64, torch.bfloat16), ([64], 1, 128, 64, torch.bfloat16),
        ([1000, 7, 0, 129], 1, 16, 16, torch.bfloat16), ([4096], 1, 128, 1, torch.bfloat16),
        ([300, 65, 1, 64], 2, 16, 64, torch.bfloat16), ([513, 200], 4, 32, 16, torch.float16),
        ([2000] * 8, 1, 64, 128, torch.float16), ([0, 0], 1, 16, 64, torch.bfloat16),
        ([17, 4000, 333], 3, 128, 1, torch.bfloat16), ([8192], 1, 128, 64, torch.bfloat16),
        ([5000] * 40, 1, 128, 64, torch.bfloat16), ([700] * 200, 1, 16, 16, torch.bfloat16),
        ([3000, 64, 95], 1, 128, 32, torch.bfloat16),
        ([256] * 66, 1, 16, 64, torch.bfloat16),  # 132 CTAs: every tile a cluster pair
        ([3001, 1, 700] * 24, 1, 32, 64, torch.bfloat16),  # --fp8: the tall instance
    ]
    if args.small:
        cases = [([100], 1, 16, 64, torch.bfloat16), ([300, 0, 65], 2, 16, 16, torch.bfloat16),
                 ([200], 1, 128, 1, torch.float16), ([150] * 3, 1, 64, 64, torch.bfloat16),
                 ([256] * 66, 1, 16, 64, torch.bfloat16),  # cluster pairs on 132 CTAs
                 ([4096], 1, 16, 64, torch.float16),  # B=1: items halved on pairs
                 ([2048] * 16, 1, 16, 64, torch.bfloat16),  # paced CTAs of 4 tiles
                 ([1500, 70, 5] * 23, 1, 32, 64, torch.bfloat16),  # --fp8: tall
                 ([900, 3000] * 10, 1, 32, 64, torch.bfloat16),  # TALL=all --fp8: tall pairs
                 ([1500, 70, 5] * 23, 2, 16, 64, torch.bfloat16),  # --fp8: tall MTP rows
                 ([900, 3000] * 10, 4, 8, 16, torch.bfloat16)]  # TALL=all --fp8: ... pairs
    for kv_lens, qo, h, ps, dt in ([] if args.ab_only else cases):
        try:
            bad += not check(args.backend, kv_lens, qo, h, ps, dt, ws, args.variant, args.fp8)
        except Exception as e:  # noqa: BLE001
            bad += 1
            print(f"ERR H={h} ps={ps} qo={qo}: {type(e).__name__}: {e}", flush=True)
    print("checks skipped (--ab-only)" if args.ab_only else f"{bad} bad of {len(cases)}")
    if args.variant and not bad:
        ab_timing(args.backend, args.variant, ws, args.page, args.ab_cases, args.flush,
                  args.preceded, args.fp8, args.ab_dtype, args.ab_ws == "shared")
    sys.exit(1 if bad else 0)


def read_spans(w):
    """The span buffer of a trace build ([CTA, event] global-timer ns, numpy int64), cleared."""
    import ctypes

    import numpy as np

    lib = w._impl.module._lib
    assert hasattr(lib, "mlaw_sm90_span_read"), "the variant was not built with MLAW_SM90_TRACE"
    dims = (ctypes.c_int32 * 2)()
    lib.mlaw_sm90_span_read(None, dims)
    ctas, events = dims
    buf = (ctypes.c_ulonglong * (ctas * events))()
    rc = lib.mlaw_sm90_span_read(buf, dims)
    assert rc == 0, f"mlaw_sm90_span_read: cudaError {rc}"
    return np.frombuffer(buf, dtype=np.uint64).reshape(ctas, events).astype(np.int64)


def print_spans(w, what, run_us):
    """When the CTAs of one traced run (sm90/dev.cuh MLAW_SPAN, global timer) start, get their
    first KV tile and finish, in us from the first CTA's start."""
    import numpy as np

    t = read_spans(w)
    events = t.shape[1]
    ran = t[:, 0] != 0
    busy = ran & (t[:, 5] > 0)
    z = t[ran, 0].min()
    us = (t - z) / 1e3  # (event 5 is a count, not a time)
    print(f"spans {what}: run {run_us:.1f} us (events), {ran.sum()} CTAs ran, {busy.sum()} with "
          f"tiles; us from the first CTA's start: min / p10 / median / p90 / max")
    names = ["entry", "producer's first stage", "first tile landed", "last P V done",
             "last rows stored"]
    if events > 6:  # (builds since session 36) the start in more detail
        names += ["", "producer has its record", "scorer has Q"]
    for e, name in enumerate(names):
        if not name:
            continue
        v = us[busy, e] if e else us[ran, e]
        print(f"  {name:24s} " + " / ".join(f"{x:7.1f}" for x in
                                              np.percentile(v, [0, 10, 50, 90, 100])))
    tiles = t[busy, 5]
    per_tile = (us[busy, 3] - us[busy, 2]) / np.maximum(tiles - 1, 1)
    print(f"  tiles per CTA {tiles.min()}..{tiles.max()}; us per tile after the first "
          + " / ".join(f"{x:.3f}" for x in np.percentile(per_tile, [0, 10, 50, 90, 100])))
    out_dir = os.environ.get("MLA_WRAPPER_RESULTS_DIR")
    if out_dir:  # the raw spans, for a per-request look
        words = what.split()  # the variant's -D flags shortened: -DMLAW_SM90_KNOB=1 -> KNOB1
        name = "_".join(x[2:].replace("MLAW_SM90_", "") if x.startswith("-D") else x
                        for x in words)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name.replace("=", ""))  # (lib: paths, {dt})
        out = Path(out_dir) / f"spans_{name}.npy"
        np.save(out, t)
        print(f"  raw spans [CTA, event] (global timer ns; event 5 = tiles) in {out.name}")
    order = np.argsort(us[:, 4] * busy)[::-1][:6]
    print("  last to finish: " + "; ".join(
        f"cta {c} ({t[c, 5]} tiles): first tile {us[c, 2]:.1f}, last P V {us[c, 3]:.1f}, "
        f"stored {us[c, 4]:.1f}" for c in order if busy[c]))


def print_trace(w, what):
    """Median clocks between the trace events of sm90/dev.cuh (MLAW_SM90_TRACE) over the
    traced CTAs' KV tiles from the third to the third-last (the first tiles fill the ring).
    A clock read right after a named barrier can retire before the barrier resolves, so a span
    that starts there may include part of that wait (logs/sm90_lagpv_h200_2026-11-23)."""
    import ctypes

    import numpy as np

    lib = w._impl.module._lib
    assert hasattr(lib, "mlaw_sm90_trace_read"), "the variant was not built with MLAW_SM90_TRACE"
    dims = (ctypes.c_int32 * 3)()
    lib.mlaw_sm90_trace_read(None, dims)
    ctas, tiles, events = dims
    buf = (ctypes.c_ulonglong * (ctas * tiles * events))()
    rc = lib.mlaw_sm90_trace_read(buf, dims)
    assert rc == 0, f"mlaw_sm90_trace_read: cudaError {rc}"
    t = np.frombuffer(buf, dtype=np.uint64).reshape(ctas, tiles, events).astype(np.int64)
    if os.environ.get("MLAW_TRACE_DUMP"):  # the raw events, [CTA][tile][event], for a closer look
        np.save(os.environ["MLAW_TRACE_DUMP"], t)
    used = int((t[:, :, 1] != 0).sum(axis=1).max())
    if used < 6:  # a short item (B=1): each CTA's whole timeline, clocks from its Q load
        print(f"trace {what}: clocks from the consumers' Q load (event 16) per CTA")
        for c in range(ctas):
            n = int((t[c, :, 1] != 0).sum())
            if not n:
                continue
            z = t[c, 0, 16]
            line = ([f"CTA start {t[c, 0, 26] - z}"] if events > 26 else []) + \
                [f"Q landed {t[c, 0, 18] - z}"] + \
                ([f"Q converted {t[c, 0, 29] - z}"] if events > 29 and t[c, 0, 29] else []) + \
                ([f"narrow Q staged {t[c, 0, 30] - z}"] if events > 30 and t[c, 0, 30] else [])
            for i in range(n):
                e = t[c, i] - z
                raw = (f"landed {e[27]} widened {e[28]} " if events > 28 and t[c, i, 28]
                       else "")  # an e4m3 tile's bytes in and widened
                line.append(f"tile {i}: issued {e[15]} {raw}wait {e[0]} full {e[1]} S {e[2]} P0 {e[4]} "
                            f"PV {e[6]}/{e[13]}")
            if events > 31 and t[c, n - 1, 31]:  # a narrow item's O in `tiles`' layout
                line.append(f"narrow O moved {t[c, n - 1, 31] - z}")
            line.append(f"epilogue: sums {t[c, 0, 20] - z} "
                        + (f"scales {t[c, 0, 24] - z} stmatrix {t[c, 0, 25] - z} "
                           if events > 25 else "")
                        + f"staged {t[c, 0, 21] - z} stored {t[c, 0, 19] - z}")
            if events > 23 and t[c, 0, 22]:  # a cluster pair: barrier passed, exchange done
                line.append(f"pair: barrier {t[c, 0, 22] - z} exchange {t[c, 0, 23] - z}")
            print(f"  cta {c}: " + "; ".join(line))
        return
    # Item timeline of each traced CTA (clocks from its first Q load; a CTA's first
    # kTraceTiles tiles): per work item its start, Q landed, first tile in, last P V done and
    # rows stored; then the CTA's tile count and mean tile period.
    for c in range(ctas):
        n = int((t[c, :, 1] != 0).sum())
        if not n:
            continue
        z = t[c, 0, 16]
        starts = [i for i in range(n) if t[c, i, 16] != 0] + [n]
        items = []
        for a, b in zip(starts[:-1], starts[1:]):
            conv = (f"Q f16 {t[c, a, 29] - z} " if events > 29 and t[c, a, 29] else "")
            items.append(f"[{b - a} tiles: start {t[c, a, 16] - z} Q {t[c, a, 18] - z} {conv}"
                         f"in {t[c, a, 1] - z} pv-done {t[c, b - 1, 6] - z} "
                         f"stored {t[c, a, 19] - z}]")
        print(f"  cta {c}: {n} tiles, {(t[c, n - 1, 6] - t[c, 0, 1]) / max(n - 1, 1):.0f} clocks "
              f"a tile; " + " ".join(items))
    used = int((t[:, :, 1] != 0).sum(axis=1).min())  # every traced CTA has these tiles
    sel = slice(2, used - 2)
    widened = events > 28 and t[:, sel, 28].any()  # (before the rebase below turns 0 into < 0)
    recorded = t != 0  # (a path records only its own events: the narrow tiles no barMax)
    t = t - t[:, :1, :1]
    spans = [  # (name, from event, to event, tile offset of `to`)
        ("tile period (scorer full-wait to next)", 0, 0, 1),
        ("scorer: wait full", 0, 1, 0), ("scorer: S GEMM", 1, 2, 0),
        ("scorer: S done -> barMax", 2, 3, 0),
        ("scorer: first half of P (exp + store)", 3, 4, 0), ("scorer: wait barP", 4, 5, 0),
        ("scorer: second half of P + both P V", 5, 6, 0),
        ("scorer: PV done -> next full wait", 6, 0, 1),
        ("pv-wg: wait full", 7, 8, 0), ("pv-wg: full -> barMax (waits for S)", 8, 10, 0),
        ("pv-wg: barMax -> barP (waits for P's first half)", 10, 12, 0),
        ("pv-wg: both halves' P V (waits for the second)", 12, 13, 0),
        ("producer: wait empty", 14, 15, 0),
        ("producer issue -> scorer has tile", 15, 1, 0),
        ("scorer S done -> pv-wg PV done", 2, 13, 0),
    ]
    if widened:  # an e4m3 cache: its bytes' landing and widening
        spans += [
            ("e4m3: issue -> bytes landed", 15, 27, 0),
            ("e4m3: bytes landed -> widened", 27, 28, 0),
            ("e4m3: widened -> scorer has tile", 28, 1, 0),
        ]
    print(f"trace {what}: median [p10, p90] clocks over CTAs 0-{ctas - 1}, tiles 2-{used - 3}")
    def show(name, d):
        print(f"  {name:48s} {int(np.median(d)):7d} [{int(np.percentile(d, 10)):7d}, "
              f"{int(np.percentile(d, 90)):7d}]")

    for name, a, b, off in spans:
        if not (recorded[:, sel, a].all() and recorded[:, sel.start + off:sel.stop + off, b].all()):
            print(f"  {name:48s} (not recorded on this path)")
            continue
        show(name, (t[:, sel.start + off:sel.stop + off, b] - t[:, sel, a]).ravel())
    # A stage's release (the later of the two warpgroups' P V done, tile i) to the producer
    # passing its wait for that stage (tile i + 2): the refill's wake-up delay.
    rel = np.maximum(t[:, sel, 6], t[:, sel, 13])
    stop = min(sel.stop + 2, t.shape[1])
    show("release (later P V done) -> producer passes wait",
         (t[:, sel.start + 2:stop, 15] - rel[:, :stop - sel.start - 2]).ravel())
    show("pv-wg PV done - scorer PV done", (t[:, sel, 13] - t[:, sel, 6]).ravel())


def peer_runs(h, batch, length, page, variant, ws, data="randn", fp8=False):
    """[(name, fn)] for one decode case (bench_decode's tensors): sm90, with fp8 sm90 over an
    e4m3 copy of the cache, sm90 built as `variant` (if any; over the e4m3 copy with fp8),
    FlashInfer fa3 and FlashMLA (each if it loads), each on its own workspace (no shared plan
    bytes)."""
    from bench_decode import RUNNERS, make_case, runner_ours

    c = make_case(h, batch, length, page, 1, "cuda", 0, data=data)
    runs = [("sm90", runner_ours("sm90", c, ws)[0])]
    if fp8:
        runs.append(("sm90_fp8", runner_ours("sm90", c, torch.empty_like(ws), fp8=True)[0]))
    if variant:
        fn, _ = runner_ours("sm90", c, torch.empty_like(ws), fp8=fp8)
        # the wrapper is captured by runner_ours' lambda
        use_variant(next(x.cell_contents for x in fn.__closure__
                         if isinstance(x.cell_contents, BatchMLAPagedAttentionWrapper)), variant)
        runs.append(("sm90 variant", fn))
    for name in ("fi_fa3", "flashmla"):
        try:
            runs.append((name, RUNNERS[name](c, torch.empty_like(ws))[0]))
        except Exception as e:  # noqa: BLE001
            print(f"{name} unavailable: {e}")
    return runs


def timeline(h, batch, length, page, variant, ws, replays=50, fp8=False):
    """Replay one decode case from a CUDA graph under torch.profiler for sm90 (default build,
    with fp8 also over an e4m3 copy of the cache, and `variant`) and FlashInfer fa3; print each
    kernel's mean device time and the mean span from a replay's first kernel start to its last
    kernel end."""
    from harness import capture_graph, median_event_ms
    from torch.profiler import ProfilerActivity, profile

    for name, fn in peer_runs(h, batch, length, page, variant, ws, fp8=fp8):
        g = capture_graph(fn)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(replays):
                g.replay()
                torch.cuda.synchronize()
        ev = sorted((e for e in prof.events() if e.device_type.name == "CUDA"),
                    key=lambda e: e.time_range.start)
        per = {}
        for e in ev:
            per.setdefault(e.name, []).append(e.time_range.end - e.time_range.start)
        # one replay = the kernels between synchronizations: group by gaps > 20 us
        spans, start, end = [], None, None
        for e in ev:
            if start is None or e.time_range.start - end > 20:
                if start is not None:
                    spans.append(end - start)
                start = e.time_range.start
                end = e.time_range.end
            end = max(end, e.time_range.end)
        if start is not None:
            spans.append(end - start)
        spans.sort()
        print(f"timeline {name} H={h} B={batch} L={length} page {page}: graph replay "
              f"{median_event_ms(g.replay, 200) * 1e3:.1f} us (events), span median "
              f"{spans[len(spans) // 2]:.1f} us over {len(spans)} replays", flush=True)
        tails, att_end = [], None  # combine end - attention end (the split's tail)
        for e in ev:
            if "combine" in e.name and att_end is not None:
                tails.append(e.time_range.end - att_end)
            elif "combine" not in e.name:
                att_end = e.time_range.end
        if tails:
            tails.sort()
            print(f"    combine ends {tails[len(tails) // 2]:.1f} us after attention (median)")
        for k, v in per.items():
            v.sort()
            print(f"    {len(v):4d} x {v[len(v) // 2]:7.1f} us  {k[:110]}", flush=True)


def power(h, batch, length, page, variant, ws, tag="", seconds=4.0, data="randn", fp8=False,
          flush=False):
    """Run each kernel (sm90, with fp8 sm90 over an e4m3 copy of the cache, the variant if any,
    FlashInfer fa3, FlashMLA) back to back for `seconds`
    while nvidia-smi samples every 50 ms; print the time per call with the median SM clock, power
    and the throttle reasons seen (a kernel's speed at the clock its own power draw allows); the
    second round's figures also go to power.jsonl under `tag`. ``flush``: each call after
    do_bench's flush (a 256 MB buffer zeroed, untimed), the time per call the median of
    per-call CUDA events: the clock the grid's rows run at."""
    import statistics
    import subprocess
    import time

    from harness import ResultWriter, device_context, dirty_flush, event_times_ms

    ctx = device_context()
    ctx["driver"] = subprocess.run(
        ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
        capture_output=True, text=True).stdout.strip()
    out = ResultWriter("power", ctx)  # (benchmarks/results/power.jsonl, or $MLA_WRAPPER_RESULTS_DIR)
    runs = peer_runs(h, batch, length, page, variant, ws, data, fp8=fp8)
    # Each kernel twice, in turn: the second round is the one that counts (and is recorded).
    for i, (name, fn) in enumerate(runs * 2):
        fn()
        torch.cuda.synchronize()
        smi = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw,clocks_event_reasons.active",
             "--format=csv,noheader,nounits", "-lms", "50"], stdout=subprocess.PIPE, text=True)
        calls, t0, times = 0, time.perf_counter(), []
        while time.perf_counter() - t0 < seconds:
            if flush:
                times += [t * 1e3 for t in event_times_ms(fn, 20, dirty_flush)]
            else:
                for _ in range(20):
                    fn()
                torch.cuda.synchronize()
            calls += 20
        elapsed = time.perf_counter() - t0
        smi.terminate()
        rows = [r.split(",") for r in smi.communicate()[0].strip().splitlines()]
        rows = [r for r in rows[len(rows) // 4:] if len(r) == 3]  # past the ramp
        if not rows:
            print(f"power {name}: no nvidia-smi samples")
            continue
        clk = sorted(round(float(r[0])) for r in rows)
        pw = sorted(round(float(r[1])) for r in rows)
        reasons = sorted({r[2].strip() for r in rows})
        us = round(statistics.median(times) if flush else elapsed / calls * 1e6, 1)
        clk_med, pw_med = clk[len(clk) // 2], pw[len(pw) // 2]
        print(f"power {name:13s} H={h} B={batch} L={length}: {us:8.1f} us/call, "
              f"SM clock {clk_med} MHz [{clk[0]}, {clk[-1]}], "
              f"power {pw_med} W, throttle reasons {reasons}", flush=True)
        if i >= len(runs):  # (the figures printed above, as recorded)
            out.write({
                "heads": h, "batch": batch, "kv_len": length, "page_size": page,
                "method": ("check_sm90_dev.py --power --power-flush: 4 s, each call after "
                           "do_bench's 256 MB zeroing flush, median of per-call events"
                           if flush else "check_sm90_dev.py --power: 4 s back to back (no L2 "
                           "flush)") + ", nvidia-smi every 50 ms, second round",
                "tag": tag, "backend": f"sm90 {variant}" if name == "sm90 variant" else name,
                "us_per_call": us, "sm_clock_mhz_median": clk_med,
                "sm_clock_mhz_range": [clk[0], clk[-1]], "power_w_median": pw_med,
                "throttle_reasons": reasons, "data": data})


AB_CASES = {  # (H, B, L)
    "grid": ((128, 128, 16384), (128, 64, 4096), (16, 128, 16384), (16, 64, 4096), (16, 16, 4096),
             (128, 1, 1024)),
    "split": ((128, 1, 1024), (16, 1, 1024), (128, 1, 4096), (16, 1, 4096), (16, 16, 4096),
              (16, 64, 4096), (128, 16, 4096)),  # cases the planner splits (the combine runs)
    "h128": ((128, 64, 4096), (128, 128, 4096), (128, 32, 4096, 2), (128, 16, 4096)),
    # the grid's four compute-bound rows (one or two whole requests per CTA, no cuts)
    "compute": ((128, 128, 16384), (128, 128, 4096), (128, 64, 16384), (128, 64, 4096)),
    # batches the sm90 planner cuts into cluster pairs (every tile in two, one per CTA), and
    # cases it plans without pairs (for a library built before pairs: 'lib:' variants)
    "pairs": ((16, 64, 1024), (16, 64, 4096), (32, 64, 4096), (64, 64, 4096), (16, 64, 4096, 2),
              (16, 66, 2048)),
    # about num_ctas / 2 requests of 16384 tokens (for 'cost:min_chunk=8192': pairs, no merge)
    "half16k": ((16, 64, 16384), (64, 64, 16384), (32, 60, 16384)),
    # B=1 with long contexts (the planner's pieces grow like sqrt(L): 8-16 tiles)
    "long1": ((128, 1, 16384), (16, 1, 16384), (128, 1, 65536), (16, 1, 65536), (64, 2, 32768)),
    # batches with more row tiles than CTAs (balance cuts)
    "balance": ((128, 128, 16384), (128, 128, 4096), (128, 64, 16384), (128, 96, 4096),
                (16, 192, 4096), (64, 200, 4096)),
    "nopairs": ((128, 128, 16384), (128, 64, 4096), (16, 128, 16384), (16, 16, 4096),
                (128, 16, 4096), (128, 1, 1024)),
    # cut batches (L < 0: ragged lengths U(qo, 2|L|), bench_decode's seed 0), for cost: variants
    "cuts": ((128, 64, -4096), (128, 32, -4096, 2), (16, 64, -4096), (16, 64, 4096),
             (64, 64, 4096), (128, 16, 4096), (16, 64, 1024)),
    # short contexts at small batches (the planner's shortest piece: 1-3 kv tiles)
    "short": ((128, 1, 200), (16, 1, 256), (128, 1, 512), (16, 1, 512), (128, 1, 1024),
              (16, 1, 1024), (128, 1, 2048), (16, 1, 2048), (128, 2, 1024), (16, 4, 1024),
              (128, 4, 1024), (16, 8, 1024), (128, 8, 1024), (64, 4, 2048)),
    # 32 and 64 heads (TP4 / TP2: one row tile per request, DRAM-bound on both devices) at
    # every batch shape, for the KV stream's L2 policy and the maps' promotion by head count
    "h32": ((32, 128, 16384), (32, 64, 16384), (32, 128, 4096), (32, 64, 4096), (32, 16, 4096),
            (32, 64, 1024), (32, 32, 4096, 2), (64, 64, 4096), (64, 128, 8192), (64, 32, 16384),
            (64, 16, 4096)),
    # TP4 (17-32 heads) decode at every batch shape (--fp8: the tall instance's plans, cluster
    # pairs at batches of at most half the CTAs' requests)
    "tp4": ((32, 1, 1024), (32, 1, 16384), (32, 4, 4096), (32, 8, 4096), (32, 16, 4096),
            (32, 32, 4096), (32, 48, 4096), (32, 64, 1024), (32, 64, 4096), (32, 64, 16384),
            (32, 96, 4096), (32, 128, 4096), (24, 64, 4096), (24, 1, 4096), (32, 16, 512),
            (32, 64, 256)),
    # 16-64 heads with MTP rows past one tile (two row tiles read each KV tile)
    "h64mtp": ((64, 32, 4096, 2), (64, 64, 4096, 2), (64, 16, 8192, 2), (32, 32, 4096, 4),
               (32, 64, 2048, 4), (32, 64, 4096, 3), (16, 32, 4096, 8), (16, 64, 2048, 8)),
    # <= 16 heads at small batches (--fp8: the narrow instance's items of 2-16 tiles, the
    # per-item Q conversion and O move of narrow.cuh; B=1 L=1024 one-tile items on wgmma)
    "narrow": ((16, 1, 2048), (16, 1, 4096), (16, 1, 16384), (8, 1, 4096), (16, 2, 4096),
               (16, 4, 4096), (16, 8, 4096), (16, 16, 4096), (16, 32, 2048), (16, 64, 4096),
               (16, 1, 1024), (16, 128, 16384)),
    # one B=1 case each (quick latency A/Bs, e.g. of a probe build valid for one plan shape)
    "b1h128": ((128, 1, 1024),), "b1h16": ((16, 1, 1024),),
    # few heads (DRAM-bound) at every batch shape, MTP rows filling the tile, TP2 / TP4 heads
    # (for the KV TMA box size, e.g. 'paced' loads: launcher.cuh kv_paced_rows)
    "boxes": ((16, 128, 16384), (16, 64, 16384), (16, 128, 4096), (16, 64, 4096), (16, 16, 4096),
              (16, 64, 1024), (16, 64, 4096, 2), (16, 32, 4096, 4), (32, 64, 4096),
              (64, 64, 4096), (16, 1, 1024)),
    # few heads, one work item per CTA of 1-64 tiles (for paced KV loads, launcher.cuh)
    "paced": ((16, 16, 4096), (16, 64, 1024), (16, 32, 4096, 4), (16, 32, 4096), (16, 64, 4096),
              (16, 16, 16384), (16, 8, 4096), (16, 4, 4096), (16, 1, 16384), (16, 1, 4096),
              (16, 64, 16384), (16, 128, 4096)),
    # the same at 32 and 64 heads (and B=1 / B=4 at 16: paced only on a busy grid)
    "paced_heads": ((32, 16, 4096), (32, 64, 1024), (32, 64, 4096), (64, 16, 4096), (64, 64, 1024),
                    (64, 64, 4096), (32, 1, 16384), (64, 8, 4096), (16, 4, 4096), (16, 1, 16384)),
    # CTAs of several work items (large batches of short requests, the compute rows' two):
    # what an item's start costs (Q, the epilogue)
    "items": ((128, 512, 512), (128, 256, 1024), (128, 512, 1024), (64, 512, 1024),
              (128, 128, 4096), (128, 200, 2048), (16, 512, 512), (128, 256, 512, 2)),
    # MTP rows of <= 16 heads (--fp8: 16 x 2 / 8 x 3-4 rows, the tall instance's 32-row tiles
    # with MLA_WRAPPER_SM90_TALL_MTP, else 64-row ones)
    "mtp": ((16, 1, 4096, 2), (16, 4, 4096, 2), (16, 16, 4096, 2), (16, 32, 4096, 2),
            (16, 64, 256, 2), (16, 64, 1024, 2), (16, 64, 4096, 2), (16, 64, 16384, 2),
            (16, 128, 4096, 2), (16, 128, 16384, 2), (8, 64, 4096, 4), (8, 16, 4096, 3)),
    # the memory-bound and middle rows of bench_decode's grid
    "memory": ((16, 128, 16384), (16, 64, 16384), (16, 128, 4096), (16, 64, 4096), (16, 16, 4096),
               (16, 64, 1024), (128, 16, 4096), (128, 64, 1024)),
}


def planner_cost_variant(variant):
    """'cost:k=v,...' -> the sm90 family's CostModel with those fields changed, else None."""
    if not variant.startswith("cost:"):
        return None
    import dataclasses

    from mla_wrapper.backends import sm90

    return dataclasses.replace(sm90.planner_cost(), **{
        k: int(v) for k, v in (kv.split("=") for kv in variant[5:].split(","))})


def ab_timing(backend, variant, ws, page=64, cases="grid", flush="dirty", preceded=False,
              fp8=False, dtype="bf16", shared_ws=False):
    """Median times (L2 flushed) of the default and the variant build on the same tensors, each
    the mean of two measurements taken in the order default, variant, variant, default.
    shared_ws: both wrappers plan on one float workspace (their partial slots at the same
    addresses; the runs are serialized on one stream), else each on its own.
    preceded: each timed call (and graph) is the query rows written by a copy kernel, as a
    model's projection writes them, then run(). fp8: over an e4m3 copy of the cache. dtype:
    the query's element type ('bf16' or 'fp16')."""
    from bench_decode import case_lens
    from harness import bench_graph_us, bench_ms

    from mla_wrapper.backends import sm90

    from mla_wrapper import planner

    cost = planner_cost_variant(variant)  # a planner variant: same kernel, another cost model
    # 'env:NAME=VALUE,...': the variant planned with these environment variables set (e.g.
    # MLA_WRAPPER_SM90_TALL, which picks the plans' rows per tile, so the kernel instance)
    env = dict(kv.split("=", 1) for kv in variant[4:].split(",")) if variant.startswith("env:") \
        else {}
    default_cost = sm90.planner_cost
    default_planner = planner._module()
    other_planner = None  # 'planner:path/lib.so': the same kernel planned by another planner build
    if variant.startswith("planner:"):
        from mla_wrapper.jit.load import KernelModule

        other_planner = KernelModule(planner.planner_spec(), Path(variant[len("planner:"):]))
    q_dtype = DTYPES[dtype]
    for h, batch, length, *qo in AB_CASES[cases]:  # (H, B, L[, qo_len: causal])
        qo = qo[0] if qo else 1
        lens = case_lens(batch, length, qo, torch.Generator(device="cpu").manual_seed(0)).tolist()
        b = make_batch(lens, qo, h, page, q_dtype)
        ckv, kpe, scales = run_cache(b, fp8)
        fns = []
        float_ws = torch.empty_like(ws) if shared_ws else None
        for flags in ("", variant):
            w = BatchMLAPagedAttentionWrapper(
                float_ws if shared_ws else torch.empty_like(ws), backend=backend)
            if flags and cost is not None:
                sm90.planner_cost = lambda: cost
            if flags and other_planner is not None:
                planner._MODULE = other_planner
            saved_env = {k: os.environ.get(k) for k in env}
            if flags:
                os.environ.update(env)
            try:
                w.plan(b["qo_indptr"], b["kv_indptr"], b["kv_indices"], b["kv_len"], h, 512, 64,
                       page, qo > 1, SM_SCALE, q_dtype, ckv.dtype)
            finally:
                sm90.planner_cost = default_cost
                planner._MODULE = default_planner
                for k, v in saved_env.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            use_variant(w, flags)
            if preceded:
                q_src = b["q_nope"].clone()
                fns.append(lambda w=w, q_src=q_src: (b["q_nope"].copy_(q_src),
                                                     w.run(b["q_nope"], b["q_pe"], ckv, kpe,
                                                           **scales)))
            else:
                fns.append(lambda w=w: w.run(b["q_nope"], b["q_pe"], ckv, kpe, **scales))
        # A B B A: a long run heats the GPU and later timings of it come out slower (H100,
        # 2026-11-25: the same build 1114 against 1213 us at H=128 B=128 L=16384 in one run)
        times, graph, graph_flushed = [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]
        for i in (0, 1, 1, 0):
            times[i] += bench_ms(fns[i], flush=flush) / 2
            if batch <= 8:  # latency: also replayed from a CUDA graph
                graph[i] += bench_graph_us(fns[i]) / 2
                if flush == "clean":  # and each replay after a read flush (as in a model)
                    graph_flushed[i] += bench_graph_us(fns[i], flush="clean") / 2
        if batch > 8:
            graph = []
        print(f"A/B page {page} H={h:3d} B={batch:3d} L={length:5d} qo {qo}: default {times[0] * 1e3:8.1f} us, "
              f"variant {times[1] * 1e3:8.1f} us, speedup {times[0] / times[1]:.3f}x", flush=True)
        if graph:
            print(f"    graph replay: default {graph[0]:.1f} us, variant {graph[1]:.1f} us, "
                  f"speedup {graph[0] / graph[1]:.3f}x", flush=True)
        if graph and flush == "clean":
            print(f"    graph replay after a read flush: default {graph_flushed[0]:.1f} us, "
                  f"variant {graph_flushed[1]:.1f} us, "
                  f"speedup {graph_flushed[0] / graph_flushed[1]:.3f}x", flush=True)


if __name__ == "__main__":
    main()
