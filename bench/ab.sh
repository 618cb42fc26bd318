#!/usr/bin/env bash
# A/B leases on the GPU machine: builds of one plugin (or one build under other environment
# settings) timed by switchyard-bench in alternating rounds in one job, so that every variant
# meets the same machine, clocks and neighbours. The bench/results/*/ab-runs.txt files come
# from it. Each variant's .so replaces the staged one in turn (the plugin name is the file's, so
# selection cannot pick another copy); the staged one is put back at the end.
#
#   bash bench/ab.sh ROUNDS 'NAME|SO|ENV=VALUE ...' ...
#     SO    a libswitchyard-<plugin>.so to time, or - for the staged one
#     ENV   environment for that variant's run (experiment switches), may be empty
#   environment: STAGE (default build-stage, from tests/gpu/stage.sh), PLUGIN (te), FAMILY
#                (norm), DEVICE (cuda), CASES, HIDDEN (--norm-hidden), DTYPE (--dtype), BENCH_ARGS (more
#                switchyard-bench flags)
#
# One line a variant, round and case: "[NAME rROUND] case median forward backward x-floor check".
# The floor is this run's: a 1 GiB copy's bandwidth (so it reads a little lower than
# bench/run_gpu.sh's 4 GiB copy); the times are what to compare. Then one line a case and
# variant, "median CASE NAME median (forward / backward) over N rounds", the medians over the
# rounds (rounds whose check failed are counted, and said), in the order the variants were given.
set -u
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
stage=$(cd "${STAGE:-$repo/build-stage}" && pwd) || { echo "ab.sh: no stage folder" >&2; exit 2; }
plugin=${PLUGIN:-te}
rounds=${1:?usage: bash bench/ab.sh ROUNDS 'NAME|SO|ENV=VALUE ...' ...}
shift
staged=$stage/lib/switchyard/plugins/libswitchyard-$plugin.so
[[ -f $staged ]] || { echo "ab.sh: $staged is not staged" >&2; exit 2; }
work=$(mktemp -d)
cp "$staged" "$work/staged.so"
trap 'cp "$work/staged.so" "$staged"; rm -rf "$work"' EXIT
read -r -a extra <<< "${BENCH_ARGS:-}"
for round in $(seq 1 "$rounds"); do
  for spec in "$@"; do
    IFS='|' read -r name so envs <<< "$spec"
    [[ $so == - ]] && so=$work/staged.so
    cp "$so" "$staged" || exit 2
    read -r -a settings <<< "$envs"
    if ! env "${settings[@]}" "$stage/with-env" "$stage/bin/switchyard-bench" --device "${DEVICE:-cuda}" \
        --backends "$plugin" --family "${FAMILY:-norm}" --copy-bytes 1073741824 \
        ${CASES:+--cases "$CASES"} ${HIDDEN:+--norm-hidden "$HIDDEN"} ${DTYPE:+--dtype "$DTYPE"} \
        "${extra[@]}" --json "$work/run.json" > "$work/run.out" 2>&1; then
      echo "[$name r$round] switchyard-bench failed:"
      tail -5 "$work/run.out"
      continue
    fi
    python3 - "$work/run.json" "$plugin" "$name" "$round" <<'PY' | tee -a "$work/lines.txt"
import json, sys
path, plugin, name, round_ = sys.argv[1:]
for r in json.load(open(path))["results"]:
    if r.get("name") != plugin or r.get("status") != "ok":
        continue
    t, c = r["time_ms"], r.get("check", {})
    print(f"[{name} r{round_}] {r['case']:16s} {t['median']:.4f} {t['forward_median']:.4f} "
          f"{(t.get('backward_median') or 0):.4f} {r['x_floor']:.3f} "
          f"{'ok' if c.get('passed') else 'CHECK-FAIL'} {c.get('max_rel_error', 0):.3g}")
PY
  done
done
[[ -s $work/lines.txt ]] || exit 0
python3 - "$work/lines.txt" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(lambda: collections.defaultdict(list))
failed = collections.Counter()
for line in open(sys.argv[1]):
    fields = line.split()
    runs[fields[2]][fields[0][1:]].append([float(v) for v in fields[3:6]])
    failed[fields[2], fields[0][1:]] += fields[7] != "ok"
for case in sorted(runs):
    for name, times in runs[case].items():
        m = [statistics.median(t[i] for t in times) for i in range(3)]
        bad = f", check failed in {failed[case, name]}" if failed[case, name] else ""
        print(f"median {case:16s} {name:12s} {m[0]:.4f} ({m[1]:.4f} / {m[2]:.4f}) over {len(times)} rounds{bad}")
PY
