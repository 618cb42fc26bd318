#!/usr/bin/env bash
# Session 20, lease 1: (a) the bf16 norm forward as plain one-row blocks (Liger-Kernel's shape)
# in a standalone microbenchmark; (b) the register-cursor builds (rc: RMS/L2; rcln: LayerNorm
# claiming too) against keep (HEAD f60e8c1) at the four shapes, the widths and f16.
set -u
R=$(pwd); S=$R/build-fin; O=$1; mkdir -p "$O"
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
for v in keep rc rcln; do xz -dc build-ab23/te-$v.so.xz > /tmp/te-$v.so; done
cp /tmp/te-keep.so $S/lib/switchyard/plugins/libswitchyard-te.so
T0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$O/micro.txt"
timeout 90 ./build-ab23/fwd_micro >> "$O/micro.txt" 2>&1; echo "micro rc $? $(( $(date +%s) - T0 )) s"
cat "$O/micro.txt"
L=$O/ab.txt; : > "$L"
timeout 150 env STAGE=$S bash bench/ab.sh 3 'keep|-|' 'rc|/tmp/te-rc.so|' 'rcln|/tmp/te-rcln.so|' >> "$L" 2>&1
echo "ab done $(( $(date +%s) - T0 )) s"
timeout 120 env STAGE=$S HIDDEN=2048,3072,5120,16384 CASES=rmsnorm_2048,rmsnorm_3072,rmsnorm_5120,rmsnorm_16384,layernorm_2048,layernorm_3072,layernorm_5120,layernorm_16384 bash bench/ab.sh 2 'keep|-|' 'rc|/tmp/te-rc.so|' 'rcln|/tmp/te-rcln.so|' >> "$L" 2>&1
echo "widths done $(( $(date +%s) - T0 )) s"
timeout 90 env STAGE=$S DTYPE=float16 bash bench/ab.sh 2 'keep|-|' 'rc|/tmp/te-rc.so|' 'rcln|/tmp/te-rcln.so|' | sed 's/^\[\([a-z]*\)/[\1-f16/' >> "$L" 2>&1
echo "f16 done $(( $(date +%s) - T0 )) s"
grep -E "^\[" "$L" | sort -k3,3 -k1,1
