#!/usr/bin/env bash
# Every GPU check in one go, on the GPU machine (tests/gpu/README.md):
#   1. environment   nvidia-smi, the staged programs' libraries (ldd: nothing "not found")
#   2. doctor        switchyard doctor (text and --json)
#   3. check-<name>  switchyard check <name> --device cuda, for every plugin declaring CUDA
#   4. native-cuda   native_cuda_check: what the conformance cases do not reach (sizes,
#                    multi-block dgamma, streams, refusals of host memory and wrong devices)
#   5. comm-nccl     comm_nccl_gpu_check (libswitchyard-nccl on every GPU), when built
#   6. tp2-nccl-<name>  tp_nccl_check --plugin <name>: TP = 2 over NCCL, two processes, for
#                    every staged plugin offering cross entropy on CUDA with tensor_parallel
#                    (skipped with < 2 GPUs)
#   7. graph-<name>  graph_capture_check --plugin <name>: for every staged plugin whose cross
#                    entropy or norm declares graph_capture on CUDA, the eager calls against
#                    two launches of their CUDA graph, bit for bit
#   8. ce-paths-te   ce_paths_check --plugin te: te's grad in forward gives its forward's and
#                    backward's bits (when te is staged)
#   9. norm-paths-te norm_paths_check --plugin te: te's norms give the same bits whatever
#                    sm_margin and whether rows are streamed, and match the float64 reference
#                    (when te is staged)
#  10. train         the training demo on CUDA (tests/train/gpu_train_check.sh)
# then ONE line "N passed, M failed, K skipped" over everything (cases where a step reports
# cases, the step itself otherwise). Exit status 0 when nothing failed.
#
#   bash tests/gpu/run.sh LOG_DIR [STAGE_DIR]        (STAGE_DIR default: build-stage)
#
# LOG_DIR receives ONE file, gpu-tests.log (the device tool brings back at most 8 files, and
# the benchmarks want 7): the summary table first, then every step's full output in order,
# then the summary line again.
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
logs=${1:?usage: bash tests/gpu/run.sh LOG_DIR [STAGE_DIR]}
stage=${2:-$repo/build-stage}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
stage=$(cd "$stage" 2>/dev/null && pwd) || {
  echo "run.sh: no stage folder ${2:-$repo/build-stage}; make it with tests/gpu/stage.sh and carry it" >&2
  exit 2
}
# The device tool stops a command after 600 s: every step gets at most GPU_STEP_TIMEOUT.
step_timeout=${GPU_STEP_TIMEOUT:-240}

# Never NVLink multicast (KINDS.md: it can take a shared host's GPUs out of service).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH="$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$stage/bin:$PATH"
# Only the staged plugins (the default folder next to libswitchyard.so is the stage's own).
unset SWITCHYARD_PLUGIN_PATH SWITCHYARD_PLUGIN_SYSTEM_PATH SWITCHYARD_CROSS_ENTROPY SWITCHYARD_NORM

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/steps"
all_log=$work/steps.log
summary=$work/summary.txt
: > "$all_log"
rows=()
total_pass=0 total_fail=0 total_skip=0

# Counts of one step: its last "N passed, M failed, K skipped" line, or doctest's
# "[doctest] test cases: T | P passed | F failed | S skipped"; else the exit status alone
# (0 pass, 77 skip, anything else fail). A non-zero, non-77 exit always counts a failure.
tally() {
  local name=$1 rc=$2 out=$3 p=0 f=0 s=0 line
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out" | tail -n 1)
  if [[ -n $line ]]; then
    read -r p _ f _ s _ <<< "$line"
  elif line=$(grep -E '^\[doctest\] test cases:' "$out" | tail -n 1) && [[ -n $line ]]; then
    p=$(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<< "$line")
    f=$(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<< "$line")
    s=$(sed -E 's/.*\| *([0-9]+) skipped.*/\1/' <<< "$line")
  elif (( rc == 0 )); then
    p=1
  elif (( rc == 77 )); then
    s=1
  else
    f=1
  fi
  if (( rc != 0 && rc != 77 && f == 0 )); then f=$((f + 1)); fi
  total_pass=$((total_pass + p)) total_fail=$((total_fail + f)) total_skip=$((total_skip + s))
  rows+=("$(printf '%-22s exit %-4s %5d passed %4d failed %4d skipped' "$name" "$rc" "$p" "$f" "$s")")
}

