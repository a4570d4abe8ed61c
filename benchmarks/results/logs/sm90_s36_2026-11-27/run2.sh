#!/usr/bin/env bash
# Session 36, device call 2: where a CTA's first ~2.7 us go at H=16 B=16 L=4096 (run 1: not the
# page-id read). CTA spans with two new events (the producer's first record in hand, the
# scorer's Q landed), after a read flush, with and without the kernel's code put back in L2 by
# another plan's tiny run (--warm-code), with and without the math (no-math probe).
B=benchmarks
T=-DMLAW_SM90_TRACE=1
steps=()
for v in "$T" "$T -DMLAW_SM90_PROBE_NO_MATH=1"; do
  for f in clean dirty; do
    for wc in "" "--warm-code"; do
      steps+=("python $B/check_sm90_dev.py --variant='$v' --spans 16 16 4096 --cold --flush $f $wc")
    done
  done
done
TAIL=${TAIL:-10} bash $B/device_run.sh "${steps[@]}"
