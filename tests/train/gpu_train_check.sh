#!/usr/bin/env bash
# `switchyard train` on CUDA, checked against the CPU. First the LM head's CUDA kernels against
# its CPU kernels (test_lm_head_cuda, next to the binary, when built). Then, per case, the CPU
# run is the reference; `--device cuda` (--tp 1, and --tp 2 as two processes when there are 2
# GPUs) must log the same losses within 1e-4 relative, the loss must fall by at least 30 %, and the
# replicated weights must end bit-identical across ranks. Also: a failing rank process is
# reported (not hung on), and --tp above the GPU count is refused.
#
# usage: tests/train/gpu_train_check.sh [path/to/switchyard]
#   default binary: $SWITCHYARD_BIN, else <repo>/build/bin/switchyard
#   logs:           $SWITCHYARD_GPU_LOG_DIR (default: a new folder under /tmp), one file per run
#   corpus:         <bin>/../share/switchyard/corpus.txt when it is there (the build tree, an
#                   install); else the repository's *.md files, concatenated into the log folder
#   kernel test:    <bin>/test_lm_head_cuda, or $SWITCHYARD_TEST_LM_HEAD_CUDA
# Prints PASS / FAIL / SKIP lines and, last, "N passed, M failed, K skipped" (tests/gpu/run.sh
# reads it); exits 0 (nothing failed), 1 (a failure) or 77 (no GPU: skipped).
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${1:-${SWITCHYARD_BIN:-$repo/build/bin/switchyard}}"
logs="${SWITCHYARD_GPU_LOG_DIR:-$(mktemp -d /tmp/switchyard-gpu-train.XXXXXX)}"
mkdir -p "$logs"
run_timeout=300
tolerance=1e-4
min_drop=0.30
failures=0
passes=0
skips=0

pass() { echo "PASS $*"; passes=$((passes + 1)); }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
skip() { echo "SKIP $*"; skips=$((skips + 1)); }
totals() { echo "$passes passed, $failures failed, $skips skipped"; }

if [[ ! -x "$bin" ]]; then
  echo "FAIL gpu_train_check: no switchyard binary at $bin (pass its path as the first argument)"
  exit 1
fi
if ! command -v python3 > /dev/null; then
  echo "FAIL gpu_train_check: python3 is needed to read the JSON results"
  exit 1
fi

# GPUs this process may use: nvidia-smi's list, narrowed by CUDA_VISIBLE_DEVICES when set.
gpus=0
if command -v nvidia-smi > /dev/null; then
  gpus="$(nvidia-smi --query-gpu=index --format=csv,noheader 2> /dev/null | grep -c .)"
fi
if [[ -n "${CUDA_VISIBLE_DEVICES+set}" ]]; then
  visible="$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .)"
  (( visible < gpus )) && gpus=$visible
fi
if (( gpus < 1 )); then
  skip "gpu_train_check: no GPU visible (nvidia-smi lists none)"
  totals
  exit 77
fi
echo "gpu_train_check: $bin, $gpus GPU(s), logs in $logs"

