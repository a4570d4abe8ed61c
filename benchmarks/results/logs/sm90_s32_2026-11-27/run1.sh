#!/usr/bin/env bash
# Session 32, device call 1 (H200): the shipped build (main at a120d5c, kKvFirstMultiTile's final
# predicate never ran before): the checks; memcheck and racecheck on the small cases; MTP rows at
# 32 / 64 heads against -DMLAW_SM90_KV_FIRST_MULTI_TILE=0 ("speedup" > 1: the variant is faster);
# the full grid with the peers (the README's H200 table); the GPU suite.
V="-DMLAW_SM90_KV_FIRST_MULTI_TILE=0"
B=benchmarks
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
  "timeout 280 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases h64mtp --variant='$V'" \
  "python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s32-h200-final" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
