#!/usr/bin/env bash
# Session 19, lease 7: Nsight Compute's warp states on the bf16 LayerNorm 8192 forward, rows by
# stride (keep, c62c622) against rows claimed (lease 5's aheadln), one launch each.
set -u
R=$(pwd); S=$R/build-fin; O=$1; mkdir -p "$O"
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
for v in keep aheadln; do
  xz -dc build-ab22/te-$v.so.xz > $S/lib/switchyard/plugins/libswitchyard-te.so
  timeout 70 "$NCU" --target-processes all -k regex:norm_forward_kernel --launch-skip 2 --launch-count 1 \
    --section WarpStateStats --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" --page details \
    "$S/with-env" "$S/bin/switchyard-bench" --device cuda --backends te --family norm \
    --cases layernorm_8192 --warmup 1 --reps 20 > "$O/ncu-stalls-$v.txt" 2>&1
  echo "$v rc $?"
  grep -E "stalled" "$O/ncu-stalls-$v.txt" | sort -k3 -g -r | head -14
done
