#!/usr/bin/env bash
# Session 37, device call 10, on run 8's warm H200: the full grid with every peer (sm80, fa2,
# fa3, FlashMLA) in one process, then the middle and latency rows after a read flush.
B=benchmarks
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "python $B/bench_decode.py --backends sm90,sm80,fi_fa2,fi_fa3,flashmla --tag s37-h200-final" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency --flush clean --tag s37-h200-clean"
