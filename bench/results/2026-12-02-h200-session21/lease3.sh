#!/usr/bin/env bash
# Session 21, lease 3: the LayerNorm forward's rows by stride on as few blocks as take the same
# most rows each (bal: 512 blocks of 32 rows at [16384, 4096], not 528 of which 16 take a 32nd),
# and bal with beta read from shared memory in one 16-byte load a chunk (balb), against keep.
set -u
R=$(pwd); S=$R/build-fin; O=$1; mkdir -p "$O"
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
for v in keep bal balb; do xz -dc build-ab24/te-$v.so.xz > /tmp/te-$v.so; done
T0=$(date +%s)
export LD_LIBRARY_PATH="$S/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$S/bin:$PATH:/usr/local/cuda/bin"
C=$O/checks.txt; : > "$C"
cp /tmp/te-balb.so $S/lib/switchyard/plugins/libswitchyard-te.so
echo "== check te (balb)" >> "$C"; timeout 40 switchyard check te --device cuda --family norm 2>&1 | tail -1 >> "$C"
echo "== norm paths te (balb)" >> "$C"; timeout 100 norm_paths_check --plugin te > "$O/norm-paths-balb.txt" 2>&1; tail -1 "$O/norm-paths-balb.txt" >> "$C"
echo "checks done $(( $(date +%s) - T0 )) s"; cat "$C"
cp /tmp/te-keep.so $S/lib/switchyard/plugins/libswitchyard-te.so
L=$O/ab.txt; : > "$L"
V=('keep|-|' 'bal|/tmp/te-bal.so|' 'balb|/tmp/te-balb.so|')
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
    print(f"{c:18s} "+"  ".join(f"{v} {st.median(x[0] for x in d[c][v]):.4f} ({st.median(x[1] for x in d[c][v]):.4f}/{st.median(x[2] for x in d[c][v]):.4f}) n={len(d[c][v])}" for v in ["keep","bal","balb"] if v in d[c]))
'
