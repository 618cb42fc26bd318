#!/usr/bin/env python3
"""Draws switchyard-bench and peers.py results side by side, one panel per case.

    python3 bench/plot.py OUT/switchyard.json OUT/peers.json -o OUT/bench.png

Each panel shows the median ms of every backend (blue) and peer (orange) that ran the case,
whiskers from min to max (clipped at 1.3 x the tallest bar), "x floor" above each bar, and the case's floor as a dashed line (for
cross-entropy per-token cases the 2-pass floor too, dotted). The floor is the first file's
(switchyard-bench's when given first): bytes that must move / copy bandwidth measured in that
run. It also prints one table of all results, fastest first per case; with --table-only it does
only that (no matplotlib needed). Exit 0; 2 when matplotlib is missing and a PNG was asked for.
"""

import argparse
import json
import math
import sys


def load(paths):
    """Cases in first-seen order (the first file's floors win) and every result."""
    cases, order, results = {}, [], []
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit("plot.py: error: cannot read %s as JSON: %s" % (path, e))
        if doc.get("schema") != "switchyard-bench/1":
            sys.exit("plot.py: error: %s has schema %r, expected 'switchyard-bench/1'"
                     % (path, doc.get("schema")))
        for case in doc.get("cases", []):
            if case["name"] not in cases:
                cases[case["name"]] = case
                order.append(case["name"])
        for r in doc.get("results", []):
            r = dict(r)
            r["source"] = doc.get("tool", path)
            results.append(r)
    return order, cases, results


def ok(r):
    return r.get("status") == "ok" and r.get("time_ms")


def label(r):
    return r["name"] if r.get("kind") == "backend" else r["name"] + " (peer)"


def print_table(order, cases, results, out):
    headers = ["case", "backend / peer", "median ms", "x floor", "GB/s", "extra MiB", "check"]
    rows = []
    for name in order:
        here = sorted([r for r in results if r["case"] == name and ok(r)],
                      key=lambda r: r["time_ms"]["median"])
        for r in here:
            mem = r.get("memory") or {}
            check = r.get("check") or {}
            err = check.get("max_rel_error")
            rows.append([name, label(r), "%.4f" % r["time_ms"]["median"],
                         "%.2f" % r["x_floor"] if r.get("x_floor") is not None else "-",
                         "%.1f" % r["gb_per_s"] if r.get("gb_per_s") is not None else "-",
                         "%.1f" % (mem.get("extra_bytes", 0) / 2**20) if mem else "-",
                         ("PASS" if check.get("passed") else "FAIL")
                         + (" %.1e" % err if err is not None else "")])
        for r in results:
            if r["case"] == name and not ok(r):
                rows.append([name, label(r), r.get("status", "?"), "", "", "", "-"])
    widths = [max(len(str(row[i])) for row in [headers] + rows) for i in range(len(headers))]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in rows:
        print("  ".join(str(x).rjust(w) if 2 <= i <= 5 else str(x).ljust(w)
                        for i, (x, w) in enumerate(zip(row, widths))).rstrip(), file=out)
    # Why a backend or peer did not run (a missing library, an unsupported case): one line per
    # reason, with the cases it applies to.
    why, why_order = {}, []
    for r in results:
        if not ok(r) and r.get("reason"):
            key = (label(r), r.get("status", "?"), r["reason"])
            if key not in why:
                why[key] = []
                why_order.append(key)
            why[key].append(r["case"])
    for key in why_order:
        print("* %s: %s on %s: %s" % (key[0], key[1], ", ".join(why[key]), key[2]), file=out)


def draw(order, cases, results, png, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py: matplotlib is not installed: no PNG written (the table above has the "
              "numbers)", file=sys.stderr)
        return 2

    names = [n for n in order if any(ok(r) for r in results if r["case"] == n)] or order
    columns = 2 if len(names) > 1 else 1
    rows = int(math.ceil(len(names) / columns)) or 1
    fig, axes = plt.subplots(rows, columns, figsize=(8 * columns, 3.8 * rows), squeeze=False)
    for index, name in enumerate(names):
        ax = axes[index // columns][index % columns]
        case = cases[name]
        here = [r for r in results if r["case"] == name and ok(r)]
        here.sort(key=lambda r: (r.get("kind") != "backend", r["time_ms"]["median"]))
        xs = list(range(len(here)))
        medians = [r["time_ms"]["median"] for r in here]
        lows = [m - r["time_ms"]["min"] for m, r in zip(medians, here)]
        highs = [r["time_ms"]["max"] - m for m, r in zip(medians, here)]
        colors = ["tab:blue" if r.get("kind") == "backend" else "tab:orange" for r in here]
        if here:
            ax.bar(xs, medians, width=0.6, color=colors, yerr=[lows, highs], capsize=3,
                   ecolor="0.4")
            ax.set_xlim(-0.7, max(len(here), 4) - 0.3)
            ax.set_xticks(xs)
            ax.set_xticklabels([label(r) for r in here], rotation=20, ha="right", fontsize=8)
            for x, m, r in zip(xs, medians, here):
                if r.get("x_floor") is not None:
                    ax.annotate("%.2fx" % r["x_floor"], (x, m), textcoords="offset points",
                                xytext=(0, 3), ha="center", fontsize=7)
        floor = (case.get("floor") or {}).get("ms")
        if floor:
            ax.axhline(floor, color="black", linestyle="--", linewidth=1,
                       label="%s floor %.3f ms" % (case["floor"]["name"], floor))
        two = (case.get("floor_2pass") or {}).get("ms")
        if two and case.get("path") == "per_token":
            ax.axhline(two, color="0.3", linestyle=":", linewidth=1,
                       label="2-pass floor %.3f ms" % two)
        shape = "x".join(str(s) for s in case.get("shape", []))
        tp = "" if case.get("family") != "ce" else ", " + case.get("tp_mode", "")
        ax.set_title("%s [%s%s]" % (name, shape, tp), fontsize=9)
        ax.set_ylabel("ms (median, min-max)")
        # Outliers (a max far above the median) are clipped so the medians stay readable.
        top = max(medians + [floor or 0, two or 0]) * 1.3
        ax.set_ylim(0, top if top > 0 else None)
        if floor or two:
            ax.legend(fontsize=7, loc="upper left")
    for index in range(len(names), rows * columns):
        axes[index // columns][index % columns].axis("off")
    fig.suptitle(title or "switchyard-bench: backends (blue) and peers (orange)")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print("PNG written to %s" % png)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", nargs="+", help="switchyard-bench and/or peers.py JSON files")
    p.add_argument("-o", "--output", default="bench.png", help="PNG to write")
    p.add_argument("--title", default="")
    p.add_argument("--table-only", action="store_true", help="print the table, draw nothing")
    args = p.parse_args(argv)
    order, cases, results = load(args.json)
    if not order:
        sys.exit("plot.py: error: no cases in %s" % ", ".join(args.json))
    print_table(order, cases, results, sys.stdout)
    if args.table_only:
        return 0
    return draw(order, cases, results, args.output, args.title)


if __name__ == "__main__":
    sys.exit(main())
