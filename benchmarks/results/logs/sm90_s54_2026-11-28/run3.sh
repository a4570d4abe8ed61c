#!/usr/bin/env bash
# Session 54, device call 3 (one H200): the SASS of run 2's build showed every narrow score mma
# preceded by ~4 moves (ptxas kept Q's fragments in scattered registers and assembled each A
# quad, ~140 moves a tile; session 53's code too). Variants that stage Q's fragments in
# fragment order and read each with one 16-byte load (born in a quad): `qfix` (session 53's
# kernel + the staging), `ring4q` (run 2's four slots + pipelining + the staging), `ring4nq`
# (four slots, no pipelining, the staging). The jit cache holds run 2's build; every A/B is
# against it (a speedup below 1: the jit build is faster), `s53final` again for reference.
B=benchmarks
V=.cache/variant
C="python $B/check_sm90_dev.py --fp8 --ab-only --page 64"
TAIL=${TAIL:-14} bash $B/device_run.sh \
  "timeout 150 $C --ab-cases memory --variant=lib:$V/s53final/{dt}.so" \
  "timeout 150 $C --ab-cases memory --variant=lib:$V/qfix/{dt}.so" \
  "timeout 150 $C --ab-cases memory --variant=lib:$V/ring4q/{dt}.so" \
  "timeout 150 $C --ab-cases memory --variant=lib:$V/ring4nq/{dt}.so" \
  "timeout 150 $C --ab-cases split --variant=lib:$V/qfix/{dt}.so" \
  "timeout 150 $C --ab-cases split --variant=lib:$V/ring4q/{dt}.so"
