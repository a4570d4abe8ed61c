#!/usr/bin/env bash
# Session 56, device call 1 (one H200): the narrow instance's L2-prefetch rule (8345ad3: no
# prefetch of a narrow item's e4m3 tiles past kNarrowPrefetchMaxTiles = 16 tiles), A/B'd as a
# rule for the first time. HEAD's build (16) against `pfall` (e62439b's library: every tile
# prefetched), `pf8` and `pf32` (-DMLAW_SM90_NARROW_PREFETCH_MAX_TILES=8 / 32); a speedup
# above 1 means the variant is faster.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8 --ab-only"
steps=()
for v in pfall pf8 pf32; do
  steps+=("timeout 90 $C --page 64 --ab-cases memory --variant=lib:$V/$v/{dt}.so"
          "timeout 90 $C --page 64 --ab-cases split --variant=lib:$V/$v/{dt}.so"
          "timeout 90 $C --page 1 --ab-cases memory --variant=lib:$V/$v/{dt}.so")
done
steps+=("timeout 90 $C --page 64 --ab-cases paced --variant=lib:$V/pfall/{dt}.so")
TAIL=${TAIL:-16} bash $B/device_run.sh "${steps[@]}"
