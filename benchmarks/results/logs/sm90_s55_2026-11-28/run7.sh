#!/usr/bin/env bash
# Session 55, device call 7 (one H200): run 6's two-row-block narrow tiles lost to the wgmma path
# (H=32 B=64 L=4096 1.05x slower, MTP 16 x 2 1.03x). Its loops were rolled for the register
# budget (score steps, P V steps); with the rows' scales and limits in shared memory every
# unrolling compiles without spills: the score loop unrolled 2 (`u2s`), the P V loop 4 (`u4p`),
# both (`u24`), all (`u44`), and e62439b's library (`base8`), against the jit build (rolled);
# a speedup above 1 means the variant is faster.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8 --ab-only --page 64 --ab-cases pairs"
TAIL=${TAIL:-8} bash $B/device_run.sh \
  "timeout 60 $C --variant=lib:$V/base8/{dt}.so" \
  "timeout 60 $C --variant=lib:$V/u2s/{dt}.so" \
  "timeout 60 $C --variant=lib:$V/u4p/{dt}.so" \
  "timeout 60 $C --variant=lib:$V/u24/{dt}.so" \
  "timeout 60 $C --variant=lib:$V/u44/{dt}.so"
