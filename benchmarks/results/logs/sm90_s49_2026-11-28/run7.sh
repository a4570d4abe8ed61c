#!/usr/bin/env bash
# Session 49, device call 7 (one H200): run 5's grid had H=128 B=128 L=4096 at 0.98x fa3
# (session 48's run 5: 1.07x, the same 16-bit SASS). Is it the run's power state? The compute
# rows again, twice, with fa3 and FlashMLA in one process, and that row sustained at the 700 W
# cap (sm90, fa3, FlashMLA back to back under nvidia-smi sampling).
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 100 python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases compute --tag s49-h200-compute-rep" \
  "timeout 120 python $B/check_sm90_dev.py --power 128 128 4096 --tag s49-h200-power" \
  "timeout 100 python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases compute --tag s49-h200-compute-rep"
