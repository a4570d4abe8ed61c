#!/usr/bin/env bash
# Session 38, device call 3: what of the combine's cost is its launch and wait. Probe
# -DMLAW_PROBE_COMBINE_WAIT_ONLY=1 (combine_kernel.cuh: the combine waits for attention and
# exits) against this tree on the split cases (B=1 also from CUDA graphs); both probes on the
# middle rows.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant="
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "${C}'-DMLAW_PROBE_COMBINE_WAIT_ONLY=1' --ab-cases split" \
  "${C}'-DMLAW_PROBE_COMBINE_WAIT_ONLY=1' --ab-cases memory" \
  "${C}'-DMLAW_SM90_PROBE_NO_COMBINE=1' --ab-cases memory"
