#!/usr/bin/env bash
# Session 37, device call 5 (asks for an H200; on an H100 a quick exit): this tree's grid rows
# against fa3 and FlashMLA on the H200 (the device where H=16 B=16 L=4096 missed 1.1x), the
# middle and latency rows twice more, then the checks and an A/B against session 36's kernel.
B=benchmarks
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "device: $dev"
case "$dev" in *H200*) ;; *) echo "not an H200: quick exit"; exit 0 ;; esac
O="--variant=lib:.cache/old_s36/{dt}.so --ab-only"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "python $B/bench_decode.py --backends sm90,fi_fa3,flashmla --cases middle,latency,compute,memory --tag s37-h200-grid" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency --tag s37-h200-middle" \
  "python $B/bench_decode.py --backends sm90,fi_fa3 --cases middle,latency --tag s37-h200-middle" \
  "python $B/check_sm90_dev.py --variant=lib:.cache/old_s36/{dt}.so --ab-cases paced"
