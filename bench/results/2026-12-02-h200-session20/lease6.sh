#!/usr/bin/env bash
# Session 20, lease 6: a second final run of b3739d8 (bench/run_gpu.sh, every backend and peer).
set -u
R=$(pwd); S=$R/build-stage; O=$1; mkdir -p "$O"
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
timeout 120 bash bench/run_gpu.sh "$O/run2" "$S" > /dev/null 2>&1; echo "bench rc $?"
grep -E "norm" "$O/run2/summary.txt" | grep -E " te |torch_compile" | head -8
tar -C "$O" -czf "$O/run2.tgz" run2 && rm -rf "$O/run2"
