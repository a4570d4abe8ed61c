#!/usr/bin/env bash
# Session 66, device call 6 (one H200): where the A/B slot bias of runs 3-5 comes from. One
# library in both slots (env:MLAW_AA=1 sets a variable nothing reads: the same library, another
# wrapper), each wrapper on a float workspace of its own (as every A/B so far) or both on one
# (--ab-ws shared: the partial slots at the same addresses); then lib:self on one workspace.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4"
TAIL=${TAIL:-30} bash $B/device_run.sh "timeout 80 $C --variant=env:MLAW_AA=1" \
  "timeout 80 $C --variant=env:MLAW_AA=1 --ab-ws shared" \
  "timeout 80 $C --variant=lib:self --ab-ws shared"
