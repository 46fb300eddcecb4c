#!/usr/bin/env python3
"""Tabulates scripts/ab-bench.sh's runs: for each suite and pass, each row's time old -> new in
every round and the range of new / old, rows not checked against float64 marked.

    python3 scripts/ab_compare.py gpu-out/r1 [--layout nhwc]
"""
import argparse
import json
import pathlib
import re
import sys


def runs_of(folder):
    """{(suite, pass): {round: {build: rows by id}}} from <suite>-<pass>-<old|new>-<round>.json."""
    runs = {}
    for path in sorted(folder.glob("*.json")):
        match = re.fullmatch(r"(.+)-(forward|backward)-(old|new)-(\d+)", path.stem)
        if not match:
            continue
        suite, pass_, build, round_ = match.groups()
        rows = {row["id"]: row for row in json.loads(path.read_text())}
        runs.setdefault((suite, pass_), {}).setdefault(int(round_), {})[build] = rows
    return runs


def table(rounds, layout):
    """The lines of one suite and pass: a row a case that both builds ran in every round that
    both builds finished."""
    finished = sorted(n for n, r in rounds.items() if "old" in r and "new" in r)
    if not finished:
        return ["(no round that both builds finished)"]
    both = [rounds[n] for n in finished]
    lines = ["| case | shape, dtype | " + " | ".join(f"round {n}" for n in finished) + " | new / old |",
             "|---|---|" + "---|" * len(finished) + "---|"]
    for case, first in both[0]["old"].items():
        if layout and first.get("layout") != layout:
            continue
        if any(case not in r["old"] or case not in r["new"] for r in both):
            continue
        times = [(r["old"][case]["inorm_ms"] * 1e3, r["new"][case]["inorm_ms"] * 1e3) for r in both]
        ratios = [new / old for old, new in times]
        checked = all(r[b][case].get("verified") for r in both for b in ("old", "new"))
        cells = " | ".join(f"{old:.2f} -> {new:.2f}" for old, new in times)
        lines.append(f"| {case} | {first.get('shape', '')} {first.get('dtype', '')} | {cells} | "
                     f"{min(ratios):.3f}-{max(ratios):.3f} |{'' if checked else ' NOT CHECKED'}")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--layout", help="only rows of this layout (nchw, nhwc)")
    args = parser.parse_args()
    runs = runs_of(args.folder)
    if not runs:
        print(f"{args.folder}: no ab-bench.sh runs", file=sys.stderr)
        return 1
    for (suite, pass_), rounds in sorted(runs.items()):
        print(f"\n## {suite}, {pass_} (us, old -> new a round; new / old)\n")
        print("\n".join(table(rounds, args.layout)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
