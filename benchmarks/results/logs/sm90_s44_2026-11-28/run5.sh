#!/usr/bin/env bash
# Session 44, device call 5 (one GPU): run 4's dry run left the conversion at ~3000-3400 clocks
# with a warm instruction cache and an idle producer (not code fetch), whatever the work (H=16:
# at most 5 chunks a thread). Probe trace builds (wrong results), B=1 L=1024 at H=16 and 128:
# t_p1 no fence.proxy.async after the conversion, t_p2 no conversion (PROBE_NO_QF16), t_p3 no
# loads of the Q tile, t_p4 no barrier between the maxima and the stores; t_nodry the shipped
# conversion (run 4's).
B=benchmarks
C="python $B/check_sm90_dev.py --fp8 --trace"
steps=()
for v in t_nodry t_p1 t_p2 t_p3 t_p4; do
  for h in 16 128; do steps+=("timeout 60 $C $h 1 1024 --variant=lib:.cache/jit/$v/{dt}.so"); done
done
TAIL=${TAIL:-8} bash $B/device_run.sh "${steps[@]}"
