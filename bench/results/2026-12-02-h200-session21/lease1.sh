#!/usr/bin/env bash
# Session 21, lease 1: quad, the backward's dgamma/dbeta partials summed in quads by clusters of
# four blocks (one chunk each) in distributed shared memory, against keep (b3739d8).
# Checks first (conformance, norm paths, graph capture, memcheck h4096), then the A/B.
set -u
R=$(pwd); S=$R/build-fin; O=$1; mkdir -p "$O"
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
for v in keep quad; do xz -dc build-ab24/te-$v.so.xz > /tmp/te-$v.so; done
T0=$(date +%s)
export LD_LIBRARY_PATH="$S/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$S/bin:$PATH:/usr/local/cuda/bin"
C=$O/checks-quad.txt; : > "$C"
cp /tmp/te-quad.so $S/lib/switchyard/plugins/libswitchyard-te.so
echo "== check te (quad)" >> "$C"; timeout 40 switchyard check te --device cuda --family norm 2>&1 | tail -4 >> "$C"
echo "== graph te (quad)" >> "$C"; timeout 30 graph_capture_check --plugin te 2>&1 | tail -3 >> "$C"
echo "== norm paths te (quad)" >> "$C"; timeout 120 norm_paths_check --plugin te > "$O/norm-paths-quad.txt" 2>&1; tail -2 "$O/norm-paths-quad.txt" >> "$C"
echo "== memcheck h4096 (quad)" >> "$C"; timeout 100 compute-sanitizer --tool memcheck switchyard check te --device cuda --family norm --filter h4096 > "$O/memcheck-quad-h4096.txt" 2>&1; tail -3 "$O/memcheck-quad-h4096.txt" >> "$C"
echo "checks done $(( $(date +%s) - T0 )) s"; cat "$C"
cp /tmp/te-keep.so $S/lib/switchyard/plugins/libswitchyard-te.so
L=$O/ab.txt; : > "$L"
timeout 110 env STAGE=$S bash bench/ab.sh 4 'keep|-|' 'quad|/tmp/te-quad.so|' >> "$L" 2>&1
echo "ab done $(( $(date +%s) - T0 )) s"
timeout 70 env STAGE=$S HIDDEN=2048,3072,5120,16384 CASES=rmsnorm_2048,rmsnorm_3072,rmsnorm_5120,rmsnorm_16384,layernorm_2048,layernorm_3072,layernorm_5120,layernorm_16384 bash bench/ab.sh 2 'keep|-|' 'quad|/tmp/te-quad.so|' > "$O/widths.txt" 2>&1
timeout 40 env STAGE=$S DTYPE=float16 bash bench/ab.sh 2 'keep|-|' 'quad|/tmp/te-quad.so|' | sed 's/^\[\([a-z0-9]*\)/[\1-f16/' >> "$O/widths.txt" 2>&1
echo "widths done $(( $(date +%s) - T0 )) s"
grep -hE "^\[" "$L" "$O/widths.txt" | sort -k3,3 -k1,1
