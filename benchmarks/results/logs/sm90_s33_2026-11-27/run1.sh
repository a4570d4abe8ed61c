#!/usr/bin/env bash
# Session 33, device call 1 (H200): the checks of the build; three A/Bs for the short few-head
# rows (H=16 B=16 L=4096 is 1.08x fa3 against the 1.1x target): the paced maps' descriptors
# prefetched at entry (-DMLAW_SM90_PREFETCH_PACED=1), the combine's plan lines prefetched into L2
# by the attention CTAs (-DMLAW_SM90_PREFETCH_MERGES=1), a paced CTA's first tile whole
# (-DMLAW_SM90_PACED_SKIP=1); each after do_bench's flush and after a read flush. "speedup" > 1:
# the variant is faster. Then the checks of the two prefetches together.
B=benchmarks
A="python $B/check_sm90_dev.py --ab-only"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py" \
  "$A --ab-cases paced --variant='-DMLAW_SM90_PREFETCH_PACED=1'" \
  "$A --ab-cases paced --flush clean --variant='-DMLAW_SM90_PREFETCH_PACED=1'" \
  "$A --ab-cases split --variant='-DMLAW_SM90_PREFETCH_MERGES=1'" \
  "$A --ab-cases split --flush clean --variant='-DMLAW_SM90_PREFETCH_MERGES=1'" \
  "$A --ab-cases paced --variant='-DMLAW_SM90_PACED_SKIP=1'" \
  "$A --ab-cases paced --flush clean --variant='-DMLAW_SM90_PACED_SKIP=1'" \
  "python $B/check_sm90_dev.py --variant='-DMLAW_SM90_PREFETCH_PACED=1 -DMLAW_SM90_PREFETCH_MERGES=1'"
OUT=${OUT:-/tmp/out}
tar -C $OUT -cf $OUT/logs.tar $(cd $OUT && ls step*.log summary.txt) && rm -f $OUT/step*.log
