"""Merge ops benchmark: merge_state / merge_state_v2 / merge_attn_states in GB/s (bytes read +
written) against the device copy ceiling measured in the same run, and against
flashinfer.merge_state on the same tensors when FlashInfer is importable.

Every case is checked against reference.merge_states (float64) before it is timed; results go
to benchmarks/results/merge.jsonl (JSON lines, with the device context and ceilings).

    python benchmarks/bench_merge.py                 # bf16 + fp16, all sizes
    python benchmarks/bench_merge.py --dtypes bf16 --quick
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing

import torch  # noqa: E402

from harness import ResultWriter, bench_ms, ceilings, device_context  # noqa: E402
from mla_wrapper import ops  # noqa: E402
from mla_wrapper.reference import merge_states, rel_error  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3, torch.float32: 1e-5}

# (N tokens, H heads, D head dim): decode-sized to >= 64M elements (bandwidth-bound regime).
SIZES = [
    (1, 128, 512),
    (64, 128, 512),
    (256, 16, 512),
    (512, 128, 512),       # 32M elements
    (1024, 128, 512),      # 64M
    (8192, 16, 512),       # 64M
    (4096, 128, 128),      # 64M, D = 128
    (2048, 128, 512),      # 128M
]
QUICK_SIZES = [(64, 128, 512), (1024, 128, 512), (4096, 128, 128)]


def _flashinfer_merge_state():
    try:
        import flashinfer  # noqa: PLC0415

        return flashinfer.merge_state
    except Exception as e:  # noqa: BLE001 (not installed, or fails to import / JIT)
        print(f"flashinfer: not used ({type(e).__name__}: {e})")
        return None


def _bytes_moved(n: int, h: int, d: int, dtype: torch.dtype) -> int:
    elem = torch.empty((), dtype=dtype).element_size()
    return 3 * n * h * d * elem + 3 * n * h * 4  # read v_a, v_b, s_a, s_b; write v, s


def bench_case(n, h, d, dtype, fi_merge, copy_gbs):
    g = torch.Generator(device="cuda").manual_seed(n * 1_000_003 + h * 1009 + d)
    v_a = torch.randn(n, h, d, device="cuda", generator=g).to(dtype)
    v_b = torch.randn(n, h, d, device="cuda", generator=g).to(dtype)
    s_a = torch.randn(n, h, device="cuda", generator=g) * 4
    s_b = torch.randn(n, h, device="cuda", generator=g) * 4
    v_out, s_out = torch.empty_like(v_a), torch.empty_like(s_a)
    nbytes = _bytes_moved(n, h, d, dtype)
    records = []

    def record(op, fn, base_e):
        """Check fn's (v, s) against the reference on NaN-poisoned outputs, then time it."""
        v_out.fill_(float("nan"))
        s_out.fill_(float("nan"))
        v, s = fn()
        ref_v, ref_s = merge_states(v_a, s_a, v_b, s_b, base_e=base_e)
        err_v, err_s = rel_error(v, ref_v), rel_error(s, ref_s)
        del ref_v, ref_s
        ok = err_v < TOL[dtype] and err_s < 1e-5
        ms = bench_ms(fn)
        gbs = nbytes / (ms * 1e-3) / 1e9
        rec = {"op": op, "dtype": str(dtype).replace("torch.", ""), "N": n, "H": h, "D": d,
               "elements": n * h * d, "bytes": nbytes, "us": round(ms * 1e3, 2),
               "gbs": round(gbs, 1), "pct_copy": round(100 * gbs / copy_gbs, 1),
               "rel_err": err_v, "lse_rel_err": err_s, "correct": ok}
        records.append(rec)

    record("merge_state", lambda: ops.merge_state(v_a, s_a, v_b, s_b, v_out, s_out), False)
    record("merge_state_v2", lambda: ops.merge_state_v2(v_a, s_a, v_b, s_b, v_out, s_out), True)
    p_lse, s_lse = s_a.t().contiguous(), s_b.t().contiguous()  # vLLM layout: lse [H, N]
    o_lse = s_out.t()

    def attn_states():
        ops.merge_attn_states(v_out, v_a, p_lse, v_b, s_lse, o_lse)
        return v_out, s_out

    record("merge_attn_states", attn_states, True)

    if fi_merge is not None and dtype in (torch.float16, torch.bfloat16):
        rec = records[0]  # merge_state: same math (base 2), same tensors
        try:
            v_fi, s_fi = fi_merge(v_a, s_a, v_b, s_b)
            ref_v, ref_s = merge_states(v_a, s_a, v_b, s_b, base_e=False)
            rec["flashinfer_rel_err"] = rel_error(v_fi, ref_v)
            rec["flashinfer_lse_rel_err"] = rel_error(s_fi, ref_s)
            del v_fi, s_fi, ref_v, ref_s
            ms = bench_ms(lambda: fi_merge(v_a, s_a, v_b, s_b))
            rec["flashinfer_us"] = round(ms * 1e3, 2)
            rec["flashinfer_gbs"] = round(nbytes / (ms * 1e-3) / 1e9, 1)
            rec["speedup_vs_flashinfer"] = round(rec["flashinfer_us"] / rec["us"], 3)
        except Exception as e:  # noqa: BLE001 (report, keep benchmarking)
            rec["flashinfer_error"] = f"{type(e).__name__}: {e}"[:200]
            _clear_cuda_error()
    return records


