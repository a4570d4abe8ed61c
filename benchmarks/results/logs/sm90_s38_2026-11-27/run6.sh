#!/usr/bin/env bash
# Session 38, device call 6 (an H100): this tree (the few-merges combine instance up to 16
# merges) against itself at 2 (-DMLAW_COMBINE_FEW_MERGES=2: speedup > 1 means 2 is faster)
# on the short, paced and split rows; the checks, memcheck / racecheck on the small cases and
# the GPU suite.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --variant=-DMLAW_COMBINE_FEW_MERGES=2"
MC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
RC="PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool racecheck --error-exitcode 1 python $B/check_sm90_dev.py --backend sm90 --small"
TAIL=${TAIL:-18} bash $B/device_run.sh \
  "$C --ab-cases short" "$C --ab-cases paced" "$C --ab-cases split" \
  "python $B/check_sm90_dev.py" "$MC" "$RC" \
  "timeout 280 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests"
