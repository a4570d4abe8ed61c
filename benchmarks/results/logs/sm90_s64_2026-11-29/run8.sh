#!/usr/bin/env bash
# Session 64, device call 8 (one H200): run 5's producer-first layout (producer_first.patch)
# again, to tell its effect on the long e4m3 rows from the noise (run 5: B=128 L=16384 0.974x
# and 1.008x in two sets, one cold span run ending ~4 us later): the e4m3 narrow A/B set three
# times and the grid once against the landed library (.cache/variant/swap8), and cold spans of
# the probe builds with (tr8ps) and without (tr8p) the swap, twice each.
B=benchmarks
C="python $B/check_sm90_dev.py"
V="--variant=lib:.cache/variant/swap8/{dt}.so"
S="--spans 16 64 4096 --cold --fp8"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 45 $C --ab-only --fp8 --ab-cases narrow $V" \
  "timeout 45 $C $S --variant=lib:.cache/variant/tr8p/{dt}.so" \
  "timeout 45 $C $S --variant=lib:.cache/variant/tr8ps/{dt}.so" \
  "timeout 45 $C --ab-only --fp8 --ab-cases narrow $V" \
  "timeout 45 $C $S --variant=lib:.cache/variant/tr8ps/{dt}.so" \
  "timeout 45 $C $S --variant=lib:.cache/variant/tr8p/{dt}.so" \
  "timeout 45 $C --ab-only --fp8 --ab-cases narrow $V" \
  "timeout 45 $C --ab-only --fp8 --ab-cases grid $V"
