#!/usr/bin/env python3
"""The speed issue's figures for two revisions, side by side in one run: `benches/compare.sh`.

Builds both revisions first (the base in a git worktree under the target directory, kept for
the next run; the head is the working tree): the `chokepoint` and `plugin_call` benches of
bosun-host, the `js_plugin` bench of bosun-js, and the release `bosun`. Then it measures, with
the two sides alternating run by run so that the machine's load falls on both alike:

- the per-call distributions the benches print (criterion's own estimates are skipped: a
  filter that matches none of them), `--rounds` runs of each, alternating;
- whole commands (`bosun --version`, `tools call read_file`, `tools call greet`, ...) through
  benches/cli.py, interleaved run by run;
- the size of each release binary.

It prints one Markdown table (the median over the rounds of each figure) with the command,
machine, load and commits, ready for docs/benchmarks.md.

Usage: benches/compare.sh BASE_REV [--rounds N] [--cli-runs N] [--no-cli]
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
OUT = TARGET / "compare"

# (package, bench) pairs; a side that lacks a bench's file skips it.
BENCHES = [
    ("bosun-host", "chokepoint", "crates/host/benches/chokepoint.rs"),
    ("bosun-host", "plugin_call", "crates/host/benches/plugin_call.rs"),
    ("bosun-js", "js_plugin", "crates/js/benches/js_plugin.rs"),
]
# Distribution lines the benches print: "<label> over N calls: p50 X µs, p90 Y µs, p99 Z µs".
LINE = re.compile(r"^(?P<label>.+?) over [\d,]+ (?:calls|samples): p50 (?P<p50>[\d.]+) (?P<unit>µs|ms), p90 (?P<p90>[\d.]+) (?:µs|ms), p99 (?P<p99>[\d.]+)")


def sh(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, check=True, **kw)


def base_tree(rev):
    tree = TARGET / "compare-base"
    want = sh(["git", "rev-parse", f"{rev}^{{commit}}"], ROOT, capture_output=True, text=True).stdout.strip()
    have = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    if have != want:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
        shutil.rmtree(tree, ignore_errors=True)
        sh(["git", "worktree", "prune"], ROOT)
        sh(["git", "worktree", "add", "--detach", str(tree), want], ROOT, capture_output=True)
    return tree


def forget_bosun_crates():
    """Both trees are one workspace, so their crates share artefact and fingerprint names in the
    one target directory and the other tree's would pass for fresh: forget Bosun's own crates so
    cargo builds this tree's; dependencies stay shared."""
    for profile in ("release",):
        d = TARGET / profile
        for pattern in (".fingerprint/bosun-*", "deps/libbosun_*", "deps/bosun_*", "build/bosun-*"):
            for path in d.glob(pattern):
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)


def executables(cmd, cwd):
    """Runs a cargo command with JSON messages; the executables it built, by target name."""
    proc = subprocess.run(cmd + ["--message-format=json"], cwd=cwd, capture_output=True, text=True, env=dict(os.environ, CARGO_TARGET_DIR=str(TARGET)))
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stderr[-4000:]}")
    found = {}
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable"):
            found[msg["target"]["name"]] = msg["executable"]
    return found


def build(side, tree, cli):
    """Builds one side's benches and (with `cli`) release binary; copies them under
    target/compare/<side>."""
    dest = OUT / side
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    forget_bosun_crates()
    started = time.time()
    have = {}
    for package, bench, source in BENCHES:
        if not (tree / source).exists():
            continue
        exe = executables(["cargo", "bench", "--locked", "--no-run", "-p", package, "--bench", bench], tree).get(bench)
        if exe:
            shutil.copy2(exe, dest / bench)
            have[bench] = dest / bench
    bosun = None
    if cli:
        exe = executables(["cargo", "build", "--locked", "--release", "-p", "bosun-cli"], tree).get("bosun")
        bosun = dest / "bosun"
        shutil.copy2(exe, bosun)
    print(f"built {side} in {time.time() - started:.0f} s", flush=True)
    return have, bosun


