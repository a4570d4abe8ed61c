#!/usr/bin/env bash
# Session 46, device call 2 (one GPU): the sparse benchmark's full grid with the fp8_ds_mla rows
# (ours, and FlashMLA's sparse fp8 decode kernel, padded to 64 heads below 64 as vLLM pads),
# and two development builds of the fp8_ds_mla library on the same tensors: one scale multiply
# (MLAW_SM90_DS_ONE_MUL) and no widening at all (MLAW_SM90_PROBE_DS_NO_WIDEN, wrong results).
B=benchmarks
TAIL=${TAIL:-80} bash $B/device_run.sh \
  "timeout 400 python $B/bench_sparse.py --ds-mla --ds-variant='-DMLAW_SM90_DS_ONE_MUL=1;-DMLAW_SM90_PROBE_DS_NO_WIDEN=1'"
