#!/usr/bin/env bash
# Session 61, device call 2 (one H200): TP4 (fp8, H=17-32) tall plans (`MLA_WRAPPER_SM90_TALL=all`)
# against 64-row plans (variant `=0`; below 1: tall faster) at pages 64, 16 and 1, on the landed
# tree (register-widened tall, session 60), for the rule that picks the tall instance.
B=benchmarks
C="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4 --variant=env:MLA_WRAPPER_SM90_TALL=0"
export MLA_WRAPPER_SM90_TALL=all
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "timeout 60 $C --page 64" "timeout 60 $C --page 16" "timeout 60 $C --page 1"
