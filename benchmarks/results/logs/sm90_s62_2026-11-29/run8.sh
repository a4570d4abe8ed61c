#!/usr/bin/env bash
# Session 62, device call 8 (one H200): run 7's bulk rows ran 0.53x at page 1 (128-byte bulk
# copies landed a tile in ~6900 clocks: ~21 clocks a copy). Here cp.async keeps most 16-byte
# pieces and bulk copies (the TMA unit, beside it) take each token's rope row and the latent box
# rows of tokens j % 8 == 0 (-DMLAW_SM90_BULK_ROWS=1 of this form, .cache/variant/mix): fp8
# checks, A/B at page 1 against the default libraries, the page-1 trace (mixtr).
B=benchmarks
V=--variant=lib:.cache/variant/mix/{dt}.so
A="python $B/check_sm90_dev.py --ab-only --fp8 $V --page 1"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 150 python $B/check_sm90_dev.py --backend sm90 --fp8 $V" \
  "timeout 90 $A --ab-cases compute" \
  "timeout 90 $A --ab-cases h128" \
  "timeout 60 python $B/check_sm90_dev.py --trace 128 64 4096 --page 1 --fp8 --variant=lib:.cache/variant/mixtr/{dt}.so"
