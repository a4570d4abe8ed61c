#!/usr/bin/env bash
# Session 64, device call 4 (one H200): where the e4m3 narrow producer's late start after the
# dirty flush goes (run 3: its first record at ~3.05 us in every CTA, the 16-bit kernel's ~1.3):
# spans of probe builds (.cache/variant/tr16p, tr8p: -DMLAW_SM90_TRACE=1 with four more span
# events, not landed: 8 producer past setmaxnreg, 9 past its grid-dependency wait, 10 its
# first page ids in hand, 11 the scorer's Q converted; in narrow items 3 = Q's fragments
# staged, 2 = the first tile's bytes landed).
B=benchmarks
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-6} bash $B/device_run.sh \
  "timeout 60 $C --spans 16 64 4096 --cold --fp8 --variant=lib:.cache/variant/tr8p/{dt}.so" \
  "timeout 60 $C --spans 16 64 4096 --cold --variant=lib:.cache/variant/tr16p/{dt}.so" \
  "timeout 60 $C --spans 16 64 4096 --fp8 --variant=lib:.cache/variant/tr8p/{dt}.so" \
  "timeout 60 $C --spans 16 128 4096 --cold --fp8 --variant=lib:.cache/variant/tr8p/{dt}.so"