def _clear_cuda_error() -> None:
    """A peer's failed launch leaves cudaGetLastError set in the shared CUDA runtime, and torch
    would report it at its next launch: read it off (clearing it) so our cases keep running."""
    import ctypes

    torch.cuda.synchronize()
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            ctypes.CDLL(name).cudaGetLastError()
            return
        except OSError:
            continue


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="bf16,fp16", help="comma list of bf16,fp16,fp32")
    parser.add_argument("--quick", action="store_true", help="three sizes only")
    parser.add_argument("--no-flashinfer", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_merge: needs a CUDA GPU")
        return 2

    context = device_context()
    ceil = ceilings()
    copy_gbs = ceil["copy_gbs"]
    writer = ResultWriter("merge", {**context, **ceil})
    fi_merge = None if args.no_flashinfer else _flashinfer_merge_state()
    print(f"{context['device']}  copy ceiling {copy_gbs} GB/s  (torch {context['torch']}, "
          f"nvcc {context['nvcc']})")
    header = (f"{'op':<18} {'dtype':<8} {'N':>5} {'H':>4} {'D':>4} {'Melem':>6} {'us':>9} "
              f"{'GB/s':>7} {'%copy':>6} {'fi us':>8} {'vs fi':>6} ok")
    print(header)
    print("-" * len(header))
    all_ok = True
    for name in args.dtypes.split(","):
        dtype = DTYPES[name.strip()]
        for n, h, d in (QUICK_SIZES if args.quick else SIZES):
            for rec in bench_case(n, h, d, dtype, fi_merge, copy_gbs):
                writer.write(rec)
                all_ok &= rec["correct"]
                fi_us = rec.get("flashinfer_us", "")
                vs_fi = rec.get("speedup_vs_flashinfer", "")
                print(f"{rec['op']:<18} {rec['dtype']:<8} {n:>5} {h:>4} {d:>4} "
                      f"{n * h * d / 2**20:>6.1f} {rec['us']:>9.2f} {rec['gbs']:>7.1f} "
                      f"{rec['pct_copy']:>6.1f} {fi_us:>8} {vs_fi:>6} "
                      f"{'yes' if rec['correct'] else 'NO'}")
                if "flashinfer_error" in rec:
                    print(f"    flashinfer: {rec['flashinfer_error']}")
            torch.cuda.empty_cache()
    print(f"results appended to {writer.path}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
