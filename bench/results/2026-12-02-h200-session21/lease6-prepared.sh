#!/usr/bin/env bash
# Prepared in session 21, not run (its device time was spent): lnrow, `layernorm-row-kernel.patch`
# applied to b3739d8 and te rebuilt (`make switchyard_plugin_te`; xz its .so to
# build-ab24/te-lnrow.so.xz, b3739d8's to te-keep.so.xz). One 16-bit LayerNorm row a 256-thread
# block in the shape of Liger-Kernel's kernel (every load issued first, x converted once, no
# loop; 48 registers, five blocks a multiprocessor; about 350 instructions on its path against
# Liger-Kernel's 315), with te's arithmetic in forward_rows' order. The plan then gives
# LayerNorm rows of 2048 to 4096 elements 16 a thread, so with sm_margin or a residual they take
# the ring at 256 x 16 (slower; the same bits, which norm_paths_check checks). Its te_math
# test of the plan's direct rows expects RMS/L2 only and fails with the patch, as it should.
set -u
R=$(pwd); S=$R/build-fin; O=$1; mkdir -p "$O"
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
for v in keep lnrow; do xz -dc build-ab24/te-$v.so.xz > /tmp/te-$v.so; done
T0=$(date +%s)
export LD_LIBRARY_PATH="$S/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$S/bin:$PATH:/usr/local/cuda/bin"
cp /tmp/te-keep.so $S/lib/switchyard/plugins/libswitchyard-te.so
V=('keep|-|' 'lnrow|/tmp/te-lnrow.so|')
timeout 100 env STAGE=$S CASES=layernorm_4096,layernorm_8192 bash bench/ab.sh 6 "${V[@]}" > "$O/ab.txt" 2>&1
timeout 60 env STAGE=$S HIDDEN=2048,3072 CASES=layernorm_2048,layernorm_3072 bash bench/ab.sh 2 "${V[@]}" > "$O/widths.txt" 2>&1
timeout 40 env STAGE=$S DTYPE=float16 CASES=layernorm_4096 bash bench/ab.sh 2 "${V[@]}" > "$O/f16.txt" 2>&1
grep -h "^median" "$O/ab.txt" "$O/widths.txt" "$O/f16.txt"
echo "ab done $(( $(date +%s) - T0 )) s"
C=$O/checks.txt; : > "$C"
cp /tmp/te-lnrow.so $S/lib/switchyard/plugins/libswitchyard-te.so
echo "== check te (lnrow)" >> "$C"; timeout 40 switchyard check te --device cuda --family norm 2>&1 | tail -1 >> "$C"
echo "== graph te (lnrow)" >> "$C"; timeout 30 graph_capture_check --plugin te 2>&1 | tail -1 >> "$C"
echo "== norm paths te (lnrow)" >> "$C"; timeout 120 norm_paths_check --plugin te > "$O/norm-paths-lnrow.txt" 2>&1; tail -1 "$O/norm-paths-lnrow.txt" >> "$C"
cp /tmp/te-keep.so $S/lib/switchyard/plugins/libswitchyard-te.so
echo "checks done $(( $(date +%s) - T0 )) s"; cat "$C"
