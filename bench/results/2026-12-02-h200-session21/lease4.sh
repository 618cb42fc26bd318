#!/usr/bin/env bash
# Session 21, lease 4: the streamed 16-bit LayerNorm forward with its rows and gamma as raw bits, not floats
# (kForwardFloatRow off), capped at 72 registers (raw72: seven 128-thread blocks a multiprocessor at
# H = 4096, 24 bytes of spills) or 80 (raw80: six, no spills), against keep (b3739d8, 110: four).
set -u
R=$(pwd); S=$R/build-fin; O=$1; mkdir -p "$O"
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
for v in keep raw72 raw80; do xz -dc build-ab24/te-$v.so.xz > /tmp/te-$v.so; done
T0=$(date +%s)
export LD_LIBRARY_PATH="$S/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$S/bin:$PATH:/usr/local/cuda/bin"
C=$O/checks.txt; : > "$C"
cp /tmp/te-raw80.so $S/lib/switchyard/plugins/libswitchyard-te.so
echo "== check te (raw80)" >> "$C"; timeout 40 switchyard check te --device cuda --family norm 2>&1 | tail -1 >> "$C"
echo "checks done $(( $(date +%s) - T0 )) s"; cat "$C"
cp /tmp/te-keep.so $S/lib/switchyard/plugins/libswitchyard-te.so
L=$O/ab.txt; : > "$L"
V=('keep|-|' 'raw72|/tmp/te-raw72.so|' 'raw80|/tmp/te-raw80.so|')
timeout 130 env STAGE=$S CASES=layernorm_4096,layernorm_8192 bash bench/ab.sh 6 "${V[@]}" >> "$L" 2>&1
echo "ab done $(( $(date +%s) - T0 )) s"
timeout 80 env STAGE=$S HIDDEN=2048,3072,5120,16384 CASES=layernorm_2048,layernorm_3072,layernorm_5120,layernorm_16384 bash bench/ab.sh 2 "${V[@]}" > "$O/widths.txt" 2>&1
timeout 50 env STAGE=$S DTYPE=float16 CASES=layernorm_4096,layernorm_8192 bash bench/ab.sh 2 "${V[@]}" | sed 's/^\[\([a-z0-9]*\)/[\1-f16/' >> "$O/widths.txt" 2>&1
echo "widths done $(( $(date +%s) - T0 )) s"
grep -hE "^\[" "$L" "$O/widths.txt" | python3 -c '
import sys, collections, statistics as st
d=collections.defaultdict(lambda: collections.defaultdict(list))
for l in sys.stdin:
    t=l.split(); v=t[0][1:]; c=t[2]
    if v.endswith("-f16"): v=v[:-4]; c=c+"-f16"
    d[c][v].append((float(t[3]),float(t[4]),float(t[5])))
for c in sorted(d):
    print(f"{c:18s} "+"  ".join(f"{v} {st.median(x[0] for x in d[c][v]):.4f} ({st.median(x[1] for x in d[c][v]):.4f}/{st.median(x[2] for x in d[c][v]):.4f}) n={len(d[c][v])}" for v in ["keep","raw72","raw80"] if v in d[c]))
'
