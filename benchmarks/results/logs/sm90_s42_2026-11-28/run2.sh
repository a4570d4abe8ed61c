#!/usr/bin/env bash
# Session 42, device call 2 (one GPU): an fp8 cache's tile on one mbarrier per TMA box
# (-DMLAW_SM90_E4M3_BOX_BARS=1, .cache/jit/ab_box: the producer widens a box's columns while
# the later boxes land) against the default build (one barrier a tile; its SASS is session 41's):
# fp8 checks of the variant, A/B over the grid and compute cases; then per-tile traces of both
# fp8 builds and of the 16-bit kernel (where a tile's period goes: load, widening, math).
B=benchmarks
C="python $B/check_sm90_dev.py"
V="--variant=lib:.cache/jit/ab_box/{dt}.so"
T="timeout 60 $C --fp8"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 150 $C --fp8 $V --ab-cases grid" \
  "timeout 120 $C --fp8 --ab-only $V --ab-cases compute" \
  "$T --trace 128 128 4096 --variant=lib:.cache/jit/tr_e4m3/{dt}.so" \
  "$T --trace 128 128 4096 --variant=lib:.cache/jit/tr_box/{dt}.so" \
  "$T --trace 16 128 16384 --variant=lib:.cache/jit/tr_e4m3/{dt}.so" \
  "$T --trace 16 128 16384 --variant=lib:.cache/jit/tr_box/{dt}.so" \
  "timeout 60 $C --trace 128 128 4096 --variant=lib:.cache/jit/tr_16/{dt}.so" \
  "timeout 60 $C --trace 16 128 16384 --variant=lib:.cache/jit/tr_16/{dt}.so"
