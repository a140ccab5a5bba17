#!/usr/bin/env python3
"""Side-by-side plugin benchmarks, in one run.

1. `bosun plugins list` with 100 installed (enabled and trusted) plugins: median wall time over
   repeated runs. Listing reads metadata only; `bosun-plugins` has no WebAssembly runtime, so
   nothing can be instantiated.
2. The same echo-style tool, side by side:
   - Bosun: the `hello` plugin's `greet`, warm, through the whole chokepoint (policy with 1,000
     rules, sandbox, trace) — from `cargo bench -p bosun-host --bench plugin_call`;
   - an MCP stdio server written with the official Python SDK (`mcp` from PyPI), called by that
     SDK's client, warm.

Usage: python3 benches/plugins.py   (builds what it needs; installs `mcp` into target/bench-venv)
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def guest(name):
    guests = Path(os.environ.get("BOSUN_GUEST_TARGET_DIR", ROOT / "target" / "guests"))
    path = guests / "wasm32-wasip2" / "release" / f"{name.replace('-', '_')}.wasm"
    if not path.exists():
        run(["cargo", "build", "--quiet", "-p", "bosun-test-programs"], cwd=ROOT)
    return path


def chock_module():
    path = TARGET / "chock-hello.wasm"
    run(["cargo", "run", "--quiet", "--release", "-p", "bosun-plugins", "--example", "chock_fixture", "--", str(path)], cwd=ROOT)
    return path


def bench_list(bosun, examples):
    home = Path(tempfile.mkdtemp(prefix="bosun-bench-home-"))
    ws = Path(tempfile.mkdtemp(prefix="bosun-bench-ws-"))
    (ws / ".git").mkdir()
    env = dict(os.environ, BOSUN_HOME=str(home))
    config = []
    for i in range(100):
        d = home / "plugins" / f"p{i:03}"
        d.mkdir(parents=True)
        shutil.copy(examples[i % len(examples)], d / "plugin.wasm")
        config.append(f'[plugins.p{i:03}]\npath = "p{i:03}"\n')
    (home / "config.toml").write_text("\n".join(config))
    # Trust each as `plugins enable` would; tool-name clashes keep only the first of each name.
    for i in range(100):
        run([bosun, "plugins", "trust", f"p{i:03}", "--yes"], cwd=ws, env=env, capture_output=True)
    listing = json.loads(run([bosun, "plugins", "list", "--json"], cwd=ws, env=env, capture_output=True).stdout)
    enabled = sum(1 for p in listing["plugins"] if p["state"] == "enabled")
    size = sum((home / "plugins" / f"p{i:03}" / "plugin.wasm").stat().st_size for i in range(100))
    times = []
    for _ in range(21):
        t = time.perf_counter()
        run([bosun, "plugins", "list"], cwd=ws, env=env, capture_output=True)
        times.append((time.perf_counter() - t) * 1000)
    shutil.rmtree(home)
    shutil.rmtree(ws)
    return statistics.median(times), enabled, size


MCP_SERVER = r'''
try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server
mcp = Server("echo")
@mcp.tool()
def greet(name: str) -> str:
    """Greets someone by name."""
    return f"Hello, {name}!"
mcp.run()
'''

MCP_CLIENT = r'''
import asyncio, statistics, sys, time
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
async def main():
    params = StdioServerParameters(command=sys.executable, args=[sys.argv[1]])
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            for _ in range(50):
                await s.call_tool("greet", {"name": "Ada"})
            times = []
            for _ in range(int(sys.argv[2])):
                t = time.perf_counter()
                await s.call_tool("greet", {"name": "Ada"})
                times.append((time.perf_counter() - t) * 1e6)
            print(statistics.median(times))
asyncio.run(main())
'''


def bench_mcp_python():
    venv = TARGET / "bench-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        run([sys.executable, "-m", "venv", str(venv)])
    if subprocess.run([py, "-c", "import mcp"], capture_output=True).returncode != 0:
        run([py, "-m", "pip", "install", "--quiet", "mcp"])
    version = run([py, "-c", "import importlib.metadata as m; print(m.version('mcp'))"], capture_output=True).stdout.strip()
    d = Path(tempfile.mkdtemp(prefix="bosun-bench-mcp-"))
    (d / "server.py").write_text(MCP_SERVER)
    (d / "client.py").write_text(MCP_CLIENT)
    out = run([py, str(d / "client.py"), str(d / "server.py"), "1000"], capture_output=True).stdout
    shutil.rmtree(d)
    return float(out.strip().splitlines()[-1]), version


def bench_bosun_warm():
    out = run(
        ["cargo", "bench", "-p", "bosun-host", "--bench", "plugin_call", "--", "--warm-up-time", "1", "--measurement-time", "3"],
        cwd=ROOT, capture_output=True,
    ).stdout
    figures = {}
    for label in ("plugin", "chock plugin"):
        warm = re.search(rf"^{label} warm call through the chokepoint over \d+ calls: p50 ([\d.]+) µs", out, re.M)
        first = re.search(rf"^{label} first call with a warm artefact cache over \d+ calls: p50 ([\d.]+) µs", out, re.M)
        figures[label] = (float(warm.group(1)), float(first.group(1)))
    return figures


def main():
    run(["cargo", "build", "--quiet", "--release", "-p", "bosun-cli"], cwd=ROOT)
    bosun = str(TARGET / "release" / "bosun")
    examples = [guest(n) for n in ("hello", "todos", "fs-stats", "web-tools")]
    list_ms, enabled, size = bench_list(bosun, examples)
    print(f"bosun plugins list, 100 installed native plugins ({enabled} enabled, {size / 1e6:.1f} MB of components): median {list_ms:.1f} ms wall", flush=True)
    list_ms, enabled, size = bench_list(bosun, [chock_module()])
    print(f"bosun plugins list, 100 installed Chock modules ({enabled} enabled, {size / 1e6:.2f} MB): median {list_ms:.1f} ms wall", flush=True)
    figures = bench_bosun_warm()
    for label, (warm, first) in figures.items():
        print(f"bosun {label} hello.greet warm through the chokepoint: p50 {warm:.2f} µs", flush=True)
        print(f"bosun {label} hello.greet first call, warm artefact cache: p50 {first / 1000:.2f} ms", flush=True)
    warm_us = figures["plugin"][0]
    mcp_us, mcp_version = bench_mcp_python()
    print(f"MCP stdio server, official Python SDK mcp {mcp_version} (MCPServer/FastMCP), warm call from its client: median {mcp_us:.1f} µs")
    print(f"ratio (Python MCP / Bosun): {mcp_us / warm_us:.0f}x")


if __name__ == "__main__":
    main()
