#!/usr/bin/env bash
# Session 33, device call 13: the attention launched with programmatic stream serialization
# (-DMLAW_SM90_PDL=1; both roles run griddepcontrol.wait after their plan reads, before the
# page table, Q, KV and any store), so its start overlaps the stream's previous kernel: the
# checks on that build; A/B against the default after do_bench's flush (the previous kernel:
# the flush), and with a copy kernel writing the query rows right before each run()
# (--preceded, as a model's projection does). "speedup" > 1: the variant is faster.
B=benchmarks
V="-DMLAW_SM90_PDL=1"
A="python $B/check_sm90_dev.py --ab-only --variant='$V'"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant='$V' --ab-cases split" \
  "$A --ab-cases memory" \
  "$A --ab-cases split --preceded" \
  "$A --ab-cases memory --preceded" \
  "$A --ab-cases compute --preceded"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
