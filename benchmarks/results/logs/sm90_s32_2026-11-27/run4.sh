#!/usr/bin/env bash
# Session 32, device call 4 (2 GPUs): the GPU suite with the build of one KV-stream rule (the
# 2-GPU tests included: kernels follow the wrapper's device, context-parallel decode under
# torchrun); CTA spans (-DMLAW_SM90_TRACE=1 build, raw arrays saved as spans_*.npy) of the
# middle rows and a memory row after a flush like do_bench's (and one warm): are the late CTAs one request's or spread
# over all of them (whether tiles claimed at run time within a request's CTAs could even them)?
T="-DMLAW_SM90_TRACE=1"
B=benchmarks
W="python $B/check_sm90_dev.py --variant='$T' --spans"
S="python $B/check_sm90_dev.py --variant='$T' --cold --spans"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "nvidia-smi -L; python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "$S 16 16 4096" "$W 16 16 4096" "$S 16 64 1024" "$S 16 64 4096" "$S 128 16 4096"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
