#!/usr/bin/env bash
# Session 49, device call 3 (one H200): why an e4m3 item's Q lands ~4400 clocks later than a
# 16-bit one's (run 2's traces at H=128 B=64 L=4096: 7492 against 3093 clocks from its issue).
# Suspect: the L2 prefetch of the item's first tile (kE4m3PrefetchL2), issued right before the
# same tile's loads, queued in the TMA unit with Q's boxes. Traces of the landed build, of one
# without the prefetch (E4M3_PREFETCH=0), and of the candidate that skips a tile's prefetch when
# its loads follow at once (no widening between: pfskip.patch), at H=128 B=64 L=4096 and B=1
# L=1024; then A/Bs of the candidate and of no prefetch against the landed build.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 60 $C --page 64 --trace 128 64 4096 --variant=lib:$V/trace_e4/{dt}.so" \
  "timeout 60 $C --page 64 --trace 128 64 4096 --variant=lib:$V/trace_e4_nopf/{dt}.so" \
  "timeout 60 $C --page 64 --trace 128 64 4096 --variant=lib:$V/trace_e4pf1/{dt}.so" \
  "timeout 60 $C --page 64 --trace 128 1 1024 --variant=lib:$V/trace_e4/{dt}.so" \
  "timeout 60 $C --page 64 --trace 128 1 1024 --variant=lib:$V/trace_e4_nopf/{dt}.so" \
  "timeout 60 $C --page 64 --trace 128 1 1024 --variant=lib:$V/trace_e4pf1/{dt}.so" \
  "timeout 120 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/e4pf1/{dt}.so" \
  "timeout 120 $C --ab-only --page 64 --ab-cases grid --variant=lib:$V/e4pf1/{dt}.so" \
  "timeout 120 $C --ab-only --page 64 --ab-cases split --variant=lib:$V/e4nopf/{dt}.so"
