#!/usr/bin/env python3
"""How Bosun's costs grow with the work: one command, a table and a log-log SVG plot per axis.

Axes (the full range; `--quick` stops each a decade or two lower):
  policy    rules in the user's config, 10 -> 100,000: decision time p50/p99 (in-process, the
            `decide_scale` example of bosun-policy) and `bosun policy check` as a whole process
            (loading and compiling the table);
  plugins   installed plugins of each format (WebAssembly components, Forge JavaScript),
            1 -> 1,000: `plugins list`, the start of `bosun serve --stdio` (to its tool list),
            its first tool call, and its resident memory then;
  js        JavaScript plugins in use in one `bosun serve`, 1 -> 200: with the instance slots
            raised to 200 (`[sandbox] plugin_instances`), all alive: the process's private memory
            and a warm call's p50 (from this script's own MCP client); and the p50 of calls going
            round all of them, with 200 slots and with the default 64 (past 64, the idle
            instances are released, least recently used first);
  http      concurrent clients of `bosun serve --http`, 1 -> 256: calls/s, p50/p99, RSS (the
            `mcp_http_load` example of bosun-mcp);
  session   turns in a stored session, 10 -> 10,000: `bosun run --resume` of one more turn
            against the scripted model, `sessions show`, the file's size;
  trace     tool calls in a run's trace, 1 -> 1,000,000: `bosun inspect` and `inspect --json`,
            wall time and peak memory;
  files     files in the workspace, 1k -> 1M: `tools call list_files` and `tools call search`.

Every binary given is measured at every point, interleaved run by run, each in a home it
prepared itself. Results: `docs/scale/<axis>.svg`, `docs/scale/results.md` (tables) and
`docs/scale/results.json`.

Usage: python3 benches/scale.py [--quick] [--axes policy,trace,...] [--runs N]
                                [--head BOSUN] [--base BOSUN]
  Without --head it builds this tree's release binary. --base adds an earlier build's curve.
"""

import argparse
import json
import math
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
OUT = ROOT / "docs" / "scale"
GUESTS = Path(os.environ.get("BOSUN_GUEST_TARGET_DIR", TARGET / "guests")) / "wasm32-wasip2" / "release"

# (full range, quick range) per axis.
RANGES = {
    "policy": ([10, 100, 1_000, 10_000, 100_000], [10, 100, 1_000, 10_000]),
    "plugins": ([1, 10, 100, 1_000], [1, 10, 100]),
    # 200 alive needs `[sandbox] plugin_instances = 200`; the default 64 slots release idle ones.
    "js": ([1, 4, 16, 64, 200], [1, 4, 16]),
    "http": ([1, 4, 16, 64, 256], [1, 4, 16]),
    "session": ([10, 100, 1_000, 10_000], [10, 100, 1_000]),
    "trace": ([1, 100, 10_000, 100_000, 1_000_000], [1, 100, 10_000]),
    "files": ([1_000, 10_000, 100_000, 1_000_000], [1_000, 10_000]),
}
# A build that reads a whole trace into memory is not run past this many calls: at a million it
# would take several GiB of a machine other work shares.
LOADING_TRACE_CAP = 100_000


# ---------------------------------------------------------------------------------------------
# Running and measuring


def run(cmd, **kw):
    kw.setdefault("check", True)
    return subprocess.run([str(c) for c in cmd], **kw)


def timed(cmd, cwd=None, env=None, stdin=None):
    """Wall milliseconds of one run; its output is discarded; a failure stops the bench."""
    start = time.perf_counter()
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, input=stdin,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                         f"{proc.stderr.decode(errors='replace')[-2000:]}")
    return wall


