#!/usr/bin/env bash
# Session 64, device call 6 (one H200): early KV (producer.cuh early_kv_tiles: the CTA's first
# item's first tiles loaded by the consumer thread that issues its Q; 16-bit, narrow and tall
# tiles). Checks of the new default libraries (16-bit and e4m3, NaN-poisoned, fresh data), spans
# of a trace build of it (.cache/variant/tr8e, run 4's probe events), then A/B against the same
# tree built with -DMLAW_SM90_EARLY_KV=0 (.cache/variant/noearly16, noearly8; speedup < 1:
# early KV faster).
B=benchmarks
C="python $B/check_sm90_dev.py"
V16="--variant=lib:.cache/variant/noearly16/{dt}.so"
V8="--variant=lib:.cache/variant/noearly8/{dt}.so"
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "timeout 120 $C" \
  "timeout 120 $C --fp8" \
  "timeout 60 $C --spans 16 64 4096 --cold --fp8 --variant=lib:.cache/variant/tr8e/{dt}.so" \
  "timeout 200 $C --ab-only --fp8 --ab-cases narrow $V8" \
  "timeout 200 $C --ab-only --fp8 --ab-cases grid $V8" \
  "timeout 200 $C --ab-only --fp8 --ab-cases tp4 $V8" \
  "timeout 200 $C --ab-only --ab-cases grid $V16" \
  "timeout 200 $C --ab-only --ab-cases split $V16"
