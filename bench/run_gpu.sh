#!/usr/bin/env bash
# The one script to run on the GPU machine: switchyard-bench (all families, CUDA), the PyTorch
# peers in the same job, and the plot. Everything lands in OUT_DIR, logs too (7 files, within
# the device tool's 8-file limit):
#   switchyard.json switchyard.txt   switchyard-bench's JSON and table
#   peers.json      peers.txt        peers.py's JSON and table
#   bench.png       summary.txt      plot.py's picture and combined table (fastest first)
#   run.log                          environment, ldd, every tool's stderr, exit codes
#
# usage: bench/run_gpu.sh OUT_DIR [BUILD_DIR]       (BUILD_DIR default: build-bench)
#   environment: RUN_GPU_SMALL=1        tiny shapes for a quick check (both tools)
#                SWITCHYARD_BENCH_ARGS  extra flags for switchyard-bench (e.g. "--backends native")
#                PEERS_ARGS             extra flags for peers.py (e.g. "--peers megatron_eager")
# Libraries the GPU machine lacks (Boost.Program_options, spdlog, fmt) are taken from
# BUILD_DIR/deps when present: bench/collect_deps.sh BUILD_DIR puts them there.
# Python packages it lacks (liger-kernel, for peers.py's Liger peers) are installed from the
# repository's .whl folder when present (pip download there; carry it with the call) into
# /tmp/sy-peers-site, for peers.py only; without them those peers report "skipped".
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
out=${1:?usage: bench/run_gpu.sh OUT_DIR [BUILD_DIR]}
build=${2:-$repo/build-bench}
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$(cd "$build" && pwd) || { echo "run_gpu.sh: no build folder $build" >&2; exit 1; }
log="$out/run.log"
: > "$log"

# NVLink multicast can put a shared host's GPUs out of service: never on (KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH="$build/lib:$build/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The CUDA runtime the binaries link, from the machine's toolkit when the loader lacks it.
[ -d /usr/local/cuda/lib64 ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib64"

small=()
[ "${RUN_GPU_SMALL:-0}" = 1 ] && small=(--small)
read -r -a bench_extra <<< "${SWITCHYARD_BENCH_ARGS:-}"
read -r -a peers_extra <<< "${PEERS_ARGS:-}"

section() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)" >> "$log"; }

section "machine"
{
  uname -a
  nvidia-smi -L
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu,power.draw,memory.used \
    --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())'
  python3 -c 'import matplotlib; print("matplotlib", matplotlib.__version__)'
} >> "$log" 2>&1
section "ldd switchyard-bench"
ldd "$build/bin/switchyard-bench" >> "$log" 2>&1
if ldd "$build/bin/switchyard-bench" | grep -q "not found"; then
  echo "run_gpu.sh: switchyard-bench misses libraries (see $log); run bench/collect_deps.sh" \
       "$build on the build machine first" >&2
fi

section "switchyard-bench"
"$build/bin/switchyard-bench" --device cuda --family all "${small[@]}" "${bench_extra[@]}" \
  --json "$out/switchyard.json" > "$out/switchyard.txt" 2>> "$log"
rc_bench=$?
echo "switchyard-bench exit $rc_bench" >> "$log"

section "peers.py"
peers_env=()
wheels=("$repo"/.whl/*.whl)
if [ -e "${wheels[0]}" ]; then
  site=/tmp/sy-peers-site
  echo "installing ${#wheels[@]} wheel(s) from $repo/.whl into $site for peers.py:" >> "$log"
  ls -l "${wheels[@]}" >> "$log" 2>&1
  if PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
     python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
       --target "$site" "${wheels[@]}" >> "$log" 2>&1; then
    peers_env=(env "PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}")
  else
    echo "pip install from .whl failed (exit $?): peers.py runs without those packages" >> "$log"
  fi
else
  echo "no wheels in $repo/.whl: peers.py runs with the machine's packages only" >> "$log"
fi
"${peers_env[@]}" python3 "$here/peers.py" "${small[@]}" "${peers_extra[@]}" \
  --json "$out/peers.json" > "$out/peers.txt" 2>> "$log"
rc_peers=$?
echo "peers.py exit $rc_peers" >> "$log"

section "plot.py"
inputs=()
[ -s "$out/switchyard.json" ] && inputs+=("$out/switchyard.json")
[ -s "$out/peers.json" ] && inputs+=("$out/peers.json")
rc_plot=1
if [ ${#inputs[@]} -gt 0 ]; then
  python3 "$here/plot.py" "${inputs[@]}" -o "$out/bench.png" > "$out/summary.txt" 2>> "$log"
  rc_plot=$?
fi
echo "plot.py exit $rc_plot" >> "$log"
section "machine after"
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv >> "$log" 2>&1

# What a person reads first, last (the device tool returns the end of the output).
echo "---- switchyard-bench (exit $rc_bench) ----"
cat "$out/switchyard.txt"
echo "---- peers.py (exit $rc_peers) ----"
cat "$out/peers.txt"
echo "---- log tail ----"
tail -n 25 "$log"
echo "---- summary: all results, fastest first per case (plot.py exit $rc_plot) ----"
cat "$out/summary.txt" 2>/dev/null
# A benchmark never fails on a time; a wrong result (3) or a broken tool (1) does.
[ $rc_bench -ne 0 ] && exit $rc_bench
exit $rc_peers
