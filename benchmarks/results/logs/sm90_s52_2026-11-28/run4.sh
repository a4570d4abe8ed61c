#!/usr/bin/env bash
# Session 52, device call 4 (one H200): what bounds the e4m3 narrow instance's H=16 tile (the
# shipped 6696290 library, jit cache rebuilt from the reverted tree): ncu's SpeedOfLight,
# MemoryWorkloadAnalysis tables and ComputeWorkloadAnalysis of one launch at H=16 B=64 L=4096
# page 64 (fp8), next to the 16-bit kernel and the fp8 kernel at H=128 on the same shape.
B=benchmarks
NCU="ncu --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --csv --page details -k regex:mla_sm90 --launch-skip 1 --launch-count 1"
TAIL=${TAIL:-10} bash $B/device_run.sh \
  "$NCU python $B/check_sm90_dev.py --backend sm90 --fp8 --page 64 --profile 16 64 4096" \
  "$NCU python $B/check_sm90_dev.py --backend sm90 --page 64 --profile 16 64 4096" \
  "$NCU python $B/check_sm90_dev.py --backend sm90 --fp8 --page 64 --profile 128 64 4096"
