#!/usr/bin/env bash
# Session 35, device call 6: which part of the math costs the short H=16 rows after a read flush
# (run 3: no math 1.126x)? Probes (wrong results), each A/B'd on the paced cases after do_bench's
# flush and after a read flush: the score GEMM's A from registers (QREG: half the score GEMM's
# shared-memory reads), no P V (NO_PV), no score GEMM (NO_S).
B=benchmarks
steps=()
for p in QREG NO_PV NO_S; do
  for f in dirty clean; do
    steps+=("python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PROBE_$p=1 --ab-only --ab-cases paced --flush $f")
  done
done
TAIL=${TAIL:-14} bash $B/device_run.sh "${steps[@]}"
