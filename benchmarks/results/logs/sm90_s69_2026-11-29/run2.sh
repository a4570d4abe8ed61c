#!/usr/bin/env bash
# Session 69, device call 2 (one H200): the e4m3 wide instance's cp.async tiles with the tokens
# j % 8 == 0 as bulk copies (-DMLAW_SM90_BULK_ROWS=1 of this session's form, 40 copies a tile
# beside 2016 cp.async requests; built here into .cache/variant/bulk8): fp8 checks (then the
# page-64 grid A/B), A/B at page 1 (h128, compute, h32), the A/A control (lib:self) at page 1.
cp .cache/whlfi/*.whl .whl/ 2>/dev/null
B=benchmarks
V=--variant=lib:.cache/variant/bulk8/{dt}.so
A="python $B/check_sm90_dev.py --ab-only --fp8 --page 1"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 170 python $B/check_sm90_dev.py --backend sm90 --fp8 $V" \
  "timeout 90 $A $V --ab-cases h128" \
  "timeout 90 $A --variant=lib:self --ab-cases h128" \
  "timeout 90 $A $V --ab-cases compute" \
  "timeout 120 $A $V --ab-cases h32"
