#!/usr/bin/env bash
# Session 44, device call 1 (one GPU): the e4m3 Q conversion (q_to_f16) with every load of a
# pass in flight. Two variants against the committed build (session 43 run 9's kernel):
# qall (the landed tile read twice, 18 loads in flight a pass) and qkeep (read once, the 18
# chunks kept in registers across the warpgroups' barrier). Their fp8 checks, A/B on the split
# (B=1 and small batch) and compute rows, B=1 traces of all three (event 29: Q converted).
B=benchmarks
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --fp8 --variant=lib:.cache/jit/qkeep/{dt}.so" \
  "timeout 60 $C --fp8 --variant=lib:.cache/jit/qall/{dt}.so" \
  "timeout 90 $C --fp8 --ab-only --variant=lib:.cache/jit/qkeep/{dt}.so --ab-cases split" \
  "timeout 90 $C --fp8 --ab-only --variant=lib:.cache/jit/qall/{dt}.so --ab-cases split" \
  "timeout 90 $C --fp8 --ab-only --variant=lib:.cache/jit/qkeep/{dt}.so --ab-cases compute" \
  "timeout 60 $C --fp8 --trace 128 1 1024 --variant=lib:.cache/jit/t_cur/{dt}.so" \
  "timeout 60 $C --fp8 --trace 128 1 1024 --variant=lib:.cache/jit/t_qkeep/{dt}.so" \
  "timeout 60 $C --fp8 --trace 128 1 1024 --variant=lib:.cache/jit/t_qall/{dt}.so" \
  "timeout 60 $C --fp8 --trace 16 1 1024 --variant=lib:.cache/jit/t_cur/{dt}.so" \
  "timeout 60 $C --fp8 --trace 16 1 1024 --variant=lib:.cache/jit/t_qkeep/{dt}.so"
