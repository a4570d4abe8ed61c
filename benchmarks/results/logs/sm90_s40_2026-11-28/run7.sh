#!/usr/bin/env bash
# Session 40, device call 7 (2 GPUs): bench_cp.py at world size 2, never run before (cp.jsonl
# had only session 23's world-size-1 rows): context-parallel decode over two GPUs against the
# plain wrapper over the whole cache on one of them, same process.
TR="python -m torch.distributed.run --standalone"
TAIL=${TAIL:-40} bash benchmarks/device_run.sh \
  "timeout 220 $TR --nproc-per-node 2 benchmarks/bench_cp.py --tag s40-cp2"
