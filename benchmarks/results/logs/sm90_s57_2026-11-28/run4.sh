#!/usr/bin/env bash
# Session 57, device call 4 (one H200): run 3's 16-bit racecheck, whose python process ended with
# signal 11 after case 4 of --small (0 hazards reported), again: as run 3 ran it, then with
# PyTorch's caching allocator off, then the same cases without a sanitizer.
B=benchmarks
S="compute-sanitizer --error-exitcode 1"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 120 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 120 $S --tool racecheck python $B/check_sm90_dev.py --backend sm90 --small" \
  "timeout 60 python $B/check_sm90_dev.py --backend sm90 --small"
