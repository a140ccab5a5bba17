#!/usr/bin/env python3
"""A warm MCP tool call over stdio, side by side in one run, from the same rmcp client
(`crates/mcp/examples/mcp_call_bench.rs`), same tool shape (`greet {"name"}` → `{"message"}`):

- `bosun serve --stdio` serving the `hello` WebAssembly plugin's `greet`: the chokepoint (lookup,
  schema, policy), the wasmtime sandbox and a trace line per event, flushed per call;
- rmcp's own minimal server (`crates/mcp/examples/mcp_echo_server.rs`): no policy, no sandbox;
- a server on the official Python SDK (`mcp`, `MCPServer`), from target/mcp-peers (scripts/mcp-peers).

Then Bosun's own MCP client (`crates/mcp/examples/mcp_client_bench.rs`: a host with the rmcp
server approved as `[mcp.echo]`, each call through the chokepoint as a model's goes) next to the
rmcp client above calling the same rmcp server: the difference is what Bosun's client adds.

Then `bosun serve --http` under load: 32 concurrent rmcp clients (each its own session) make
100,000 calls of the same tool (`crates/mcp/examples/mcp_http_load.rs`), with the server's
resident memory sampled after each tenth of the calls.

Usage: python3 benches/mcp.py [CALLS]   (builds the release binaries it needs)
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 2000

PY_SERVER = '''
from mcp.server import MCPServer
app = MCPServer("echo")
@app.tool()
def greet(name: str) -> dict:
    """Greets someone by name."""
    return {"message": f"Hello, {name}!"}
app.run("stdio")
'''


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def main():
    # Two commands: naming examples would leave the `bosun` binary unbuilt.
    run(["cargo", "build", "--quiet", "--release", "-p", "bosun-cli"], cwd=ROOT)
    run(["cargo", "build", "--quiet", "--release", "-p", "bosun-mcp",
         "--example", "mcp_echo_server", "--example", "mcp_call_bench", "--example", "mcp_http_load",
         "--example", "mcp_client_bench"], cwd=ROOT)
    run([str(ROOT / "scripts" / "mcp-peers")])
    release = TARGET / "release"
    bosun, echo, client = release / "bosun", release / "examples" / "mcp_echo_server", release / "examples" / "mcp_call_bench"
    python = TARGET / "mcp-peers" / "venv" / "bin" / "python"
    guests = Path(os.environ.get("BOSUN_GUEST_TARGET_DIR", ROOT / "target" / "guests"))
    hello = guests / "wasm32-wasip2" / "release" / "hello.wasm"
    if not hello.exists():
        run(["cargo", "build", "--quiet", "-p", "bosun-test-programs"], cwd=ROOT)

    scratch = Path(tempfile.mkdtemp(prefix="bosun-bench-mcp-"))
    home, ws = scratch / "home", scratch / "ws"
    (home / "plugins" / "hello").mkdir(parents=True)
    (ws / ".git").mkdir(parents=True)
    shutil.copy(hello, home / "plugins" / "hello" / "plugin.wasm")
    env = dict(os.environ, BOSUN_HOME=str(home))
    run([str(bosun), "plugins", "enable", "hi", "--path", "hello", "--yes"], cwd=ws, env=env, capture_output=True)
    (scratch / "server.py").write_text(PY_SERVER)

    peers = [
        ("bosun serve --stdio (hello.greet in the sandbox, policy, trace)", [str(bosun), "serve", "--stdio"]),
        ("rmcp 3.11 minimal server", [str(echo)]),
        ("official Python SDK server (MCPServer)", [str(python), str(scratch / "server.py")]),
    ]
    results = []
    for label, command in peers:
        out = run([str(client), "greet", '{"name": "Ada"}', str(CALLS), "--", *command],
                  cwd=ws, env=env, capture_output=True).stdout
        results.append((label, json.loads(out.strip().splitlines()[-1])))
    client_row = bench_client(bosun, release / "examples" / "mcp_client_bench", echo, scratch)
    load = bench_http(bosun, release / "examples" / "mcp_http_load", ws, env)
    shutil.rmtree(scratch, ignore_errors=True)

    rmcp_p50 = results[1][1]["p50_us"]
    print(f"warm tools/call over stdio from an rmcp client, {CALLS} calls after 200 warm-up calls")
    print(f"{'server':<66} {'p50 µs':>9} {'p90 µs':>9} {'p99 µs':>9} {'vs rmcp p50':>12}")
    for label, r in results:
        print(f"{label:<66} {r['p50_us']:>9.1f} {r['p90_us']:>9.1f} {r['p99_us']:>9.1f} {r['p50_us'] / rmcp_p50:>11.2f}x")
    print()
    print(f"Bosun's MCP client calling the rmcp server (through the chokepoint), {CALLS} calls after 200 warm-up calls")
    print(f"{'client':<66} {'p50 µs':>9} {'p90 µs':>9} {'p99 µs':>9} {'added p50':>12}")
    print(f"{'rmcp 3.11 client (above)':<66} {rmcp_p50:>9.1f} {results[1][1]['p90_us']:>9.1f} {results[1][1]['p99_us']:>9.1f} {'':>12}")
    print(f"{'Bosun (host, chokepoint, pin check, rmcp client inside)':<66} {client_row['p50_us']:>9.1f} "
          f"{client_row['p90_us']:>9.1f} {client_row['p99_us']:>9.1f} {client_row['p50_us'] - rmcp_p50:>10.1f}µs")
    print()
    print(f"bosun serve --http, {HTTP_CLIENTS} concurrent clients, {load['calls']} calls: "
          f"{load['per_second']:.0f} calls/s, p50 {load['p50_ms']:.2f} ms, p99 {load['p99_ms']:.2f} ms, "
          f"max {load['max_ms']:.1f} ms, {load['errors']} errors")
    rss = load["rss_kib"]
    print("server RSS (MiB) before and after each tenth: " + " ".join(f"{k / 1024:.1f}" for k in rss))


HTTP_CLIENTS = 32
HTTP_CALLS = 100_000


def bench_client(bosun, bench, echo, scratch):
    """Bosun's client: a fresh home whose `[mcp.echo]` is the rmcp server, approved."""
    home, ws = scratch / "client-home", scratch / "client-ws"
    home.mkdir()
    (ws / ".git").mkdir(parents=True)
    (home / "config.toml").write_text(
        f'[mcp.echo]\ncommand = "{echo}"\n\n[[policy.rules]]\naction = "mcp.echo.tool.*"\ndecision = "allow"\n')
    env = dict(os.environ, BOSUN_HOME=str(home))
    run([str(bosun), "mcp", "trust", "echo", "--yes"], cwd=ws, env=env, capture_output=True)
    out = run([str(bench), "echo", "greet", '{"name": "Ada"}', str(CALLS)], cwd=ws, env=env, capture_output=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def bench_http(bosun, load, ws, env):
    server = subprocess.Popen([str(bosun), "serve", "--http", "127.0.0.1:0"], cwd=ws, env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()
        url = line[line.index("http://"):].strip()
        out = run([str(load), url, str(HTTP_CLIENTS), str(HTTP_CALLS), "greet", '{"name": "Ada"}',
                   "--rss-pid", str(server.pid)], capture_output=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
