#!/usr/bin/env bash
# Session 36, device call 1: what the dependent page-id read before a CTA's first KV boxes costs.
# Probe (wrong results): the first tile's page ids from the page-table position, as if the plan
# carried them (-DMLAW_SM90_PROBE_PAGE_HINT=1), A/B'd on the paced cases after both flushes and
# on the split cases (B=1 from CUDA graphs too); CTA spans of H=16 B=16 L=4096 with and without it.
B=benchmarks
V=-DMLAW_SM90_PROBE_PAGE_HINT=1
T=-DMLAW_SM90_TRACE=1
TAIL=${TAIL:-16} bash $B/device_run.sh \
  "python $B/check_sm90_dev.py --variant=$V --ab-only --ab-cases paced" \
  "python $B/check_sm90_dev.py --variant=$V --ab-only --ab-cases paced --flush clean" \
  "python $B/check_sm90_dev.py --variant=$V --ab-only --ab-cases split" \
  "python $B/check_sm90_dev.py --variant='$T' --spans 16 16 4096 --cold --flush clean" \
  "python $B/check_sm90_dev.py --variant='$T $V' --spans 16 16 4096 --cold --flush clean" \
  "python $B/check_sm90_dev.py --variant='$T' --spans 16 16 4096 --cold --flush dirty" \
  "python $B/check_sm90_dev.py --variant='$T $V' --spans 16 16 4096 --cold --flush dirty"
