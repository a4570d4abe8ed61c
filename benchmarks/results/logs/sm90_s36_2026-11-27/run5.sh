#!/usr/bin/env bash
# Session 36, device call 5: the start for a cold instruction cache, second try. The plan's
# first loads are the kernel's first instructions, one word per lane (CtaStart; the role's jump
# into its own code then overlaps their latency), plus run 4's FastDiv and the producer's TMA
# tiles in their own loop. Checks; A/B against the session's starting kernel (lib:old_s35) and
# against the loop split alone (lib:lib_split); "speedup" < 1: this tree is faster. CTA spans.
B=benchmarks
O="--variant=lib:.cache/old_s35/{dt}.so --ab-only"
T=-DMLAW_SM90_TRACE=1
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant=lib:.cache/old_s35/{dt}.so --ab-cases paced" \
  "python $B/check_sm90_dev.py $O --ab-cases paced --flush clean" \
  "python $B/check_sm90_dev.py $O --ab-cases split" \
  "python $B/check_sm90_dev.py $O --ab-cases compute" \
  "python $B/check_sm90_dev.py --variant=lib:.cache/lib_split/{dt}.so --ab-only --ab-cases paced" \
  "python $B/check_sm90_dev.py --variant='$T' --spans 16 16 4096 --cold --flush clean" \
  "python $B/check_sm90_dev.py --variant='$T' --spans 16 16 4096 --cold --flush dirty"
