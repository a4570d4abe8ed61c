#!/usr/bin/env bash
# Session 33, device call 12 (H100): CTA spans (-DMLAW_SM90_TRACE=1, global timer) of the rows
# where fa3 leads after a read flush (H=16 B=16 L=4096; B=64 L=1024 ties), after do_bench's
# flush and after a read flush, with this device's paced loads and without (PACED_MAX_TILES=0);
# the CUDA-graph timeline of H=16 B=16 L=4096 (sm90 against fa3).
B=benchmarks
S="python $B/check_sm90_dev.py --cold"
T="-DMLAW_SM90_TRACE=1"
N="-DMLAW_SM90_TRACE=1 -DMLAW_SM90_PACED_MAX_TILES=0"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "$S --spans 16 16 4096 --variant='$T'" \
  "$S --spans 16 16 4096 --flush clean --variant='$T'" \
  "$S --spans 16 16 4096 --flush clean --variant='$N'" \
  "$S --spans 16 64 1024 --flush clean --variant='$T'" \
  "python $B/check_sm90_dev.py --timeline 16 16 4096"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
