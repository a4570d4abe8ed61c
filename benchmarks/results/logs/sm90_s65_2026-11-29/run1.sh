#!/usr/bin/env bash
# Session 65, device call 1 (one H200): does the producer's code offset in the kernel function
# decide its cold start? Cold spans (after do_bench's dirty flush) of trace builds with
# session 64's extra span events (probe.patch): tr8 (e4m3 library: narrow instance's producer
# at 90.6 KB, tall 90.2 KB, plain Q-TMA 72.0 KB), tr8n (-DMLAW_SM90_PROBE_NARROW_ONLY=1: every
# item of the narrow instance narrow, its producer at 72.0 KB), tr16 (16-bit: 54.4 KB); then
# the narrow A/B set of the non-trace narrow-only build (nonly, producer at 68.5 KB; landed
# 84.5 KB; every case there has <= 16 rows, so its results are right) against the landed one.
B=benchmarks
C="python $B/check_sm90_dev.py"
V=.cache/variant
TAIL=${TAIL:-12} bash $B/device_run.sh \
  "timeout 45 $C --spans 16 64 4096 --cold --fp8 --variant=lib:$V/tr8/{dt}.so" \
  "timeout 45 $C --spans 16 64 4096 --cold --fp8 --variant=lib:$V/tr8n/{dt}.so" \
  "timeout 45 $C --spans 128 64 4096 --cold --fp8 --variant=lib:$V/tr8/{dt}.so" \
  "timeout 45 $C --spans 32 64 4096 --cold --fp8 --variant=lib:$V/tr8/{dt}.so" \
  "timeout 45 $C --spans 16 64 4096 --cold --variant=lib:$V/tr16/{dt}.so" \
  "timeout 45 $C --spans 16 64 4096 --fp8 --variant=lib:$V/tr8/{dt}.so" \
  "timeout 60 $C --ab-only --fp8 --ab-cases narrow --variant=lib:$V/nonly/{dt}.so"
