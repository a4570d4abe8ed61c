#!/usr/bin/env bash
# Session 64, device call 7 (one H200): run 6's early-KV build hung (every check trapped at the
# ring's wait timeout): the consumer computed cta_lone_busy, whose CtaStart words come by
# whole-warp shuffles, in lane 0 alone. Fixed (warp 0 whole computes it; lane 0 issues). Checks
# of the fixed default libraries, then (only if they pass) A/B against -DMLAW_SM90_EARLY_KV=0
# builds of the same tree (.cache/variant/noearly16, noearly8; speedup < 1: early KV faster).
B=benchmarks
C="python $B/check_sm90_dev.py"
V16="--variant=lib:.cache/variant/noearly16/{dt}.so"
V8="--variant=lib:.cache/variant/noearly8/{dt}.so"
OK=/tmp/checks_ok
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 60 $C && touch $OK.16" \
  "test -f $OK.16 && timeout 60 $C --fp8 && touch $OK.8" \
  "test -f $OK.8 && timeout 80 $C --ab-only --fp8 --ab-cases narrow $V8" \
  "test -f $OK.8 && timeout 50 $C --ab-only --fp8 --ab-cases grid $V8" \
  "test -f $OK.16 && timeout 50 $C --ab-only --ab-cases grid $V16" \
  "test -f $OK.16 && timeout 40 $C --ab-only --ab-cases split $V16"
