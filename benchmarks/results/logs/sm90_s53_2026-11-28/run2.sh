#!/usr/bin/env bash
# Session 53, device call 2 (one H200): why run 1's H=16 B=1 L=4096 row ran 1.07-1.09x slower
# with the raw-byte narrow tile (traces: this build `trace53` and 2dffe63's `traceH`, both
# -DMLAW_SM90_TRACE=1), the narrow-item threshold at 12 / 16 tiles against 8 (variants min12,
# min16 against the jit cache: a speedup above 1 means the variant is faster), and the sparse
# e4m3 library (its raw rows now swizzled) against 2dffe63's (`head53sp`).
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 60 $C --trace 16 1 4096 --variant=lib:$V/trace53/{dt}.so" \
  "timeout 60 $C --trace 16 1 4096 --variant=lib:$V/traceH/{dt}.so" \
  "timeout 60 $C --trace 16 64 4096 --variant=lib:$V/trace53/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases paced --variant=lib:$V/min12/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases paced --variant=lib:$V/min16/{dt}.so" \
  "timeout 200 python $B/bench_sparse.py --quick --fp8 --fp8-variant 'lib:$V/head53sp/{dt}.so'"
