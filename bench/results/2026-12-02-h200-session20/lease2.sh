#!/usr/bin/env bash
# Session 20, lease 2: te's forward with its typed rows read straight into registers, no ring
# (SY_EXP_FWD_DIRECT: 1 = one row a block, p = the persistent grid by stride), against keep
# (HEAD f60e8c1). exp: this build; exprr: LayerNorm's rows as raw bits (72 registers);
# SY_EXP_FWD_ELEMS: the forward's elements a thread.
set -u
R=$(pwd); S=$R/build-fin; O=$1; mkdir -p "$O"
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
for v in keep exp exprr; do xz -dc build-ab23/te-$v.so.xz > /tmp/te-$v.so; done
cp /tmp/te-keep.so $S/lib/switchyard/plugins/libswitchyard-te.so
T0=$(date +%s)
L=$O/ab.txt; : > "$L"
V=('keep|-|' 'd1|/tmp/te-exp.so|SY_EXP_FWD_DIRECT=1' 'd1e32|/tmp/te-exp.so|SY_EXP_FWD_DIRECT=1 SY_EXP_FWD_ELEMS=32'
   'dp|/tmp/te-exp.so|SY_EXP_FWD_DIRECT=p' 'rr1|/tmp/te-exprr.so|SY_EXP_FWD_DIRECT=1' 'rr1e16|/tmp/te-exprr.so|SY_EXP_FWD_DIRECT=1 SY_EXP_FWD_ELEMS=16'
   'e32|/tmp/te-exp.so|SY_EXP_FWD_ELEMS=32')
timeout 200 env STAGE=$S bash bench/ab.sh 3 "${V[@]}" >> "$L" 2>&1
echo "ab done $(( $(date +%s) - T0 )) s"
grep -E "^\[" "$L" | sort -k3,3 -k1,1
W=('keep|-|' 'd1|/tmp/te-exp.so|SY_EXP_FWD_DIRECT=1' 'd1e32|/tmp/te-exp.so|SY_EXP_FWD_DIRECT=1 SY_EXP_FWD_ELEMS=32' 'rr1|/tmp/te-exprr.so|SY_EXP_FWD_DIRECT=1')
timeout 110 env STAGE=$S HIDDEN=2048,3072,5120,16384 CASES=rmsnorm_2048,rmsnorm_3072,rmsnorm_5120,rmsnorm_16384,layernorm_2048,layernorm_3072,layernorm_5120,layernorm_16384 bash bench/ab.sh 2 "${W[@]}" > "$O/widths.txt" 2>&1
timeout 60 env STAGE=$S DTYPE=float16 bash bench/ab.sh 2 "${W[@]}" | sed 's/^\[\([a-z0-9]*\)/[\1-f16/' >> "$O/widths.txt" 2>&1
echo "widths done $(( $(date +%s) - T0 )) s"
grep -E "^\[" "$O/widths.txt" | sort -k3,3 -k1,1
cp /tmp/te-exp.so $S/lib/switchyard/plugins/libswitchyard-te.so
export LD_LIBRARY_PATH="$S/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$S/bin:$PATH"
C=$O/checks.txt; : > "$C"
for e in 1 p; do
  echo "== SY_EXP_FWD_DIRECT=$e check te" >> "$C"
  SY_EXP_FWD_DIRECT=$e timeout 60 switchyard check te --device cuda --family norm 2>&1 | tail -3 >> "$C"
  SY_EXP_FWD_DIRECT=$e SY_EXP_FWD_ELEMS=32 timeout 60 switchyard check te --device cuda --family norm 2>&1 | tail -3 >> "$C"
done
echo "== graph d1" >> "$C"; SY_EXP_FWD_DIRECT=1 timeout 30 graph_capture_check --plugin te 2>&1 | tail -2 >> "$C"
left=$(( 540 - ($(date +%s) - T0) ))
if (( left > 90 )); then echo "== norm paths d1" >> "$C"; SY_EXP_FWD_DIRECT=1 timeout $(( left - 5 )) norm_paths_check --plugin te 2>&1 | tail -4 >> "$C"; fi
cp /tmp/te-keep.so $S/lib/switchyard/plugins/libswitchyard-te.so
cat "$C"; echo "all done $(( $(date +%s) - T0 )) s"