def peak_rss(cmd, cwd=None, env=None):
    """Peak resident set (MiB) of one run, as GNU time reports it."""
    gnu = "/usr/bin/time"
    if not os.path.exists(gnu):
        return float("nan")
    out = subprocess.run([gnu, "-f", "%M", *map(str, cmd)], cwd=cwd, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        return int(out.stderr.strip().splitlines()[-1]) / 1024
    except (ValueError, IndexError):
        return float("nan")


def medians(binaries, make_cmd, runs):
    """Median wall ms per binary of `make_cmd(name) -> (argv, cwd, env)`, interleaved."""
    walls = {name: [] for name in binaries}
    for name in binaries:  # one warm-up run each
        timed(*make_cmd(name))
    for _ in range(runs):
        for name in binaries:
            walls[name].append(timed(*make_cmd(name)))
    return {name: statistics.median(w) for name, w in walls.items()}


def smaps(pid):
    """(Rss, Private) of a live process in MiB, from /proc/PID/smaps_rollup."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                fields[parts[0][:-1]] = int(parts[1])
    private = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return fields.get("Rss", 0) / 1024, private / 1024


class Stdio:
    """A minimal MCP client over `bosun serve --stdio` (newline-delimited JSON-RPC)."""

    def __init__(self, bosun, cwd, env):
        self.proc = subprocess.Popen([str(bosun), "serve", "--stdio"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.next_id = 0

    def request(self, method, params):
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                          "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"bosun serve --stdio closed its output during {method}")
            message = json.loads(line)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise SystemExit(f"{method}: {message['error']}")
                return message["result"]

    def start(self):
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "scale.py", "version": "1"}})
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        self.proc.stdin.flush()
        return self.request("tools/list", {})["tools"]

    def call(self, tool, arguments):
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise SystemExit(f"{tool} failed: {result}")
        return result

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def scratch(prefix):
    return Path(tempfile.mkdtemp(prefix=f"bosun-scale-{prefix}-"))


def home_and_ws(prefix):
    base = scratch(prefix)
    home, ws = base / "home", base / "ws"
    home.mkdir()
    (ws / ".git").mkdir(parents=True)
    return base, home, ws, dict(os.environ, BOSUN_HOME=str(home))


# ---------------------------------------------------------------------------------------------
# The axes. Each returns {"x": label, "rows": [{"n": N, "<binary> <measure>": value, ...}],
# "panels": [(title, unit, [(series label, binary, measure key)])]}


def axis_policy(binaries, points, runs):
    example = TARGET / "release" / "examples" / "decide_scale"
    if not example.exists():
        run(["cargo", "build", "--quiet", "--release", "-p", "bosun-policy", "--example", "decide_scale"], cwd=ROOT)
    homes = {}
    rows = []
    for n in points:
        row = {"n": n}
        out = run([example, n, 100_000 if n <= 10_000 else 20_000], capture_output=True, text=True).stdout
        decided = json.loads(out.strip().splitlines()[-1])
        row["p50 ns"], row["p99 ns"] = decided["p50_ns"], decided["p99_ns"]
        row["parse+build ms"] = decided["parse_ms"] + decided["build_ms"]
        for name in binaries:
            base, home, ws, env = home_and_ws("policy")
            (home / "config.toml").write_text(policy_table(n))
            homes[name] = (base, ws, env)
        walls = medians(binaries, lambda b: ([binaries[b], "policy", "check", "builtin.tool.read_file"],
                                             homes[b][1], homes[b][2]), runs)
        for name in binaries:
            row[f"{name} policy check ms"] = walls[name]
            shutil.rmtree(homes[name][0], ignore_errors=True)
        rows.append(row)
        print(f"  policy {n:>7} rules: {row}", flush=True)
    return {"x": "rules", "rows": rows, "panels": [
        ("one decision (in-process)", "ns", [("p50", None, "p50 ns"), ("p99", None, "p99 ns")]),
        ("loading the table", "ms", [("parse + build (in-process)", None, "parse+build ms")] +
         [(f"bosun policy check, {b}", b, f"{b} policy check ms") for b in binaries]),
    ]}


def policy_table(n):
    globs = max(n // 10, 1)
    lines = []
    for i in range(max(n - globs - 1, 0)):
        lines.append(f'[[policy.rules]]\naction = "plugin.p{i}.tool.t{i}"\ndecision = "ask"\n')
    for i in range(globs):
        lines.append(f'[[policy.rules]]\naction = "plugin.g{i}.tool.*"\ndecision = "deny"\n')
    lines.append('[[policy.rules]]\naction = "builtin.tool.*"\ndecision = "allow"\n')
    return "\n".join(lines)


def install_wasm(bosun, home, ws, env, count):
    hello = GUESTS / "hello.wasm"
    if not hello.exists():
        run(["cargo", "build", "--quiet", "-p", "bosun-test-programs"], cwd=ROOT)
    config = []
    for i in range(count):
        d = home / "plugins" / f"w{i:04}"
        d.mkdir(parents=True)
        shutil.copy(hello, d / "plugin.wasm")
        config.append(f'[plugins.w{i:04}]\npath = "w{i:04}"\n')
    (home / "config.toml").write_text("\n".join(config))
    for i in range(count):
        run([bosun, "plugins", "trust", f"w{i:04}", "--yes"], cwd=ws, env=env, capture_output=True)
    return "greet", {"name": "Ada"}


def install_forge(bosun, home, ws, env, count):
    src = home.parent / "src"
    src.mkdir(exist_ok=True)
    run([bosun, "plugins", "new", "scaffold", "--forge", "--dir", src / "scaffold"], cwd=ws, env=env, capture_output=True)
    manifest = (src / "scaffold" / "plugin.json").read_text()
    code = (src / "scaffold" / "index.mjs").read_text()
    for i in range(count):
        name = f"js{i:04}"
        d = src / name
        d.mkdir()
        (d / "plugin.json").write_text(manifest.replace('"scaffold"', f'"{name}"'))
        # Each plugin's tool has a name of its own: a later plugin's tool of the same name is
        # not offered.
        (d / "index.mjs").write_text(code.replace('name: "greet"', f'name: "greet_{i}"'))
        run([bosun, "plugins", "install", d, "--yes"], cwd=ws, env=env, capture_output=True)
    return "greet_0", {"name": "Ada"}


FORMATS = {"wasm": install_wasm, "forge": install_forge}


def serve_once(bosun, ws, env, tool, args):
    """(ms to the tool list, ms of the first call, RSS MiB after it) of one `bosun serve --stdio`;
    None for the call and RSS when the call failed (printed: a build that cannot serve this many
    plugins shows a gap in its curve instead of stopping the bench)."""
    started = time.perf_counter()
    server = Stdio(bosun, ws, env)
    server.start()
    listed = time.perf_counter()
    try:
        server.call(tool, args)
    except SystemExit as failed:
        print(f"  {bosun}: {failed}", flush=True)
        server.close()
        return (listed - started) * 1000, None, None
    called = time.perf_counter()
    rss = smaps(server.proc.pid)[0]
    server.close()
    return (listed - started) * 1000, (called - listed) * 1000, rss


def median_or_none(values):
    values = list(values)
    return None if any(v is None for v in values) else statistics.median(values)


def axis_plugins(binaries, points, runs):
    """`plugins list`, and `bosun serve --stdio`'s start, first call and RSS, by plugins installed.

    A JavaScript plugin is listed from the description its last activation registered
    (`$BOSUN_HOME/cache/js-plugins`); the first start after an install has none and activates
    every plugin to learn its tools. Both are measured: "serve start" with the descriptions kept
    (every start but the first), "first serve start" with them removed before each run."""
    rows = []
    for n in points:
        row = {"n": n}
        for fmt, install in FORMATS.items():
            prepared = {}
            for name, bosun in binaries.items():
                base, home, ws, env = home_and_ws(f"plugins-{fmt}")
                tool, args = install(bosun, home, ws, env, n)
                prepared[name] = (base, home, ws, env, tool, args)
            walls = medians(binaries, lambda b: ([binaries[b], "plugins", "list"], prepared[b][2], prepared[b][3]), runs)
            for name, bosun in binaries.items():
                base, home, ws, env, tool, args = prepared[name]
                row[f"{name} {fmt} plugins list ms"] = walls[name]
                if fmt == "forge":
                    firsts = []
                    for _ in range(max(runs // 2, 1)):
                        shutil.rmtree(home / "cache" / "js-plugins", ignore_errors=True)
                        firsts.append(serve_once(bosun, ws, env, tool, args))
                    row[f"{name} {fmt} first serve start ms"] = statistics.median(f[0] for f in firsts)
                    row[f"{name} {fmt} first serve RSS MiB"] = median_or_none(f[2] for f in firsts)
                serve_once(bosun, ws, env, tool, args)  # warm-up: what is kept is kept now
                kept = [serve_once(bosun, ws, env, tool, args) for _ in range(max(runs // 2, 2))]
                row[f"{name} {fmt} serve start ms"] = statistics.median(k[0] for k in kept)
                row[f"{name} {fmt} first call ms"] = median_or_none(k[1] for k in kept)
                row[f"{name} {fmt} RSS MiB"] = median_or_none(k[2] for k in kept)
                shutil.rmtree(base, ignore_errors=True)
        rows.append(row)
        print(f"  plugins {n:>5}: {row}", flush=True)
    panels = []
    for title, key, unit in [("bosun plugins list", "plugins list ms", "ms"),
                             ("bosun serve --stdio: start to its tool list", "serve start ms", "ms"),
                             ("bosun serve --stdio: first call", "first call ms", "ms"),
                             ("bosun serve --stdio: resident memory after it", "RSS MiB", "MiB")]:
        panels.append((title, unit, [(f"{fmt}, {b}", b, f"{b} {fmt} {key}") for fmt in FORMATS for b in binaries]))
    panels.append(("bosun serve --stdio, first start after install (nothing kept): to its tool list", "ms",
                   [(f"forge, {b}", b, f"{b} forge first serve start ms") for b in binaries]))
    panels.append(("the same: resident memory after its first call", "MiB",
                   [(f"forge, {b}", b, f"{b} forge first serve RSS MiB") for b in binaries]))
    return {"x": "installed plugins", "rows": rows, "panels": panels}


def with_slots(bosun, home, ws, env, slots):
    """Sets `[sandbox] plugin_instances` in the home's config; False when the binary does not
    know the key (an earlier build with a fixed 64 slots), whose config is then left as it was."""
    config = home / "config.toml"
    kept = config.read_text() if config.exists() else ""
    config.write_text(kept + f"\n[sandbox]\nplugin_instances = {slots}\n")
    if run([bosun, "plugins", "list"], cwd=ws, env=env, capture_output=True, check=False).returncode == 0:
        return True
    config.write_text(kept)
    return False


def call_times(server, tools, calls):
    """Microseconds of each of `calls` calls, rotating over `tools`; None when one failed (a
    build that cannot hold them shows a gap in its curve)."""
    times = []
    try:
        for i in range(calls):
            started = time.perf_counter()
            server.call(tools[i % len(tools)], {"name": "Ada"})
            times.append((time.perf_counter() - started) * 1e6)
    except SystemExit as failed:
        print(f"  {failed}", flush=True)
        return None
    return times


def axis_js(binaries, points, runs):
    """`bosun serve --stdio` with N Forge plugins in use, two ways.

    Alive: the slots raised to the largest N (`[sandbox] plugin_instances`), the first N plugins
    called once each so N instances are alive, then one plugin called warm; the process's private
    memory. Rotating: calls going round all N plugins in turn, with the slots raised (every
    instance stays alive) and with the default 64 slots — past 64 a strict rotation is the least
    recently used release's worst case: every call finds its plugin released and activates it
    again (releasing the next one in the round)."""
    top = max(points)
    rows = {n: {"n": n} for n in points}
    for name, bosun in binaries.items():
        for slots in (top, 64):
            base, home, ws, env = home_and_ws("js")
            install_forge(bosun, home, ws, env, top)
            settable = with_slots(bosun, home, ws, env, slots)
            server = Stdio(bosun, ws, env)
            server.start()
            before = smaps(server.proc.pid)[1]
            alive = 0
            for n in points:
                tools = [f"greet_{i}" for i in range(n)]
                if slots == top:
                    row = rows[n]
                    failed = False
                    try:
                        while alive < n:
                            server.call(f"greet_{alive}", {"name": "Ada"})
                            alive += 1
                    except SystemExit as error:
                        print(f"  js {name}: {error}", flush=True)
                        failed = True
                    warm = None if failed else call_times(server, [tools[-1]], 350)
                    rss, private = smaps(server.proc.pid)
                    row[f"{name} private MiB"] = None if failed else private
                    row[f"{name} private per instance MiB"] = None if failed else (private - before) / n
                    row[f"{name} warm call p50 us"] = warm and statistics.median(warm[50:])
                    rotating = None if failed else call_times(server, tools, max(3 * n, 300))
                    row[f"{name} rotating, {top} slots, p50 us"] = rotating and statistics.median(rotating[n:])
                    row[f"{name} {top} slots settable"] = settable
                else:
                    rotating = call_times(server, tools, max(3 * n, 300))
                    rows[n][f"{name} rotating, 64 slots, p50 us"] = rotating and statistics.median(rotating[n:])
                print(f"  js {name} {slots} slots, {n:>4} plugins: {rows[n]}", flush=True)
            server.close()
            shutil.rmtree(base, ignore_errors=True)
    for row in rows.values():
        for name in binaries:
            row.pop(f"{name} {top} slots settable", None)
    return {"x": "JavaScript plugins in use", "rows": [rows[n] for n in points], "panels": [
        (f"private memory of bosun serve, all alive", "MiB", [(f"{b}", b, f"{b} private MiB") for b in binaries]),
        ("warm call p50, one plugin (MCP over stdio)", "µs", [(f"{b}", b, f"{b} warm call p50 us") for b in binaries]),
        ("call p50, rotating over all of them", "µs",
         [(f"{b}, {slots} slots", b, f"{b} rotating, {slots} slots, p50 us") for slots in (top, 64) for b in binaries]),
    ]}


def axis_http(binaries, points, runs):
    load = TARGET / "release" / "examples" / "mcp_http_load"
    if not load.exists():
        run(["cargo", "build", "--quiet", "--release", "-p", "bosun-mcp", "--example", "mcp_http_load"], cwd=ROOT)
    rows = []
    prepared = {}
    for name, bosun in binaries.items():
        base, home, ws, env = home_and_ws("http")
        (home / "plugins" / "hello").mkdir(parents=True)
        shutil.copy(GUESTS / "hello.wasm", home / "plugins" / "hello" / "plugin.wasm")
        run([bosun, "plugins", "enable", "hi", "--path", "hello", "--yes"], cwd=ws, env=env, capture_output=True)
        prepared[name] = (base, ws, env)
    for n in points:
        row = {"n": n}
        total = max(2_000, n * 40)
        for name, bosun in binaries.items():
            base, ws, env = prepared[name]
            server = subprocess.Popen([str(bosun), "serve", "--http", "127.0.0.1:0"], cwd=ws, env=env,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)
            try:
                line = server.stderr.readline()
                url = line[line.index("http://"):].strip()
                out = run([load, url, n, total, "greet", '{"name": "Ada"}', "--rss-pid", server.pid],
                          capture_output=True, text=True).stdout
                result = json.loads(out.strip().splitlines()[-1])
            finally:
                server.kill()
                server.wait()
            if result["errors"]:
                raise SystemExit(f"{name}: {result['errors']} errors with {n} clients")
            row[f"{name} calls/s"] = result["per_second"]
            row[f"{name} p50 ms"] = result["p50_ms"]
            row[f"{name} p99 ms"] = result["p99_ms"]
            row[f"{name} RSS MiB"] = max(result["rss_kib"]) / 1024
        rows.append(row)
        print(f"  http {n:>4} clients: {row}", flush=True)
    for base, _, _ in prepared.values():
        shutil.rmtree(base, ignore_errors=True)
    return {"x": "concurrent clients", "rows": rows, "panels": [
        ("throughput", "calls/s", [(b, b, f"{b} calls/s") for b in binaries]),
        ("latency", "ms", [(f"{q}, {b}", b, f"{b} {q} ms") for q in ("p50", "p99") for b in binaries]),
        ("server resident memory", "MiB", [(b, b, f"{b} RSS MiB") for b in binaries]),
    ]}


SCRIPT = {"model": "scale (a script, not a model)", "each_task": True, "steps": [{"text": "Done."}]}


def axis_session(binaries, points, runs):
    any_bosun = next(iter(binaries.values()))
    base = scratch("session-model")
    (base / "script.json").write_text(json.dumps(SCRIPT))
    url_file = base / "url"
    model = subprocess.Popen([str(any_bosun), "demo-model", "serve", str(base / "script.json"), "--port", "0"],
                             stdout=open(url_file, "w"), stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if url_file.read_text().strip():
                break
            time.sleep(0.05)
        url = url_file.read_text().splitlines()[0].strip()
        prepared = {}
        for name, bosun in binaries.items():
            b, home, ws, env = home_and_ws("session")
            (home / "config.toml").write_text(
                f'[models.demo]\nprovider = "openai-chat"\nbase_url = "{url}"\nmodel = "bosun-scripted"\n')
            run([bosun, "run", "Say something."], cwd=ws, env=env, capture_output=True)
            [path] = list((home / "sessions").glob("*.json"))
            prepared[name] = (b, ws, env, path, json.loads(path.read_text()))
        rows = []
        for n in points:
            row = {"n": n}
            for name, (b, ws, env, path, seed) in prepared.items():
                session = dict(seed)
                turn = seed["messages"][-2:]
                session["messages"] = seed["messages"][:-2] + [m for i in range(n) for m in
                                                               [dict(turn[0], content=f"Turn {i}: say something."), turn[1]]]
                text = json.dumps(session)
                path.write_text(text)
                os.chmod(path, 0o600)
                row[f"{name} file KiB"] = len(text) / 1024
                prepared[name] = (b, ws, env, path, seed, text)
            def resume(name):
                b, ws, env, path, seed, text = prepared[name]
                path.write_text(text)  # every run starts from the same N turns
                return ([binaries[name], "run", "--resume", path.stem, "One more."], ws, env)
            walls = medians(binaries, resume, runs)
            shows = medians(binaries, lambda nm: ([binaries[nm], "sessions", "show", prepared[nm][3].stem],
                                                  prepared[nm][1], prepared[nm][2]), runs)
            for name in binaries:
                row[f"{name} run --resume ms"] = walls[name]
                row[f"{name} sessions show ms"] = shows[name]
                b, ws, env, path, seed, text = prepared[name]
                path.write_text(text)
                row[f"{name} peak RSS MiB"] = peak_rss([binaries[name], "run", "--resume", path.stem, "One more."], ws, env)
                kept = json.loads(path.read_text())
                row[f"{name} messages kept"] = len(kept["messages"])
                prepared[name] = (b, ws, env, path, seed)
            rows.append(row)
            print(f"  session {n:>6} turns: {row}", flush=True)
    finally:
        model.kill()
        model.wait()
    for b, *_ in prepared.values():
        shutil.rmtree(b, ignore_errors=True)
    shutil.rmtree(base, ignore_errors=True)
    return {"x": "turns in the session", "rows": rows, "panels": [
        ("time", "ms", [(f"{what}, {b}", b, f"{b} {what} ms") for what in ("run --resume", "sessions show") for b in binaries]),
        ("memory and size", "MiB / KiB", [(f"peak RSS (MiB), {b}", b, f"{b} peak RSS MiB") for b in binaries] +
         [(f"file (KiB), {b}", b, f"{b} file KiB") for b in binaries]),
    ]}


def write_trace(path, template, calls):
    """A trace of `calls` tool calls: the recorded run's own lines, its call repeated."""
    lines = template.splitlines()
    envelopes = [json.loads(l) for l in lines]
    head = [l for l, e in zip(lines, envelopes) if e["event"]["type"] == "run.started"]
    tail = [l for l, e in zip(lines, envelopes) if e["event"]["type"] == "run.finished"]
    call = [e for e in envelopes if e["event"]["type"].startswith("tool.")]
    call_id = call[0]["event"]["call_id"]
    # Split each call line around its sequence number and call id so a line is two joins.
    parts = []
    for e in call:
        e = dict(e, sequence=987654321)
        text = json.dumps(e, separators=(",", ":"), ensure_ascii=False)
        before, after = text.split("987654321", 1)
        parts.append((before, after.split(call_id)))
    seq = json.loads(head[0])["sequence"] + 1 if head else 0
    with open(path, "w") as f:
        f.write("\n".join(head) + "\n")
        for i in range(calls):
            cid = f"c{i}"
            chunk = []
            for before, after in parts:
                chunk.append(f"{before}{seq}{cid.join(after)}\n")
                seq += 1
            f.write("".join(chunk))
        if tail:
            f.write(json.dumps(dict(json.loads(tail[0]), sequence=seq), separators=(",", ":"), ensure_ascii=False) + "\n")


def axis_trace(binaries, points, runs):
    any_bosun = next(iter(binaries.values()))
    base, home, ws, env = home_and_ws("trace")
    (ws / "notes.txt").write_text("a small file\n")
    run([any_bosun, "tools", "call", "read_file", '{"path": "notes.txt"}'], cwd=ws, env=env, capture_output=True)
    [recorded] = list((home / "runs").glob("*.jsonl"))
    template = recorded.read_text()
    rows = []
    for n in points:
        write_trace(recorded, template, n)
        row = {"n": n, "file MiB": recorded.stat().st_size / 2**20}
        ok = {name: b for name, b in binaries.items() if n <= LOADING_TRACE_CAP or name == "head"}
        reps = runs if n <= 10_000 else 1
        for flags, label in [([], "inspect"), (["--json"], "inspect --json")]:
            walls = medians(ok, lambda b: ([ok[b], "inspect", *flags, "last"], ws, env), reps)
            for name in ok:
                row[f"{name} {label} ms"] = walls[name]
                row[f"{name} {label} peak RSS MiB"] = peak_rss([ok[name], "inspect", *flags, "last"], ws, env)
        rows.append(row)
        print(f"  trace {n:>8} calls: {row}", flush=True)
    shutil.rmtree(base, ignore_errors=True)
    return {"x": "tool calls in the trace", "rows": rows, "panels": [
        ("time", "ms", [(f"{what}, {b}", b, f"{b} {what} ms") for what in ("inspect", "inspect --json") for b in binaries]),
        ("peak resident memory", "MiB", [(f"{what}, {b}", b, f"{b} {what} peak RSS MiB") for what in ("inspect", "inspect --json") for b in binaries]),
    ]}


def axis_files(binaries, points, runs):
    base, home, ws, env = home_and_ws("files")
    made = 0
    rows = []
    for n in points:
        while made < n:
            d = ws / f"d{made // 1000:04}"
            d.mkdir(exist_ok=True)
            (d / f"f{made % 1000:03}.txt").write_text("needle\n" if made == 0 else f"file {made}\nsome text\n")
            made += 1
        row = {"n": n}
        reps = runs if n <= 10_000 else max(runs // 3, 1)
        for label, argv in [("list_files", ["tools", "call", "list_files", "{}"]),
                            ("search", ["tools", "call", "search", '{"query": "needle"}'])]:
            walls = medians(binaries, lambda b: ([binaries[b], *argv], ws, env), reps)
            for name in binaries:
                row[f"{name} {label} ms"] = walls[name]
                row[f"{name} {label} peak RSS MiB"] = peak_rss([binaries[name], *argv], ws, env)
        rows.append(row)
        print(f"  files {n:>8}: {row}", flush=True)
    shutil.rmtree(base, ignore_errors=True)
    return {"x": "files in the workspace", "rows": rows, "panels": [
        ("time", "ms", [(f"{what}, {b}", b, f"{b} {what} ms") for what in ("list_files", "search") for b in binaries]),
        ("peak resident memory", "MiB", [(f"{what}, {b}", b, f"{b} {what} peak RSS MiB") for what in ("list_files", "search") for b in binaries]),
    ]}


AXES = {"policy": axis_policy, "plugins": axis_plugins, "js": axis_js, "http": axis_http,
        "session": axis_session, "trace": axis_trace, "files": axis_files}


# ---------------------------------------------------------------------------------------------
# How a curve grows


def growth(points):
    """Constant, logarithmic, linear or worse, from the curve's top decade: the local log-log
    exponent there, and how much the whole curve rose."""
    points = [(n, y) for n, y in points if y is not None and y > 0 and not math.isnan(y)]
    if len(points) < 3:
        return "too few points"
    (n0, y0), (n1, y1), (n2, y2) = points[0], points[-2], points[-1]
    exponent = math.log(y2 / y1) / math.log(n2 / n1)
    rise = y2 / y0
    if exponent > 1.25:
        return f"worse than linear (exponent {exponent:.2f} at the top)"
    if exponent >= 0.75:
        return f"linear (exponent {exponent:.2f} at the top)"
    if rise < 1.3:
        return f"constant (×{rise:.2f} over the range)"
    if exponent < 0.25:
        return f"logarithmic (×{rise:.2f} over the range, exponent {exponent:.2f} at the top)"
    return f"linear past a fixed cost (exponent {exponent:.2f} at the top, ×{rise:.2f} over the range)"


# ---------------------------------------------------------------------------------------------
# Plots: SVG written here (no plotting library on the machines this runs on)

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def decades(lo, hi):
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if a == b:
        b += 1
    return a, b


def fmt_tick(e):
    v = 10 ** e
    if e >= 6:
        return f"{v / 1e6:g}M"
    if e >= 3:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def svg(axis_name, result, base_name):
    panels = result["panels"]
    rows = result["rows"]
    pw, ph, left, top, bottom = 420, 300, 62, 34, 46
    legend_h = 16 * max(len(p[2]) for p in panels) + 8
    width, height = pw * len(panels), ph + legend_h
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11" viewBox="0 0 {width} {height}">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for p, (title, unit, series) in enumerate(panels):
        ox = p * pw
        xs = [r["n"] for r in rows]
        ys = [r.get(key) for _, _, key in series for r in rows]
        ys = [y for y in ys if isinstance(y, (int, float)) and y > 0 and not math.isnan(y)]
        if not ys:
            continue
        xa, xb = decades(min(xs), max(xs))
        ya, yb = decades(min(ys), max(ys))
        x0, x1, y0, y1 = ox + left, ox + pw - 14, top + ph - top - bottom, top

        def px(n):
            return x0 + (math.log10(n) - xa) / (xb - xa) * (x1 - x0)

        def py(v):
            return y0 - (math.log10(v) - ya) / (yb - ya) * (y0 - y1)

        out.append(f'<text x="{ox + pw / 2}" y="16" text-anchor="middle" font-weight="bold">{esc(title)}</text>')
        out.append(f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" fill="none" stroke="#444"/>')
        for e in range(xa, xb + 1):
            x = px(10 ** e)
            out.append(f'<line x1="{x:.1f}" y1="{y1}" x2="{x:.1f}" y2="{y0}" stroke="#ddd"/>')
            out.append(f'<text x="{x:.1f}" y="{y0 + 14}" text-anchor="middle">{fmt_tick(e)}</text>')
        for e in range(ya, yb + 1):
            y = py(10 ** e)
            out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{x0 - 4}" y="{y + 4:.1f}" text-anchor="end">{fmt_tick(e) if e >= 0 else f"{10 ** e:g}"}</text>')
        out.append(f'<text x="{(x0 + x1) / 2}" y="{y0 + 32}" text-anchor="middle">{esc(result["x"])} (log)</text>')
        out.append(f'<text transform="translate({ox + 14},{(y0 + y1) / 2}) rotate(-90)" text-anchor="middle">{esc(unit)} (log)</text>')
        for s, (label, binary, key) in enumerate(series):
            pts = [(r["n"], r.get(key)) for r in rows]
            pts = [(n, v) for n, v in pts if isinstance(v, (int, float)) and v > 0 and not math.isnan(v)]
            if not pts:
                continue
            colour = COLOURS[s % len(COLOURS)]
            dash = ' stroke-dasharray="5,3"' if binary is not None and binary == base_name else ""
            path = " ".join(f"{'M' if i == 0 else 'L'}{px(n):.1f},{py(v):.1f}" for i, (n, v) in enumerate(pts))
            out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
            for n, v in pts:
                out.append(f'<circle cx="{px(n):.1f}" cy="{py(v):.1f}" r="2.5" fill="{colour}"/>')
            ly = ph + 12 + 16 * s
            out.append(f'<line x1="{ox + left}" y1="{ly - 4}" x2="{ox + left + 20}" y2="{ly - 4}" stroke="{colour}" stroke-width="2"{dash}/>')
            out.append(f'<text x="{ox + left + 26}" y="{ly}">{esc(label)}: {esc(growth(pts))}</text>')
    out.append("</svg>")
    (OUT / f"{axis_name}.svg").write_text("\n".join(out) + "\n")


def esc(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def table(axis_name, result):
    rows = result["rows"]
    keys = [k for k in rows[0] if k != "n"]
    for r in rows[1:]:
        keys += [k for k in r if k != "n" and k not in keys]
    lines = [f"### {axis_name}: {result['x']}", "",
             "| " + " | ".join([result["x"]] + keys) + " |",
             "| " + " | ".join(["---"] * (len(keys) + 1)) + " |"]
    for r in rows:
        cells = [f"{r['n']:,}"]
        for k in keys:
            v = r.get(k)
            cells.append("—" if v is None else f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for title, unit, series in result["panels"]:
        for label, _, key in series:
            lines.append(f"- {title} — {label}: {growth([(r['n'], r.get(key)) for r in rows])}")
    lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the lower decades of every axis only")
    parser.add_argument("--axes", default=",".join(AXES), help="comma-separated: " + ",".join(AXES))
    parser.add_argument("--runs", type=int, default=None, help="runs per point (default 5, quick 3)")
    parser.add_argument("--head", help="this tree's release binary, already built (default: build it)")
    parser.add_argument("--base", help="an earlier build, measured alongside (dashed curves)")
    parser.add_argument("--replot", action="store_true", help="only redraw the plots and tables from results.json")
    parser.add_argument("--top", type=int, help="stop every axis at this many (a point above it is left out)")
    args = parser.parse_args()
    if args.replot:
        return write_results(json.loads((OUT / "results.json").read_text()))
    runs = args.runs or (3 if args.quick else 5)
    head = args.head
    if head is None:
        run(["cargo", "build", "--quiet", "--release", "--locked", "-p", "bosun-cli"], cwd=ROOT)
        head = TARGET / "release" / "bosun"
    binaries = {"head": str(Path(head).resolve())}
    if args.base:
        binaries["base"] = str(Path(args.base).resolve())
    OUT.mkdir(parents=True, exist_ok=True)
    results_path = OUT / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    versions = {n: subprocess.run([b, "--version"], capture_output=True, text=True).stdout.strip() for n, b in binaries.items()}
    print(f"{os.uname().nodename}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"tree {commit}, {runs} runs a point, load {os.getloadavg()}; {versions}", flush=True)
    for axis_name in [a.strip() for a in args.axes.split(",") if a.strip()]:
        if axis_name not in AXES:
            raise SystemExit(f"unknown axis {axis_name}; choose from {', '.join(AXES)}")
        full, quick = RANGES[axis_name]
        started = time.time()
        load_before = os.getloadavg()[0]
        points = [n for n in (quick if args.quick else full) if args.top is None or n <= args.top]
        result = AXES[axis_name](binaries, points, runs)
        result["meta"] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "tree": commit,
                          "binaries": versions, "load": [load_before, os.getloadavg()[0]],
                          "seconds": round(time.time() - started), "quick": args.quick}
        results[axis_name] = result
        svg(axis_name, result, "base")
        print(table(axis_name, result), flush=True)
        results_path.write_text(json.dumps(results, indent=1) + "\n")
    write_results(results)


def write_results(results):
    for axis_name, result in results.items():
        svg(axis_name, result, "base")
    with open(OUT / "results.md", "w") as f:
        for axis_name, result in results.items():
            m = result["meta"]
            f.write(f"{table(axis_name, result)}\n_{m['date']}, tree {m['tree']}, load average {m['load'][0]:.1f} → "
                    f"{m['load'][1]:.1f}, {m['seconds']} s{', quick' if m['quick'] else ''}; "
                    f"{'; '.join(f'{k}: {v}' for k, v in m['binaries'].items())}_\n\n")


if __name__ == "__main__":
    sys.exit(main())
