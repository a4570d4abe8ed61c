#!/usr/bin/env bash
# Session 52, device call 5 (one H200): the narrow path with Q's A fragments held in registers
# through the item (-DMLAW_SM90_NARROW_QREG=1, .cache/variant/qreg) against 6696290's library
# (the jit cache): "speedup" above 1: the variant is faster. Run 4's ncu put the narrow H=16
# tile at 74% of the L1/shared-memory throughput; Q's per-tile re-read is ~37 of ~337 KB of
# shared-memory traffic a tile.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8 --ab-only"
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 150 $C --page 64 --ab-cases memory --variant=lib:$V/qreg/{dt}.so" \
  "timeout 150 $C --page 1 --ab-cases memory --variant=lib:$V/qreg/{dt}.so" \
  "timeout 150 $C --page 64 --ab-cases split --variant=lib:$V/qreg/{dt}.so"
