#!/usr/bin/env bash
# Session 32, device call 2 (H100): the shipped build: the checks; MTP rows at 16-64 heads against
# -DMLAW_SM90_KV_FIRST_MULTI_TILE=0 (on an H100 the predicate matters at H=16 qo >= 8 and H=32
# qo >= 4); the 32 / 64-head rows with the H200's rule (evict-normal stream and unpromoted maps up
# to 64 heads; "speedup" > 1: the variant is faster); the full grid with the peers; the GPU suite.
V1="-DMLAW_SM90_KV_FIRST_MULTI_TILE=0"
V2="-DMLAW_SM90_KV_NORMAL_MAX_HEADS=64 -DMLAW_SM90_KV_PROMOTION_NONE_MAX_HEADS=64"
B=benchmarks
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases h64mtp --variant='$V1'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases h32 --variant='$V2'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases h32 --flush clean --variant='$V2'" \
  "python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s32-h100-final" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
