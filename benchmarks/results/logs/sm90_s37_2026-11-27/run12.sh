#!/usr/bin/env bash
# Session 37, device call 12: memcheck / racecheck on the small cases with the last commit's
# combine; probe, whole rows dealt to the CTAs in turn (a row's kParts units in one CTA,
# -DMLAW_COMBINE_DEAL_ROWS=1) against single units (H=64 B=4 L=2048 ran 1.02x slower than
# session 36 since units are dealt singly). "speedup" > 1: the probe faster.
B=benchmarks
R="--variant=-DMLAW_COMBINE_DEAL_ROWS=1 --ab-only"
MC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
RC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
TAIL=${TAIL:-18} bash $B/device_run.sh "$MC" "$RC" \
  "python $B/check_sm90_dev.py $R --ab-cases short" \
  "python $B/check_sm90_dev.py $R --ab-cases split --flush clean" \
  "python $B/check_sm90_dev.py $R --ab-cases paced"
