#!/usr/bin/env bash
# Session 53, device call 7 (one H200): what bounds the raw-reading narrow tile now (ncu of one
# launch, fp8 H=16 B=64 L=4096 page 64: speed of light, compute and memory tables, warp states,
# instruction mix), for the next step.
B=benchmarks
NCU="ncu --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section WarpStateStats --section InstructionStats --section SchedulerStats --csv --page details -k regex:mla_sm90 --launch-skip 1 --launch-count 1"
TAIL=${TAIL:-10} bash $B/device_run.sh \
  "$NCU python $B/check_sm90_dev.py --backend sm90 --fp8 --page 64 --profile 16 64 4096"
