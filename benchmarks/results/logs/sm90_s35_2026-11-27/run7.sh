#!/usr/bin/env bash
# Session 35, device call 7: where the no-math probe's 4.5 us on H=16 B=16 L=4096 after a read
# flush come from. CTA spans (trace builds, -DMLAW_SM90_TRACE=1) of one cold run after a read
# flush and after a dirty flush, with and without -DMLAW_SM90_PROBE_NO_MATH=1.
B=benchmarks
T="-DMLAW_SM90_TRACE=1"
steps=()
for f in clean dirty; do
  for v in "$T" "$T -DMLAW_SM90_PROBE_NO_MATH=1"; do
    steps+=("python $B/check_sm90_dev.py --variant='$v' --spans 16 16 4096 --cold --flush $f")
  done
done
TAIL=${TAIL:-14} bash $B/device_run.sh "${steps[@]}"
