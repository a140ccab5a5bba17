#!/usr/bin/env python3
"""Whole-process timings of the commands a user runs, side by side in one run.

For each row, every binary given runs the same command in the same prepared `$BOSUN_HOME` and
workspace, interleaved run by run so that load on the machine falls on all of them alike:
median and p90 wall time over the runs, and the peak resident set of one more run (GNU time).

Rows:
  0. `bosun --version` (starting the binary and nothing else);
  1. `bosun tools call read_file` of a small file, no plugins configured;
  2. with one Forge plugin enabled (the `plugins new --forge` scaffold): `tools list`,
     `tools call read_file`, and `tools call greet` (the plugin's own tool);
  3. `bosun plugins list` with 100 installed native plugins.
Peers, for scale: `/bin/true` (the cost of starting any process) and `node -e 0` (the floor
under which no Node.js-based agent CLI can start).

Usage: python3 benches/cli.py [--runs N] [--json OUT] [--head BOSUN] [BASE_BOSUN ...]
  Builds the release binary of this tree (`cargo build --release -p bosun-cli`) and measures it
  next to each BASE_BOSUN given (for example a release build of an earlier revision). `--json`
  also writes every row's figures to OUT (benches/compare.sh reads them).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def timed(cmd, cwd, env):
    """Wall milliseconds of one run of `cmd`; its output is discarded."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace")
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{err}")
    return wall


def peak_rss(cmd, cwd, env):
    """Peak resident set (MiB) of one run, as GNU time reports it: the child's own, not the
    memory of this Python process it was forked from (which `wait4` would count)."""
    gnu_time = shutil.which("time") or "/usr/bin/time"
    if not os.path.exists(gnu_time):
        return float("nan")
    out = subprocess.run([gnu_time, "-f", "%M", *cmd], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        return int(out.stderr.strip().splitlines()[-1]) / 1024
    except (ValueError, IndexError):
        return float("nan")


def prepare(bosun, plugin):
    """A fresh home and workspace; with `plugin`, the Forge scaffold installed and enabled."""
    home = Path(tempfile.mkdtemp(prefix="bosun-cli-bench-home-"))
    ws = Path(tempfile.mkdtemp(prefix="bosun-cli-bench-ws-"))
    (ws / ".git").mkdir()
    (ws / "notes.txt").write_text("a small file\n" * 20)
    env = dict(os.environ, BOSUN_HOME=str(home))
    if plugin:
        src = Path(tempfile.mkdtemp(prefix="bosun-cli-bench-src-")) / "hello-js"
        subprocess.run([bosun, "plugins", "new", "hello-js", "--forge", "--dir", str(src)], cwd=ws, env=env, check=True, capture_output=True)
        subprocess.run([bosun, "plugins", "install", str(src), "--yes"], cwd=ws, env=env, check=True, capture_output=True)
    return home, ws, env


def prepare_hundred(bosun):
    guests = Path(os.environ.get("BOSUN_GUEST_TARGET_DIR", TARGET / "guests"))
    examples = [guests / "wasm32-wasip2" / "release" / f"{n}.wasm" for n in ("hello", "todos", "fs_stats", "web_tools")]
    if not all(e.exists() for e in examples):
        subprocess.run(["cargo", "build", "--quiet", "-p", "bosun-test-programs"], cwd=ROOT, check=True)
    home, ws, env = prepare(bosun, False)
    config = []
    for i in range(100):
        d = home / "plugins" / f"p{i:03}"
        d.mkdir(parents=True)
        shutil.copy(examples[i % len(examples)], d / "plugin.wasm")
        config.append(f'[plugins.p{i:03}]\npath = "p{i:03}"\n')
    (home / "config.toml").write_text("\n".join(config))
    for i in range(100):
        subprocess.run([bosun, "plugins", "trust", f"p{i:03}", "--yes"], cwd=ws, env=env, check=True, capture_output=True)
    return home, ws, env


RESULTS = []


def measure(label, commands, runs):
    """`commands`: (name, argv, cwd, env) each; runs interleaved; prints one line per command
    and keeps the figures in RESULTS."""
    for _, argv, cwd, env in commands:  # warm the page cache and any kept state
        for _ in range(3):
            timed(argv, cwd, env)
    walls = {name: [] for name, *_ in commands}
    rss = {name: peak_rss(argv, cwd, env) for name, argv, cwd, env in commands}
    for _ in range(runs):
        for name, argv, cwd, env in commands:
            walls[name].append(timed(argv, cwd, env))
    print(f"\n{label}")
    for name, *_ in commands:
        w = sorted(walls[name])
        p90 = w[int(len(w) * 0.9) - 1]
        print(f"  {name:<28} median {statistics.median(w):7.2f} ms   p90 {p90:7.2f} ms   peak RSS {rss[name]:6.1f} MiB", flush=True)
        RESULTS.append({"row": label, "binary": name, "median_ms": statistics.median(w), "p90_ms": p90, "rss_mib": rss[name]})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--head", help="this tree's release binary, already built (default: build it)")
    parser.add_argument("--json", help="also write every figure to this file")
    parser.add_argument("base", nargs="*", help="other bosun binaries to measure alongside")
    args = parser.parse_args()
    head = args.head
    if head is None:
        subprocess.run(["cargo", "build", "--quiet", "--release", "--locked", "-p", "bosun-cli"], cwd=ROOT, check=True)
        head = str(TARGET / "release" / "bosun")
    # Each binary runs in its own prepared workspace: a relative path is taken from here.
    head = str(Path(head).resolve())
    binaries = [("this tree", head)] + [(f"base {Path(b).name}", str(Path(b).resolve())) for b in args.base]
    node = shutil.which("node")
    peers = [("peer /bin/true", ["/bin/true"])] + ([("peer node -e 0", [node, "-e", "0"])] if node else [])
    print(f"{os.uname().nodename}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}, {args.runs} runs each")

    # Each binary prepares its own home, so a binary reads only state it wrote itself.
    homes = {name: prepare(path, False) for name, path in binaries}
    rows = [(name, [path, "--version"], homes[name][1], homes[name][2]) for name, path in binaries]
    rows += [(peer, argv, homes["this tree"][1], None) for peer, argv in peers[:1]]
    measure("--version", rows, args.runs)
    rows = [(name, [path, "tools", "call", "read_file", '{"path": "notes.txt"}'], homes[name][1], homes[name][2]) for name, path in binaries]
    rows += [(peer, argv, homes["this tree"][1], None) for peer, argv in peers]
    measure("tools call read_file, no plugins", rows, args.runs)

    homes_js = {name: prepare(path, True) for name, path in binaries}
    for label, argv in [
        ("tools list, one Forge plugin enabled", ["tools", "list"]),
        ("tools call read_file, one Forge plugin enabled", ["tools", "call", "read_file", '{"path": "notes.txt"}']),
        ("tools call greet (the Forge plugin's tool)", ["tools", "call", "greet", '{"name": "Ada"}', "--yes"]),
    ]:
        rows = [(name, [path] + argv, homes_js[name][1], homes_js[name][2]) for name, path in binaries]
        measure(label, rows, args.runs)

    homes_100 = {name: prepare_hundred(path) for name, path in binaries}
    rows = [(name, [path, "plugins", "list"], homes_100[name][1], homes_100[name][2]) for name, path in binaries]
    measure("plugins list, 100 installed native plugins", rows, args.runs)

    if args.json:
        Path(args.json).write_text(json.dumps(RESULTS, indent=1))
    for home, ws, _ in list(homes.values()) + list(homes_js.values()) + list(homes_100.values()):
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(ws, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