# run_step NAME COMMAND...: runs it under a timeout, its output into the combined log.
run_step() {
  local name=$1
  shift
  local out=$work/steps/$name.log rc
  echo "== $name: $* ($(date -u +%H:%M:%S))"
  if declare -F "$1" > /dev/null; then
    ("$@") > "$out" 2>&1  # a function of this script (quick, no timeout needed)
  else
    timeout --kill-after=30 "$step_timeout" "$@" > "$out" 2>&1
  fi
  rc=$?
  (( rc == 124 || rc == 137 )) && echo "run.sh: $name timed out after $step_timeout s" >> "$out"
  {
    printf '\n======== %s (exit %s): %s\n' "$name" "$rc" "$*"
    cat "$out"
  } >> "$all_log"
  tally "$name" "$rc" "$out"
  echo "   exit $rc; ${rows[-1]}"
}

# no_step NAME fail|skip WHY MESSAGE: a step that cannot run, counted as one failure or one
# skip; MESSAGE goes to the log, "WHY: FAIL" (or "WHY: skipped") to the summary's row.
no_step() {
  local name=$1 verdict=$2 why=$3 message=$4
  echo "run.sh: $message" | tee -a "$all_log"
  if [[ $verdict == fail ]]; then
    total_fail=$((total_fail + 1))
    rows+=("$(printf '%-22s %s' "$name" "$why: FAIL")")
  else
    total_skip=$((total_skip + 1))
    rows+=("$(printf '%-22s %s' "$name" "$why: skipped")")
  fi
}

# te_paths_step NAME PROGRAM: one of te's bit-identity checks (ce_paths_check, norm_paths_check),
# skipped when it or the te plugin was not staged.
te_paths_step() {
  local name=$1 program=$2
  if [[ -x $stage/bin/$program && -f $stage/lib/switchyard/plugins/libswitchyard-te.so ]]; then
    run_step "$name" "$program" --plugin te
  else
    no_step "$name" skip "not staged" "$program or the te plugin was not staged: $name skipped"
  fi
}

