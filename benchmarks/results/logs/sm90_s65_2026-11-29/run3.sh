#!/usr/bin/env bash
# Session 65, device call 6 (one H200): the narrow plans (decode over an fp8 cache with 8 or 16
# heads planned in 16-row tiles, run by the e4m3 library's kNarrowPlans instance: no wgmma
# path). The whole GPU suite on this tree's libraries (carried), racecheck and memcheck on the
# small fp8 cases, then A/B in one process: the 64-row plans (MLA_WRAPPER_SM90_NARROW_PLANS=0,
# the kNarrowMixed instance as landed) as the default against the narrow plans as the variant
# (above 1: the narrow plans faster), the narrow set twice and the fp8 grid.
B=benchmarks
C="python $B/check_sm90_dev.py"
S="compute-sanitizer --error-exitcode 1"
V="--variant=env:MLA_WRAPPER_SM90_NARROW_PLANS=1"
export MLA_WRAPPER_SM90_NARROW_PLANS=0
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "MLA_WRAPPER_SM90_NARROW_PLANS= timeout 420 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "MLA_WRAPPER_SM90_NARROW_PLANS= timeout 130 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "MLA_WRAPPER_SM90_NARROW_PLANS= timeout 50 $S --tool memcheck python $B/check_sm90_dev.py --backend sm90 --small --fp8" \
  "timeout 60 $C --ab-only --fp8 --ab-cases narrow $V" \
  "timeout 60 $C --ab-only --fp8 --ab-cases narrow $V" \
  "timeout 120 $C --ab-only --fp8 --ab-cases grid $V"
