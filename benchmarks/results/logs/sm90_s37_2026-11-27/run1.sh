#!/usr/bin/env bash
# Session 37, device call 1: (a) the combine's dry pass (its first warp per CTA runs the merge
# code once, loads and stores off, before griddepcontrol.wait: the merge's code fetched while
# attention runs); (b) CtaStart's plan words by cp.async into shared memory (setmaxnreg no
# longer waits for them). Checks; A/B against session 36's kernel (lib:old_s36, both changes)
# and against this tree without the dry pass ("speedup" < 1: this tree is faster).
B=benchmarks
O="--variant=lib:.cache/old_s36/{dt}.so --ab-only"
D="--variant=-DMLAW_COMBINE_DRY_PASS=0 --ab-only"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant=lib:.cache/old_s36/{dt}.so --ab-cases split" \
  "python $B/check_sm90_dev.py $O --ab-cases split --flush clean" \
  "python $B/check_sm90_dev.py $D --ab-cases split --flush clean" \
  "python $B/check_sm90_dev.py $D --ab-cases split" \
  "python $B/check_sm90_dev.py $O --ab-cases short" \
  "python $B/check_sm90_dev.py $O --ab-cases paced --flush clean"
