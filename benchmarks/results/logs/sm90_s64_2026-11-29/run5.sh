#!/usr/bin/env bash
# Session 64, device call 5 (one H200): run 4 put the cold e4m3 narrow producer's delay before its
# first stage in every step of its own code (past setmaxnreg at ~2.0 us against ~0.8 in the
# 16-bit kernel), while its code sits ~87 KB into the function (16-bit: ~52 KB), after the
# consumers'. Variant: the kernel's role branch written consumer-first, so that ptxas lays the
# producer's code out first (at ~1.3 KB; the consumers' then at ~31 KB e4m3 / ~17 KB 16-bit):
# .cache/variant/swap8 (e4m3), swap16 (16-bit), tr8ps (swap8 + trace + run 4's span probes).
# Spans, then A/B (do_bench, dirty flush) against the landed libraries.
B=benchmarks
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "timeout 60 $C --spans 16 64 4096 --cold --fp8 --variant=lib:.cache/variant/tr8ps/{dt}.so" \
  "timeout 200 $C --ab-only --fp8 --ab-cases narrow --variant=lib:.cache/variant/swap8/{dt}.so" \
  "timeout 200 $C --ab-only --fp8 --ab-cases grid --variant=lib:.cache/variant/swap8/{dt}.so" \
  "timeout 200 $C --ab-only --ab-cases grid --variant=lib:.cache/variant/swap16/{dt}.so" \
  "timeout 200 $C --ab-only --ab-cases split --variant=lib:.cache/variant/swap16/{dt}.so"