environment() {
  set +e
  uname -a
  nvidia-smi -L || echo "nvidia-smi failed"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  echo "stage: $stage"
  cat "$stage/MANIFEST"
  local missing=0 f
  for f in "$stage"/bin/* "$stage"/lib/*.so* "$stage"/lib/switchyard/plugins/*.so; do
    [[ -f $f ]] || continue
    echo "-- ldd $(basename "$f")"
    ldd "$f" | sed 's/^/   /'
    if ldd "$f" | grep -q 'not found'; then
      echo "MISSING: $(basename "$f") needs a library that is not found"
      missing=1
    fi
  done
  return $missing
}

# Plugins that declare CUDA for either family, from `switchyard list --json` (or, without
# python3, from each staged plugin's `switchyard inspect` devices lines).
cuda_plugins() {
  if ! command -v python3 > /dev/null; then
    local f name
    for f in "$stage"/lib/switchyard/plugins/libswitchyard-*.so; do
      name=$(basename "$f" .so)
      name=${name#libswitchyard-}
      switchyard inspect "$name" 2>> "$work/list.err" | grep -qE '^ +devices +.*cuda' && echo "$name"
    done
    return 0
  fi
  switchyard list --json 2> "$work/list.err" | python3 -c '
import json, sys
doc = json.load(sys.stdin)
seen = []
for location in doc.get("search_path", []):
    for c in location.get("candidates", []):
        families = c.get("families", {}) or {}
        devices = set()
        for f in families.values():
            devices.update((f or {}).get("devices", []))
        if "cuda" in devices and c.get("name") and c["name"] not in seen:
            seen.append(c["name"])
print("\n".join(seen))
'
}

# Plugins whose cross entropy runs on CUDA with tensor parallelism (SY_CE_FEATURE_TENSOR_PARALLEL),
# the same two ways.
tp_plugins() {
  if ! command -v python3 > /dev/null; then
    local f name
    for f in "$stage"/lib/switchyard/plugins/libswitchyard-*.so; do
      name=$(basename "$f" .so)
      name=${name#libswitchyard-}
      switchyard inspect "$name" 2>> "$work/list.err" | awk '
        /^[^ ]/ { section = $1 }
        section == "cross_entropy" && $1 == "devices" && / cuda/ { cuda = 1 }
        section == "cross_entropy" && $1 == "features" && /tensor_parallel/ { tp = 1 }
        END { exit !(cuda && tp) }' && echo "$name"
    done
    return 0
  fi
  switchyard list --json 2>> "$work/list.err" | python3 -c '
import json, sys
doc = json.load(sys.stdin)
seen = []
for location in doc.get("search_path", []):
    for c in location.get("candidates", []):
        ce = (c.get("families", {}) or {}).get("cross_entropy") or {}
        if ("cuda" in ce.get("devices", []) and "tensor_parallel" in ce.get("features", [])
                and c.get("name") and c["name"] not in seen):
            seen.append(c["name"])
print("\n".join(seen))
'
}

# Plugins with a family that declares CUDA and SY_FEATURE_GRAPH_CAPTURE (cross entropy or norm),
# the same two ways.
graph_plugins() {
  if ! command -v python3 > /dev/null; then
    local f name
    for f in "$stage"/lib/switchyard/plugins/libswitchyard-*.so; do
      name=$(basename "$f" .so)
      name=${name#libswitchyard-}
      switchyard inspect "$name" 2>> "$work/list.err" | awk '
        /^[^ ]/ { section = $1 }
        $1 == "devices" && / cuda/ { cuda[section] = 1 }
        $1 == "features" && /graph_capture/ { graph[section] = 1 }
        END { exit !((cuda["cross_entropy"] && graph["cross_entropy"]) || (cuda["norm"] && graph["norm"])) }' &&
        echo "$name"
    done
    return 0
  fi
  switchyard list --json 2>> "$work/list.err" | python3 -c '
import json, sys
doc = json.load(sys.stdin)
seen = []
for location in doc.get("search_path", []):
    for c in location.get("candidates", []):
        families = c.get("families", {}) or {}
        captures = any("cuda" in (f or {}).get("devices", []) and
                       "graph_capture" in (f or {}).get("features", [])
                       for f in families.values())
        if captures and c.get("name") and c["name"] not in seen:
            seen.append(c["name"])
print("\n".join(seen))
'
}

run_step environment environment
run_step doctor bash -c 'switchyard doctor; rc=$?; echo; echo "---- doctor --json"; switchyard doctor --json; exit $rc'

plugins=$(cuda_plugins)
if [[ -z $plugins ]]; then
  no_step cuda-plugins fail "none found" \
    "no plugin declares CUDA (switchyard list --json: $(cat "$work/list.err"))"
fi
for name in $plugins; do
  run_step "check-$name" switchyard check "$name" --device cuda
done

if [[ -x $stage/bin/native_cuda_check ]]; then
  run_step native-cuda native_cuda_check
else
  no_step native-cuda fail "not staged" "native_cuda_check was not staged"
fi
if [[ -x $stage/bin/comm_nccl_gpu_check ]]; then
  run_step comm-nccl comm_nccl_gpu_check
else
  no_step comm-nccl skip "not staged" "comm_nccl_gpu_check was not staged: skipped"
fi
if [[ -x $stage/bin/tp_nccl_check ]]; then
  tp_names=$(tp_plugins)
  if [[ -z $tp_names ]]; then
    no_step tp2-nccl fail "no tensor-parallel plugin" \
      "no staged plugin offers tensor-parallel cross entropy on CUDA (switchyard list --json: $(cat "$work/list.err"))"
  fi
  for name in $tp_names; do
    run_step "tp2-nccl-$name" tp_nccl_check --plugin "$name" --timeout $((step_timeout - 30))
  done
else
  no_step tp2-nccl fail "not staged" "tp_nccl_check was not staged"
fi
if [[ -x $stage/bin/graph_capture_check ]]; then
  graph_names=$(graph_plugins)
  if [[ -z $graph_names ]]; then
    # Not a failure: native and fused do not declare it; te, liger (norm) and apex do.
    no_step graph skip "no graph_capture plugin" \
      "no staged plugin declares graph_capture on CUDA: graph capture skipped (switchyard list --json: $(cat "$work/list.err"))"
  fi
  for name in $graph_names; do
    run_step "graph-$name" graph_capture_check --plugin "$name"
  done
else
  no_step graph fail "not staged" "graph_capture_check was not staged"
fi
te_paths_step ce-paths-te ce_paths_check
te_paths_step norm-paths-te norm_paths_check
# The training demo on CUDA: one GPU, and two processes over NCCL when two GPUs are present.
if [[ -x $stage/bin/switchyard ]]; then
  run_step train bash "$repo/tests/train/gpu_train_check.sh" "$stage/bin/switchyard"
fi

{
  echo "GPU suite, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), stage $stage"
  printf '%s\n' "${rows[@]}"
  grep -h -E '^(FAIL|SKIP) ' "$work"/steps/*.log 2>/dev/null | head -n 200
  echo "$total_pass passed, $total_fail failed, $total_skip skipped"
} > "$summary"
cat "$summary" "$all_log" > "$logs/gpu-tests.log"
printf '\n%s\n' "$total_pass passed, $total_fail failed, $total_skip skipped" >> "$logs/gpu-tests.log"
cat "$summary"
(( total_fail == 0 ))
