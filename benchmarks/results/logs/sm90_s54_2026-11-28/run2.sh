#!/usr/bin/env bash
# Session 54, device call 2 (one H200): run 1's pipelined narrow tiles waited for the next
# tile ahead of this tile's P V (middle rows 1.06-1.09x slower, long rows equal); now a warp
# computes the next tile's scores beside this P V only where that tile has landed (a test, no
# wait), else this P V alone first. The fp8 tests, A/Bs against session 53's final e4m3
# libraries (`s53final`; a speedup below 1: this build is faster), and traces of H=16 B=64
# L=4096 with this build (`ring4t`; session 53 run 2 has the earlier build's).
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 300 python -m pytest -q -rfs -p no:cacheprovider -m gpu tests/test_fp8_kv.py" \
  "timeout 150 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/s53final/{dt}.so" \
  "timeout 150 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/s53final/{dt}.so" \
  "timeout 150 $C --ab-only --page 1 --ab-cases memory --variant=lib:$V/s53final/{dt}.so" \
  "timeout 60 $C --trace 16 64 4096 --variant=lib:$V/ring4t/{dt}.so"
