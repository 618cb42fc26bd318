#!/usr/bin/env bash
# Session 20, lease 5: lnbs, the streamed 16-bit LayerNorm backward with dbeta at 32 elements a
# thread keeping its dbeta sums in shared memory and dy·γ in registers, against keep (b3739d8).
# Conformance first; then the A/B; if lnbs qualifies, its te checks and the final run with it.
set -u
R=$(pwd); S=$R/build-fin; O=$1; mkdir -p "$O"
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
for v in b3739d8 lnbs; do xz -dc build-ab23/te-$v.so.xz > /tmp/te-$v.so; done
T0=$(date +%s)
export LD_LIBRARY_PATH="$S/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$S/bin:$PATH:/usr/local/cuda/bin"
C=$O/checks-lnbs.txt
cp /tmp/te-lnbs.so $S/lib/switchyard/plugins/libswitchyard-te.so
timeout 30 switchyard check te --device cuda --family norm > "$C" 2>&1; rc=$?
echo "check te (lnbs) rc $rc: $(tail -1 "$C")"
cp /tmp/te-b3739d8.so $S/lib/switchyard/plugins/libswitchyard-te.so
L=$O/ab.txt; : > "$L"
timeout 60 env STAGE=$S CASES=layernorm_4096,layernorm_8192 bash bench/ab.sh 4 'keep|-|' 'lnbs|/tmp/te-lnbs.so|' >> "$L" 2>&1
timeout 50 env STAGE=$S HIDDEN=2048,3072,5120,16384 CASES=layernorm_2048,layernorm_3072,layernorm_5120,layernorm_16384 bash bench/ab.sh 2 'keep|-|' 'lnbs|/tmp/te-lnbs.so|' >> "$L" 2>&1
timeout 25 env STAGE=$S DTYPE=float16 CASES=layernorm_4096 bash bench/ab.sh 2 'keep|-|' 'lnbs|/tmp/te-lnbs.so|' | sed 's/^\[\([a-z0-9]*\)/[\1-f16/' >> "$L" 2>&1
echo "ab done $(( $(date +%s) - T0 )) s"
grep -E "^\[" "$L" | sort -k3,3 -k1,1
pick=$(grep -E "^\[" "$L" | python3 -c '
import sys, collections, statistics as st
d = collections.defaultdict(list); bad = False
for l in sys.stdin:
    t = l.split(); d[(t[2], t[0][1:])].append(float(t[3])); bad |= "ok" not in l
m = {k: st.median(v) for k, v in d.items()}
cases = sorted({c for c, _ in m})
ok = not bad and all(m[(c, v)] <= m[(c, k)] + 0.0003 for c in cases for v, k in (("lnbs", "keep"), ("lnbs-f16", "keep-f16")) if (c, v) in m and (c, k) in m)
gain = m[("layernorm_4096", "keep")] - m[("layernorm_4096", "lnbs")]
print("lnbs" if ok and gain > 0.0005 else "keep")
print("LN 4096 gain %.4f ms, nowhere slower: %s" % (gain, ok), file=sys.stderr)')
echo "pick: $pick"
[[ $rc == 0 ]] || pick=keep
if [[ $pick == lnbs ]]; then
  cp /tmp/te-lnbs.so $S/lib/switchyard/plugins/libswitchyard-te.so
  timeout 130 bash bench/run_gpu.sh "$O/bench" "$S" > "$O/run_gpu.out" 2>&1; echo "bench rc $? $(( $(date +%s) - T0 )) s"
  grep -E "norm" "$O/bench/summary.txt" | grep -E " te |torch_compile" | head -8
  { timeout 20 graph_capture_check --plugin te | tail -1
    left=$(( 300 - ($(date +%s) - T0) )); (( left > 20 )) && timeout $left norm_paths_check --plugin te | tail -2; } >> "$C" 2>&1
  tail -3 "$C"
fi
echo "all done $(( $(date +%s) - T0 )) s"
