#!/usr/bin/env bash
# Session 36, device call 8 (asks for an H200; on an H100 a quick exit): this tree's middle and
# latency rows against fa3 on the device where H=16 B=16 L=4096 misses its target, twice after
# do_bench's flush and once after a read flush.
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $dev"
case "$dev" in *H200*) ;; *) echo "not an H200: quick exit"; exit 0 ;; esac
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency --tag s36-h200-middle" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency --tag s36-h200-middle" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency --flush clean --tag s36-h200-clean"
