#!/usr/bin/env bash
# Session 20, lease 4: (a) lny2: the 16-bit LayerNorm forward's y as two FMAs an element,
# (h*rstd - mean*rstd)*gamma + beta, against keep (b3739d8); (b) Nsight Compute on te's RMS and
# LayerNorm 4096 forward and backward kernels (b3739d8): throughput, issue, occupancy, stalls;
# (c) if lny2 qualifies, its te checks.
set -u
R=$(pwd); S=$R/build-fin; O=$1; mkdir -p "$O"
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
for v in b3739d8 lny2; do xz -dc build-ab23/te-$v.so.xz > /tmp/te-$v.so; done
cp /tmp/te-b3739d8.so $S/lib/switchyard/plugins/libswitchyard-te.so
T0=$(date +%s)
L=$O/ab.txt; : > "$L"
timeout 80 env STAGE=$S bash bench/ab.sh 3 'keep|-|' 'lny2|/tmp/te-lny2.so|' >> "$L" 2>&1
timeout 60 env STAGE=$S HIDDEN=2048,3072,5120,16384 CASES=layernorm_2048,layernorm_3072,layernorm_5120,layernorm_16384 bash bench/ab.sh 2 'keep|-|' 'lny2|/tmp/te-lny2.so|' >> "$L" 2>&1
timeout 40 env STAGE=$S DTYPE=float16 CASES=layernorm_4096,layernorm_8192 bash bench/ab.sh 2 'keep|-|' 'lny2|/tmp/te-lny2.so|' | sed 's/^\[\([a-z0-9]*\)/[\1-f16/' >> "$L" 2>&1
echo "ab done $(( $(date +%s) - T0 )) s"
grep -E "^\[" "$L" | sort -k3,3 -k1,1
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for c in rmsnorm_4096 layernorm_4096; do for k in norm_forward_kernel norm_backward_kernel; do
  timeout 60 "$NCU" --target-processes all -k regex:$k --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats \
    --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__inst_executed.sum,dram__bytes.sum,gpu__time_duration.sum" --page details \
    "$S/with-env" "$S/bin/switchyard-bench" --device cuda --backends te --family norm \
    --cases $c --warmup 1 --reps 20 > "$O/ncu-$c-$k.txt" 2>&1
  echo "ncu $c $k rc $? $(( $(date +%s) - T0 )) s"
  grep -E "Duration|DRAM Throughput|Issue Slots Busy|Executed Ipc Active|Achieved Occupancy|Registers Per|Block Limit Reg|issue_active|inst_executed.sum|Warp Cycles Per Issued" "$O/ncu-$c-$k.txt" | head -12
done; done
pick=$(grep -E "^\[" "$L" | python3 -c '
import sys, collections, statistics as st
d = collections.defaultdict(list)
for l in sys.stdin:
    t = l.split(); d[(t[2], t[0][1:])].append(float(t[3]))
m = {k: st.median(v) for k, v in d.items()}
cases = sorted({c for c, _ in m})
ok = all(m[(c, "lny2")] <= m[(c, "keep")] + 0.0002 for c in cases if (c, "lny2") in m) and \
     all(m[(c, "lny2-f16")] <= m[(c, "keep-f16")] + 0.0002 for c in ("layernorm_4096", "layernorm_8192") if (c, "lny2-f16") in m)
gain = sum(m[(c, "keep")] - m[(c, "lny2")] for c in ("layernorm_4096", "layernorm_8192"))
print("lny2" if ok and gain > 0.0008 else "keep")
print("gain %.4f ms, ok %s" % (gain, ok), file=sys.stderr)')
echo "pick: $pick"
if [[ $pick == lny2 ]]; then
  cp /tmp/te-lny2.so $S/lib/switchyard/plugins/libswitchyard-te.so
  export LD_LIBRARY_PATH="$S/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$S/bin:$PATH:/usr/local/cuda/bin"
  C=$O/checks-lny2.txt
  { timeout 30 switchyard check te --device cuda --family norm | tail -1; timeout 30 graph_capture_check --plugin te | tail -1;
    timeout 150 norm_paths_check --plugin te | tail -1; } > "$C" 2>&1
  cat "$C"
fi
echo "all done $(( $(date +%s) - T0 )) s"
