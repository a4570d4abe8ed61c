#!/usr/bin/env bash
# Session 35, device call 5, with session 27's narrow_mma_sync.patch applied to the working tree
# (it applies to this kernel with offsets; the default build is unchanged, the consumer path for
# items of <= 16 valid rows on mma.sync is under -DMLAW_SM90_NARROW=1): the 14 checks on that
# build, then A/Bs on the paced cases after do_bench's flush and after a read flush (session 27
# measured it after do_bench's flush only), and on the split / B=1 cases after a read flush.
B=benchmarks
V="--variant=-DMLAW_SM90_NARROW=1"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py $V --ab-cases paced" \
  "python $B/check_sm90_dev.py $V --ab-only --ab-cases paced --flush clean" \
  "python $B/check_sm90_dev.py $V --ab-only --ab-cases split --flush clean"
