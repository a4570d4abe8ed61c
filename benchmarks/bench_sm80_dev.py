"""Device check + timing of sm80 configs with the dev plan builder of tests/test_sm80_kernel.py.

python benchmarks/bench_sm80_dev.py --configs 64x2,32x4 [--orig path/to/lib.so] [--record]
Correctness: a grid of small problems vs reference.py per config; on the timed shapes, every
variant's output vs the first variant's. Timing: harness.bench_ms (median, L2 flushed). Prints one line per (shape, variant); writes JSON lines with device/date if --out.
"""
from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ResultWriter, bench_ms, ceilings, device_context  # noqa: E402
from test_sm80_kernel import DevProblem  # noqa: E402

from mla_wrapper.backends import sm80  # noqa: E402
from mla_wrapper.jit import env, load  # noqa: E402
from mla_wrapper.jit.load import KernelModule  # noqa: E402


VARIANT_FLAGS = {  # experimental compile-time knobs of mla_kernel.cuh
    "early": "-DMLAW_SM80_EARLY_REFILL_ROWS=32",
    "early48": "-DMLAW_SM80_EARLY_REFILL_ROWS=48",
    "allearly": "-DMLAW_SM80_EARLY_REFILL_ROWS=64",
}


def variant_spec(name, dtype, arch):
    """'64x2' or '64x2+acc+noearly': a config plus VARIANT_FLAGS."""
    import dataclasses

    config, *knobs = name.split("+")
    s = sm80.spec(dtype, arch, config=config)
    if knobs:
        s = dataclasses.replace(s, extra_flags=tuple(VARIANT_FLAGS[k] for k in knobs))
    return s


def modules(configs, orig, dtype="bf16"):
    arch = env.device_arch(torch.device("cuda"))
    out = {}
    if orig:
        s = sm80.spec(dtype, arch, config="64x2")
        out["orig"] = KernelModule(s, orig)
    for c in configs:
        out[c] = load(variant_spec(c, dtype, arch))
    return out


def check_grid(mods, dtypes=("bf16", "fp16")):
    worst = {}
    n = 0
    for name, _ in mods.items():
        if name == "orig":
            continue
        for dt in (dtypes if "+" not in name else ("bf16",)):
            mod = load(variant_spec(name, dt, env.device_arch(torch.device("cuda"))))
            tdt = torch.bfloat16 if dt == "bf16" else torch.float16
            for H in (16, 32, 64, 128):
                for page in (1, 16, 64):
                    for mode in ("simple", "split", "balanced"):
                        for qo in ("decode", "mtp"):
                            if dt == "fp16" and (page != 16 or mode == "simple"):
                                continue
                            rng = random.Random(H * 1000 + page)
                            kv = [0, 1, 15, 16, 17, 31, 33, 63, 64, 65, 200, 1000, 130]
                            rng.shuffle(kv)
                            q = [1] * len(kv) if qo == "decode" else [rng.randint(1, 4) for _ in kv]
                            causal = qo == "mtp"
                            if causal:
                                kv = [L if L == 0 or L >= a else a for L, a in zip(kv, q)]
                            p = DevProblem(q, kv, H, page, tdt, causal, mode,
                                           fused_cache=page != 16, num_ctas=13,
                                           seed=rng.randint(0, 1 << 30))
                            p.run(mod)
                            torch.cuda.synchronize()
                            e_o, e_lse = p.errors()
                            n += 1
                            key = (name, dt)
                            worst[key] = max(worst.get(key, (0, 0)), (e_o, e_lse))
                            if not (e_o < 1e-2 and e_lse < 1e-3):
                                print("FAIL", name, dt, H, page, mode, qo, e_o, e_lse, flush=True)
    for k, v in worst.items():
        print(f"check {k[0]} {k[1]}: worst rel err o={v[0]:.2e} lse={v[1]:.2e}", flush=True)
    return n


SHAPES = [  # (H, B, L)
    (128, 128, 4096), (128, 128, 16384), (128, 64, 16384), (128, 16, 4096),
    (16, 128, 16384), (16, 64, 16384), (16, 16, 4096), (16, 64, 1024), (16, 128, 4096),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="64x2,32x4")
    ap.add_argument("--orig", default="")
    ap.add_argument("--record", action="store_true",
                    help="append JSON lines to benchmarks/results/sm80_dev.jsonl")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--shapes", default="")
    ap.add_argument("--page", type=int, default=64)
    args = ap.parse_args()
    mods = modules(args.configs.split(","), args.orig)
    dev = torch.cuda.get_device_properties(0)
    meta = dict(device_context(), **ceilings(), smem_optin=dev.shared_memory_per_block_optin)
    print(meta, flush=True)
    if not args.no_check:
        t = time.time()
        n = check_grid(mods)
        print(f"checked {n} problems in {time.time() - t:.0f}s", flush=True)
    shapes = SHAPES if not args.shapes else [tuple(map(int, s.split("x")))
                                             for s in args.shapes.split(",")]
    rows = []
    for (H, B, L) in shapes:
        p = DevProblem([1] * B, [L] * B, H, args.page, torch.bfloat16, False, "balanced",
                       lse=True, num_ctas=dev.multi_processor_count, seed=1)
        ref_o = None
        flops = 2 * B * H * L * (576 + 512)
        nbytes = B * L * 576 * 2 + 2 * B * H * (576 + 512)
        for name, mod in mods.items():
            p.out.fill_(float("nan"))
            p.run(mod)
            torch.cuda.synchronize()
            o = p.out.float()
            if ref_o is None:
                ref_o = o.clone()
                err = 0.0
            else:
                err = ((o - ref_o).norm() / ref_o.norm()).item()
            t = bench_ms(lambda: p.run(mod)) * 1e-3
            r = dict(H=H, B=B, L=L, page=args.page, variant=name, us=t * 1e6,
                     tflops=flops / t * 1e-12, gbps=nbytes / t * 1e-9, err_vs_first=err,
                     nan=bool(torch.isnan(o).any().item()))
            rows.append(r)
            print(f"H={H:3d} B={B:3d} L={L:5d} {name:14s} {t * 1e6:8.1f} us "
                  f"{r['tflops']:6.1f} TF/s {r['gbps']:6.0f} GB/s err={err:.1e}"
                  f"{' NAN' if r['nan'] else ''}", flush=True)
        del p
        torch.cuda.empty_cache()
    if args.record:
        writer = ResultWriter("sm80_dev", meta)
        for r in rows:
            writer.write(r)


if __name__ == "__main__":
    main()
