#!/usr/bin/env bash
# Session 65, device call 9 (one H200): per-tile phase times (--trace, a -DMLAW_SM90_TRACE=1
# build of the final tree, .cache/variant/trnp) at H=16 B=32 L=2048 over the e4m3 cache with
# the 64-row plans (the kNarrowMixed instance) and the narrow plans (kNarrowPlans), warm and
# after do_bench's flush: which part of the narrow-plans instance is slower there (run 5).
B=benchmarks
T="timeout 45 python $B/check_sm90_dev.py --trace 16 32 2048 --fp8 --variant=lib:.cache/variant/trnp/{dt}.so"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "MLA_WRAPPER_SM90_NARROW_PLANS=0 $T" "MLA_WRAPPER_SM90_NARROW_PLANS=1 $T" \
  "MLA_WRAPPER_SM90_NARROW_PLANS=0 $T --cold" "MLA_WRAPPER_SM90_NARROW_PLANS=1 $T --cold"
