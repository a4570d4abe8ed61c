#!/usr/bin/env bash
# Session 32, device call 9 (H200): the build where a paced CTA's tiles after its first two go
# whole on a device like the H200 (launcher.cuh paced_tiles_for; every tile stays paced on an
# H100): the checks; memcheck and racecheck on the small cases (now with paced CTAs of 4 tiles);
# the paced rows against every tile paced (-DMLAW_SM90_PACED_FIRST_TILES=0; "speedup" > 1: the
# old rule is faster) after do_bench's flush and after a read flush; the full grid; the GPU suite.
V="-DMLAW_SM90_PACED_FIRST_TILES=0"
B=benchmarks
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 280 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
  "timeout 280 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases paced --variant='$V'" \
  "python $B/check_sm90_dev.py --ab-only --ab-cases paced --flush clean --variant='$V'" \
  "python $B/bench_decode.py --backends sm80,sm90,fi_fa2,fi_fa3,flashmla --tag s32-h200-final2" \
  "python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
