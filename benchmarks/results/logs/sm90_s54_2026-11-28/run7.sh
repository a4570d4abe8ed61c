#!/usr/bin/env bash
# Session 54, device call 7 (one H200): the final build (the narrow Q fragments in register
# quads, 6808208; lazy_max, one helper for both tile loops: every library the same SASS
# instructions up to the max compare's direction and local order). The whole GPU suite, the
# 16-bit checks, and an A/B of the 16-bit grid rows against the build before lazy_max (`s54a`;
# a speedup below 1 means this build is faster).
B=benchmarks
V=.cache/variant
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "timeout 400 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests" \
  "timeout 120 python $B/check_sm90_dev.py" \
  "timeout 150 python $B/check_sm90_dev.py --ab-only --page 64 --ab-cases grid --variant=lib:$V/s54a/{dt}.so"
