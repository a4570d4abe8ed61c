#!/usr/bin/env bash
# Session 54, device call 6 (one H200): the landed build's narrow tile (period 2650 clocks at
# H=16 B=64 L=4096, run 5) — its warps' stall reasons (ncu, one launch), and an A/B of four
# accumulator chains a token block for the partial scores (`chain4`, -DMLAW_SM90_NARROW_CHAINS=4;
# two now): a speedup below 1 means the landed build (the jit cache) is faster.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8 --ab-only --page 64"
NCU="ncu --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio,smsp__inst_executed.sum,smsp__cycles_active.avg --csv --page raw -k regex:mla_sm90 --launch-skip 1 --launch-count 1"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "timeout 150 $C --ab-cases memory --variant=lib:$V/chain4/{dt}.so" \
  "timeout 150 $C --ab-cases split --variant=lib:$V/chain4/{dt}.so" \
  "timeout 120 $NCU python $B/check_sm90_dev.py --backend sm90 --fp8 --page 64 --profile 16 64 4096"
