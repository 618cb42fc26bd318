#!/usr/bin/env bash
# Session 21, lease 2: shorter dependency chains in the LayerNorm sums, against keep (b3739d8).
#   ilp    the LayerNorm forward's sum and M2 per chunk (four chains at 32 elements a thread),
#          then the chunks' in order
#   ilprs  ilp, and rstd = rsqrtf(var + eps) in the LayerNorm forward (not IEEE 1/sqrt)
#   ilpb   ilp, and the backward's pass-1 row sums in two chains (even and odd chunks)
set -u
R=$(pwd); S=$R/build-fin; O=$1; mkdir -p "$O"
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
for v in keep ilp ilprs ilpb; do xz -dc build-ab24/te-$v.so.xz > /tmp/te-$v.so; done
T0=$(date +%s)
export LD_LIBRARY_PATH="$S/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$S/bin:$PATH:/usr/local/cuda/bin"
C=$O/checks.txt; : > "$C"
for v in ilp ilprs ilpb; do
  cp /tmp/te-$v.so $S/lib/switchyard/plugins/libswitchyard-te.so
  echo "== check te ($v)" >> "$C"; timeout 40 switchyard check te --device cuda --family norm 2>&1 | tail -1 >> "$C"
done
echo "checks done $(( $(date +%s) - T0 )) s"; cat "$C"
cp /tmp/te-keep.so $S/lib/switchyard/plugins/libswitchyard-te.so
L=$O/ab.txt; : > "$L"
V=('keep|-|' 'ilp|/tmp/te-ilp.so|' 'ilprs|/tmp/te-ilprs.so|' 'ilpb|/tmp/te-ilpb.so|')
timeout 200 env STAGE=$S bash bench/ab.sh 4 "${V[@]}" >> "$L" 2>&1
echo "ab done $(( $(date +%s) - T0 )) s"
grep -hE "^\[" "$L" | sort -k3,3 -k1,1
timeout 100 env STAGE=$S HIDDEN=2048,3072,5120,16384 CASES=rmsnorm_2048,rmsnorm_5120,layernorm_2048,layernorm_3072,layernorm_5120,layernorm_16384 bash bench/ab.sh 2 "${V[@]}" > "$O/widths.txt" 2>&1
timeout 60 env STAGE=$S DTYPE=float16 CASES=layernorm_4096,layernorm_8192 bash bench/ab.sh 2 "${V[@]}" | sed 's/^\[\([a-z0-9]*\)/[\1-f16/' >> "$O/widths.txt" 2>&1
echo "widths done $(( $(date +%s) - T0 )) s"
grep -hE "^\[" "$O/widths.txt" | sort -k3,3 -k1,1
