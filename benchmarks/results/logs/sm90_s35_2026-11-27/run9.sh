#!/usr/bin/env bash
# Session 35, device call 9: the per-tile trace (-DMLAW_SM90_TRACE=1, CTAs 0-3) of one cold run
# of H=16 B=16 L=4096 after a read flush and after do_bench's flush: does the producer wait for
# a free stage (the math on the refill cycle), and how long a paced tile takes from issue to use.
B=benchmarks
T="--variant=-DMLAW_SM90_TRACE=1"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py $T --trace 16 16 4096 --cold --flush clean" \
  "python $B/check_sm90_dev.py $T --trace 16 16 4096 --cold --flush dirty"
