#!/usr/bin/env bash
# Session 52, device call 3 (one H200): traces of run 2's spare-buffer build (trace52, with the
# spare tiles' issue as events 14-15) and of 6696290 (trace_head), H=16 B=128 L=16384 page 64;
# the raw events saved as $OUT/trace_*.npy (check_sm90_dev.py, MLAW_TRACE_DUMP).
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8 --page 64"
TAIL=${TAIL:-30} bash $B/device_run.sh \
  "MLAW_TRACE_DUMP=\$OUT/trace_spare.npy timeout 60 $C --trace 16 128 16384 --variant=lib:$V/trace52/{dt}.so" \
  "MLAW_TRACE_DUMP=\$OUT/trace_head.npy timeout 60 $C --trace 16 128 16384 --variant=lib:$V/trace_head/{dt}.so"
