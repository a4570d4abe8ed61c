#!/usr/bin/env bash
# Session 64, device call 3 (one H200): run 2 found the e4m3 narrow instance's producer getting
# its first record ~1.7 us and its first stage ~3 us later than the 16-bit kernel's after
# do_bench's dirty flush (H=16 B=64-128 L=4096-16384), while the consumers have Q at the same
# time (~2.1 us). Per-CTA clock64 traces of one cold run (raw events dumped for a look at the
# start: MLAW_TRACE_DUMP), e4m3 and 16-bit, and of a warm run, H=16 B=64 L=4096.
B=benchmarks
C="python $B/check_sm90_dev.py"
O=${OUT:-/tmp/out}
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "MLAW_TRACE_DUMP=$O/tr8_cold.npy timeout 60 $C --trace 16 64 4096 --cold --fp8 --variant=lib:.cache/variant/tr8/{dt}.so" \
  "MLAW_TRACE_DUMP=$O/tr16_cold.npy timeout 60 $C --trace 16 64 4096 --cold --variant=lib:.cache/variant/tr16/{dt}.so" \
  "MLAW_TRACE_DUMP=$O/tr8_warm.npy timeout 60 $C --trace 16 64 4096 --fp8 --variant=lib:.cache/variant/tr8/{dt}.so" \
  "MLAW_TRACE_DUMP=$O/tr16_warm.npy timeout 60 $C --trace 16 64 4096 --variant=lib:.cache/variant/tr16/{dt}.so" \
  "timeout 60 $C --spans 16 64 4096 --cold --fp8 --variant=lib:.cache/variant/tr8/{dt}.so" \
  "timeout 60 $C --spans 16 64 4096 --fp8 --variant=lib:.cache/variant/tr8/{dt}.so" \
  "timeout 60 $C --spans 16 64 4096 --variant=lib:.cache/variant/tr16/{dt}.so"