# The corpus cases need text: the shipped corpus, else the repository's documentation.
corpus_args=()
if [[ ! -f "$(dirname "$bin")/../share/switchyard/corpus.txt" ]]; then
  cat "$repo"/README.md "$repo"/docs/*.md > "$logs/corpus.txt" 2> /dev/null
  corpus_args=(--corpus "$logs/corpus.txt")
  echo "gpu_train_check: no shipped corpus next to $bin; training on $logs/corpus.txt"
fi

# run NAME ARGS...: `switchyard train --json ARGS` -> $logs/NAME.json and NAME.err; returns
# the exit code.
run() {
  local name="$1"
  shift
  local start=$SECONDS
  timeout "$run_timeout" "$bin" train --json "$@" > "$logs/$name.json" 2> "$logs/$name.err"
  local rc=$?
  echo "  ran $name ($((SECONDS - start)) s, exit $rc): switchyard train --json $*" >> "$logs/commands.txt"
  return $rc
}

# compare NAME REFERENCE WHAT: the losses of NAME against REFERENCE, the drop, the replicas.
compare() {
  python3 - "$logs/$1.json" "$logs/$2.json" "$tolerance" "$min_drop" "$3" <<'EOF'
import json, sys
run_path, reference_path, tolerance, min_drop, what = sys.argv[1:]
tolerance, min_drop = float(tolerance), float(min_drop)
run, reference = json.load(open(run_path)), json.load(open(reference_path))
problems = []
losses = [p["loss"] for p in run["losses"]]
expected = [p["loss"] for p in reference["losses"]]
steps = [p["step"] for p in run["losses"]]
if steps != [p["step"] for p in reference["losses"]]:
    problems.append(f"logged steps {steps} differ from the CPU's")
worst = 0.0
for step, got, want in zip(steps, losses, expected):
    relative = abs(got - want) / abs(want)
    worst = max(worst, relative)
    if relative > tolerance:
        problems.append(f"step {step}: loss {got:.8f}, CPU {want:.8f} (relative {relative:.2e})")
drop = 1 - losses[-1] / losses[0] if losses else 0
if drop < min_drop:
    problems.append(f"the loss fell by {100 * drop:.1f} % ({losses[0]:.4f} -> {losses[-1]:.4f}), "
                    f"expected at least {100 * min_drop:.0f} %")
if not run.get("replicas_identical", False):
    problems.append("replicas_identical is false: the ranks' embeddings/norm weights differ")
backends = ", ".join(f"{f} {run['backends'][f]['name']}" for f in ("cross_entropy", "norm"))
summary = (f"{what}: {len(losses)} losses, largest relative difference to the CPU "
           f"{worst:.2e}, loss {losses[0]:.4f} -> {losses[-1]:.4f} (-{100 * drop:.1f} %), "
           f"{run['tokens_per_s']:.0f} tokens/s on {', '.join(run['devices'])} "
           f"({run['ranks_as']}), {backends}")
if problems:
    print(f"FAIL {summary}")
    for problem in problems:
        print(f"  {problem}")
    sys.exit(1)
print(f"PASS {summary}")
EOF
  if (( $? == 0 )); then passes=$((passes + 1)); else failures=$((failures + 1)); fi
  return 0
}

# A case: a CPU reference, then CUDA with --tp 1 and (2 GPUs) --tp 2.
check_case() {
  local case="$1"
  shift
  if ! run "$case-cpu" --device cpu "$@"; then
    fail "$case: the CPU reference run failed; see $logs/$case-cpu.err"
    return
  fi
  local tps=(1)
  (( gpus >= 2 )) && tps+=(2)
  for tp in "${tps[@]}"; do
    local name="$case-cuda-tp$tp"
    if run "$name" --device cuda --tp "$tp" "$@"; then
      compare "$name" "$case-cpu" "$case, --device cuda --tp $tp"
    else
      fail "$case, --device cuda --tp $tp: exit code $?; $(tail -n 3 "$logs/$name.err" | tr '\n' ' ')"
    fi
  done
  (( gpus < 2 )) && skip "$case, --device cuda --tp 2: one GPU"
  return 0
}

# The kernels first: a wrong kernel shows here by name, not as a loss that drifts.
kernel_test="${SWITCHYARD_TEST_LM_HEAD_CUDA:-$(dirname "$bin")/test_lm_head_cuda}"
if [[ -x "$kernel_test" ]]; then
  timeout "$run_timeout" "$kernel_test" > "$logs/test_lm_head_cuda.log" 2>&1
  rc=$?
  if (( rc == 0 )); then
    pass "test_lm_head_cuda: the CUDA kernels match the CPU kernels ($(grep -c 'WARNING' "$logs/test_lm_head_cuda.log") bit-exactness warning(s))"
  elif (( rc == 77 )); then
    skip "$(head -n 1 "$logs/test_lm_head_cuda.log" | sed 's/^SKIP //')"
  else
    fail "test_lm_head_cuda: exit $rc; see $logs/test_lm_head_cuda.log"
  fi
else
  skip "test_lm_head_cuda: not found at $kernel_test (stage it next to switchyard)"
fi

check_case corpus --steps 150 --log-every 25 ${corpus_args[@]+"${corpus_args[@]}"}
check_case synthetic-32001 --vocab 32001 --batch 256 --steps 100 --log-every 20
# LayerNorm with SGD on synthetic tokens, at lr 0.5: SGD's default lr 1.0 with LayerNorm runs
# through a chaotic stretch that amplifies rounding (on the CPU alone, --tp 2 differs from --tp 1
# by 1.3e-3 at step 75 on the documentation corpus of 2026-11-30), so CUDA cannot be held to the
# CPU within 1e-4 there; at 0.5 --tp 2 and 4 stay within 3e-7 of --tp 1 on the CPU. Synthetic
# data, so that edits to the documentation cannot change the run.
check_case layernorm-sgd --vocab 512 --normalization LayerNorm --optimizer sgd --lr 0.5 \
  --steps 150 --log-every 25

# Failures must be reported, never hung on.
if (( gpus >= 2 )); then
  run cuda-tp2-bad-backend --device cuda --tp 2 --norm nosuch --steps 5 ${corpus_args[@]+"${corpus_args[@]}"}
  rc=$?
  if (( rc == 1 )) && grep -q "nosuch" "$logs/cuda-tp2-bad-backend.err" &&
     python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if "error" in d else 1)' \
       "$logs/cuda-tp2-bad-backend.json" 2> /dev/null; then
    pass "--device cuda --tp 2 with a missing backend: exit 1, one JSON error document, the rank's reason"
  else
    fail "--device cuda --tp 2 with a missing backend: exit $rc (expected 1 with one JSON error); see $logs/cuda-tp2-bad-backend.err"
  fi
fi
too_many=$((gpus + 1))
run cuda-too-many --device cuda --tp "$too_many" --steps 5 ${corpus_args[@]+"${corpus_args[@]}"}
rc=$?
if (( rc == 1 )) && grep -q "needs $too_many CUDA devices" "$logs/cuda-too-many.err"; then
  pass "--device cuda --tp $too_many on $gpus GPU(s): refused, naming the devices needed"
else
  fail "--device cuda --tp $too_many on $gpus GPU(s): exit $rc; see $logs/cuda-too-many.err"
fi

echo "gpu_train_check: logs in $logs"
totals
(( failures == 0 )) || exit 1
exit 0
