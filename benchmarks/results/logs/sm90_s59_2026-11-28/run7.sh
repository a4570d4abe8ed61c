#!/usr/bin/env bash
# Session 59, device call 7 (one H200, warm after run 6): run 6's tall build against 64-row
# plans at every TP4 batch size (default: MLA_WRAPPER_SM90_TALL=all; variant: =0, the 64-row
# plans; a speedup below 1 means the tall plans are faster).
B=benchmarks
export MLA_WRAPPER_SM90_TALL=all
C="python $B/check_sm90_dev.py --ab-only --fp8 --ab-cases tp4 --variant=env:MLA_WRAPPER_SM90_TALL=0"
TAIL=${TAIL:-18} bash $B/device_run.sh "timeout 45 $C --page 64" "timeout 45 $C --page 1"
