#!/usr/bin/env bash
# Session 35, device call 2 (asks for an H200; on an H100 a quick exit): run 1's probes on the
# device where H=16 B=16 L=4096 misses its target. A third KV stage over the Q tile and the
# no-math probe (both wrong results) A/B'd on the paced cases after do_bench's flush and after a
# read flush (speedup > 1: the probe is faster), then the middle rows against fa3 twice.
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $dev"
case "$dev" in *H200*) ;; *) echo "not an H200: quick exit"; exit 0 ;; esac
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PROBE_STAGES3=1 --ab-only --ab-cases paced" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PROBE_STAGES3=1 --ab-only --ab-cases paced --flush clean" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PROBE_NO_MATH=1 --ab-only --ab-cases paced" \
  "python $B/check_sm90_dev.py --variant=-DMLAW_SM90_PROBE_NO_MATH=1 --ab-only --ab-cases paced --flush clean" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle --tag s35-h200-middle" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle --tag s35-h200-middle"
