#!/usr/bin/env bash
# Session 20, lease 3: the final run of b3739d8 (bench/run_gpu.sh with every backend and the
# PyTorch peers), memcheck of te's h4096 norm cases (their rows now read directly), then the
# whole GPU suite (tests/gpu/run.sh) in the time left. One tarball back, summaries on stdout.
set -u
R=$(pwd); S=$R/build-stage; O=$1; F=$O/final; mkdir -p "$F"
T0=$(date +%s)
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM
timeout 220 bash bench/run_gpu.sh "$F/bench" "$S" > "$F/run_gpu.out" 2>&1; echo "bench rc $? $(( $(date +%s) - T0 )) s"
grep -E "norm" "$F/bench/summary.txt" | grep -E " te |torch_compile|liger|apex|fused|native" | head -40
( export LD_LIBRARY_PATH="$S/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$S/bin:$PATH:/usr/local/cuda/bin"
  timeout 100 compute-sanitizer --tool memcheck switchyard check te --device cuda --family norm --filter h4096 > "$F/memcheck-te-h4096.txt" 2>&1
  echo "memcheck rc $?" >> "$F/memcheck-te-h4096.txt" )
tail -3 "$F/memcheck-te-h4096.txt"; echo "memcheck done $(( $(date +%s) - T0 )) s"
left=$(( 570 - ($(date +%s) - T0) ))
GPU_STEP_TIMEOUT=$(( left < 240 ? left : 240 )) timeout $left bash tests/gpu/run.sh "$F/gpu" "$S" > "$F/gpu-run.out" 2>&1
echo "gpu suite rc $? $(( $(date +%s) - T0 )) s"
head -25 "$F/gpu/gpu-tests.log" 2>/dev/null; tail -2 "$F/gpu/gpu-tests.log" 2>/dev/null
tar -C "$O" -czf "$O/final.tgz" final && rm -rf "$F"
