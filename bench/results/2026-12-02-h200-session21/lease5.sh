#!/usr/bin/env bash
# Session 21, lease 5: the 16-bit LayerNorm forward of rows of 2048 to 4096 elements read
# straight into registers, one row a block, as Liger-Kernel's Triton kernel does (one program a
# row, 8 warps at 4096): 256 x 16 at 4096, rows as raw bits, gamma and beta loaded per row
# (L1), capped at 48 registers (lnd48: five blocks a multiprocessor) or 40 (lnd40: six, 8 bytes
# of spills), against keep (b3739d8: the ring at 128 x 32, four blocks).
set -u
R=$(pwd); S=$R/build-fin; O=$1; mkdir -p "$O"
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
for v in keep lnd48 lnd40; do xz -dc build-ab24/te-$v.so.xz > /tmp/te-$v.so; done
T0=$(date +%s)
export LD_LIBRARY_PATH="$S/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$S/bin:$PATH:/usr/local/cuda/bin"
cp /tmp/te-keep.so $S/lib/switchyard/plugins/libswitchyard-te.so  # missing in the first call
L=$O/ab.txt; : > "$L"
V=('keep|-|' 'lnd48|/tmp/te-lnd48.so|' 'lnd40|/tmp/te-lnd40.so|')
timeout 120 env STAGE=$S CASES=layernorm_4096 bash bench/ab.sh 6 "${V[@]}" >> "$L" 2>&1
echo "ab done $(( $(date +%s) - T0 )) s"
timeout 60 env STAGE=$S HIDDEN=2048,3072 CASES=layernorm_2048,layernorm_3072 bash bench/ab.sh 2 "${V[@]}" > "$O/widths.txt" 2>&1
timeout 40 env STAGE=$S DTYPE=float16 CASES=layernorm_4096 bash bench/ab.sh 2 "${V[@]}" | sed 's/^\[\([a-z0-9]*\)/[\1-f16/' >> "$O/widths.txt" 2>&1
echo "widths done $(( $(date +%s) - T0 )) s"
grep -hE "^\[" "$L" "$O/widths.txt" | python3 -c '
import sys, collections, statistics as st
d=collections.defaultdict(lambda: collections.defaultdict(list))
for l in sys.stdin:
    t=l.split(); v=t[0][1:]; c=t[2]
    if v.endswith("-f16"): v=v[:-4]; c=c+"-f16"
    d[c][v].append((float(t[3]),float(t[4]),float(t[5])))
for c in sorted(d):
    print(f"{c:18s} "+"  ".join(f"{v} {st.median(x[0] for x in d[c][v]):.4f} ({st.median(x[1] for x in d[c][v]):.4f}/{st.median(x[2] for x in d[c][v]):.4f}) n={len(d[c][v])}" for v in ["keep","lnd48","lnd40"] if v in d[c]))
'
C=$O/checks.txt; : > "$C"
for v in lnd48 lnd40; do
  cp /tmp/te-$v.so $S/lib/switchyard/plugins/libswitchyard-te.so
  echo "== check te ($v)" >> "$C"; timeout 40 switchyard check te --device cuda --family norm 2>&1 | tail -1 >> "$C"
done
cp /tmp/te-lnd48.so $S/lib/switchyard/plugins/libswitchyard-te.so
left=$(( 370 - ($(date +%s) - T0) ))
if (( left > 70 )); then echo "== norm paths te (lnd48)" >> "$C"; timeout $(( left - 5 )) norm_paths_check --plugin te > "$O/norm-paths-lnd48.txt" 2>&1; tail -1 "$O/norm-paths-lnd48.txt" >> "$C"; fi
cp /tmp/te-keep.so $S/lib/switchyard/plugins/libswitchyard-te.so
echo "checks done $(( $(date +%s) - T0 )) s"; cat "$C"
