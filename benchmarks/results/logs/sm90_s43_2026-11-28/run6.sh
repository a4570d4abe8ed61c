#!/usr/bin/env bash
# Session 43, device call 6 (one GPU): where B=1 loses ~1.7 us to session 42's e4m3 build (run
# 5, graph replay H=128 L=1024 14.1 against 12.4 us; without the Q conversion 11.8, run 4).
# Traces with a new event 29 (Q converted) and each tile's bytes landed / widened (27 / 28):
# this build at B=1 and B=128, session 42's build at B=1.
B=benchmarks
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --fp8 --trace 128 1 1024 --variant=lib:.cache/jit/e4m3trace/{dt}.so" \
  "timeout 60 $C --fp8 --trace 16 1 1024 --variant=lib:.cache/jit/e4m3trace/{dt}.so" \
  "timeout 60 $C --fp8 --trace 128 1 1024 --variant=lib:.cache/jit/e4m3oldtrace/{dt}.so" \
  "timeout 60 $C --fp8 --trace 128 128 4096 --variant=lib:.cache/jit/e4m3trace/{dt}.so"
