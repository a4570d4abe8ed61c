#!/usr/bin/env bash
# Session 53, device call 8 (one H200): the narrow tile's next scores computed beside its P V
# (-DMLAW_SM90_NARROW_PIPE=1, variant `pipe`: tile i + 1's K reads, widening and score mma.sync
# in the same straight-line block as tile i's P V; the last tile recomputes its own, unused),
# against the final libraries (the jit cache): the 14 fp8 checks on the variant, then A/Bs (a
# speedup above 1 means the variant is faster).
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8"
TAIL=${TAIL:-20} bash $B/device_run.sh \
  "timeout 100 $C --page 64 --variant=lib:$V/pipe/{dt}.so" \
  "timeout 100 $C --ab-only --page 64 --ab-cases memory --variant=lib:$V/pipe/{dt}.so" \
  "timeout 60 $C --ab-only --page 1 --ab-cases split --variant=lib:$V/pipe/{dt}.so"