def run_bench(exe, tree):
    """One run of a bench executable with criterion's own measurements skipped; its
    distributions as {label: (p50, p90, p99, unit)}."""
    proc = subprocess.run([str(exe), "--bench", "no-criterion-estimates"], cwd=tree, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"{exe} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    found = {}
    for line in proc.stdout.splitlines():
        m = LINE.match(line.strip())
        if m:
            found[m["label"]] = (float(m["p50"]), float(m["p90"]), float(m["p99"]), m["unit"])
    return found


def load():
    return os.getloadavg()[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base", help="the revision to compare with (a commit, branch or tag)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each bench per side (alternating)")
    parser.add_argument("--cli-runs", type=int, default=20, help="runs of each whole command per side")
    parser.add_argument("--no-cli", action="store_true", help="skip the whole commands and the release binary (no release build of bosun)")
    args = parser.parse_args()

    base = base_tree(args.base)
    base_rev = sh(["git", "rev-parse", "--short", "HEAD"], base, capture_output=True, text=True).stdout.strip()
    head_rev = sh(["git", "rev-parse", "--short", "HEAD"], ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=ROOT).returncode != 0
    head_label = f"{head_rev}{' + working tree' if dirty else ''}"
    sides = {"base": base, "head": ROOT}
    built = {side: build(side, tree, not args.no_cli) for side, tree in sides.items()}

    load_before, started = load(), time.time()
    figures = {side: {} for side in sides}  # label -> list of (p50, p90, p99, unit)
    for round_ in range(args.rounds):
        order = ["base", "head"] if round_ % 2 == 0 else ["head", "base"]
        for bench in ("chokepoint", "plugin_call", "js_plugin"):
            for side in order:
                exe = built[side][0].get(bench)
                if exe is None:
                    continue
                for label, value in run_bench(exe, sides[side]).items():
                    figures[side].setdefault(label, []).append(value)
        print(f"round {round_ + 1} of {args.rounds} done", flush=True)

    cli_rows = []
    if not args.no_cli:
        out = OUT / "cli.json"
        sh([sys.executable, str(ROOT / "benches" / "cli.py"), "--runs", str(args.cli_runs), "--json", str(out),
            "--head", str(built["head"][1]), str(built["base"][1])], ROOT)
        cli_rows = json.loads(out.read_text())
    load_after = load()

    print()
    print(f"`benches/compare.sh {args.base}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, "
          f"{os.uname().nodename} ({os.cpu_count()} CPUs), load average {load_before:.1f} → {load_after:.1f}; "
          f"base `{base_rev}`, head `{head_label}`; {args.rounds} alternating runs of each bench, median of their p50 / p90 / p99")
    print()
    print(f"| measure | base `{base_rev}` | head `{head_label}` | change of p50 |")
    print("| --- | --- | --- | --- |")

    def cell(values):
        unit = values[0][3]
        p = [statistics.median(v[i] for v in values) for i in range(3)]
        return p, f"{p[0]:.2f} / {p[1]:.2f} / {p[2]:.2f} {unit}"

    labels = list(dict.fromkeys(list(figures["head"]) + list(figures["base"])))
    for label in labels:
        b, h = figures["base"].get(label), figures["head"].get(label)
        bp, bc = cell(b) if b else (None, "—")
        hp, hc = cell(h) if h else (None, "—")
        change = f"{(hp[0] / bp[0] - 1) * 100:+.0f} %" if bp and hp and bp[0] else ""
        print(f"| {label} (p50 / p90 / p99) | {bc} | {hc} | {change} |")
    by_row = {}
    for r in cli_rows:
        by_row.setdefault(r["row"], {})[r["binary"]] = r
    for row, binaries in by_row.items():
        h = binaries.get("this tree")
        b = next((v for k, v in binaries.items() if k.startswith("base")), None)
        if h is None or b is None:
            continue
        change = f"{(h['median_ms'] / b['median_ms'] - 1) * 100:+.0f} %"
        print(f"| `bosun {row}` (median / p90, peak RSS) | {b['median_ms']:.2f} / {b['p90_ms']:.2f} ms, {b['rss_mib']:.1f} MiB "
              f"| {h['median_ms']:.2f} / {h['p90_ms']:.2f} ms, {h['rss_mib']:.1f} MiB | {change} |")
    if args.no_cli:
        return 0
    sizes = {side: built[side][1].stat().st_size / 1e6 for side in sides}
    print(f"| release binary | {sizes['base']:.1f} MB | {sizes['head']:.1f} MB | {(sizes['head'] / sizes['base'] - 1) * 100:+.0f} % |")


if __name__ == "__main__":
    sys.exit(main())
