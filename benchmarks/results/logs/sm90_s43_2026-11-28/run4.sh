#!/usr/bin/env bash
# Session 43, device call 4 (one GPU): why the f16-GEMM e4m3 build runs B=1 ~2 us slower than
# session 42's (run 3: H=128 L=1024 17.3 against 15.6 us, graph 14.0 against 12.0). B=1 traces
# of this build, of session 42's e4m3 build (98fd48c, .cache/jit/e4m3oldtrace) and of the
# 16-bit kernel; A/B on the split cases against session 42's build and against this build
# with Q left unconverted (-DMLAW_SM90_PROBE_NO_QF16=1, wrong results: the conversion's cost).
B=benchmarks
C="python $B/check_sm90_dev.py"
TAIL=${TAIL:-40} bash $B/device_run.sh \
  "timeout 60 $C --fp8 --trace 128 1 1024 --variant=lib:.cache/jit/e4m3trace/{dt}.so" \
  "timeout 60 $C --fp8 --trace 128 1 1024 --variant=lib:.cache/jit/e4m3oldtrace/{dt}.so" \
  "timeout 60 $C --trace 128 1 1024 --variant=lib:.cache/jit/bf16trace/{dt}.so" \
  "timeout 120 $C --fp8 --ab-only --variant=lib:.cache/jit/e4m3old/{dt}.so --ab-cases split" \
  "timeout 120 $C --fp8 --ab-only --variant=lib:.cache/jit/e4m3noq/{dt}.so --ab-cases split"
