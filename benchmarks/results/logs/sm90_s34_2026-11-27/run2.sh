#!/usr/bin/env bash
# Session 34, device calls 2-4 (asked for an H200, got H100s): run 1's script, on an H100 a
# quick exit.
H100_QUICK=1 bash "$(dirname "$0")/run1.sh"
