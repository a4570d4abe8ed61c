#!/usr/bin/env bash
# Session 33, device call 21 (H100): the CTA's first plan lines (its guessed work record,
# cta_work_indptr) prefetched into L2 as the kernel's first instructions
# (-DMLAW_SM90_EARLY_PLAN_PREFETCH=1), so that their DRAM latency overlaps the fetch of the
# prologue's code, the barrier set-up and setmaxnreg; A/B after do_bench's flush and after a
# read flush. "speedup" > 1: the variant is faster.
B=benchmarks
A="python $B/check_sm90_dev.py --ab-only --variant='-DMLAW_SM90_EARLY_PLAN_PREFETCH=1'"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "$A --ab-cases split" \
  "$A --ab-cases memory" \
  "$A --ab-cases split --flush clean"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
