#!/usr/bin/env python3
"""`bosun serve --http` behind a real load balancer, side by side in one run: three instances
behind Debian's HAProxy (round-robin, from scripts/lb-peers) against one instance called
directly, the same load both ways: CLIENTS concurrent rmcp clients speaking MCP 2026-07-28
(`server/discover`, no session, so any request may reach any instance) make CALLS calls of the
built-in `read_file` on a small file (`crates/mcp/examples/mcp_http_load.rs --stateless`), each
run bounded to MAX_SECONDS. It prints calls/s, p50/p99/max latency, errors, and each instance's
resident memory before the run and after each tenth of the calls (flat = no growth per call).

The instances share one request-state key and one home, as a fleet would; each writes its own
trace. The `bosun` measured is target/release/bosun when it exists (its `--version` is printed:
the commit it was built from), else the debug build, said so in the output; `--bosun PATH`
names another. The load generator is built in the dev profile (its dependencies are optimised
there; its own code is a loop).

Usage: python3 benches/fleet.py [--calls N] [--clients N] [--max-seconds S] [--bosun PATH] [--no-build]
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
STATE_KEY = "bench-fleet-state-key-0123456789abcdef0123456789abcdef"


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, what, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not listen on {port} in {seconds} s")


def start_instance(bosun, ws, env):
    server = subprocess.Popen([str(bosun), "serve", "--http", "127.0.0.1:0"], cwd=ws, env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    line = server.stderr.readline()
    if "http://" not in line:
        server.kill()
        raise SystemExit(f"bosun serve --http did not start: {line}")
    url = line[line.index("http://"):].strip()
    return server, url


def start_haproxy(scratch, port, backends):
    haproxy = TARGET / "tools" / "haproxy" / "usr" / "sbin" / "haproxy"
    libs = TARGET / "tools" / "haproxy" / "usr" / "lib" / "x86_64-linux-gnu"
    if not haproxy.exists():
        run([str(ROOT / "scripts" / "lb-peers")])
    servers = "".join(f"    server {name} {addr}\n" for name, addr in backends)
    config = scratch / "haproxy.cfg"
    config.write_text(
        "global\n    maxconn 1024\n"
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n"
        "    option http-keep-alive\n"
        f"frontend fleet\n    bind 127.0.0.1:{port}\n    default_backend bosun\n"
        f"backend bosun\n    balance roundrobin\n{servers}")
    env = dict(os.environ, LD_LIBRARY_PATH=str(libs))
    run([str(haproxy), "-c", "-q", "-f", str(config)], env=env)
    proxy = subprocess.Popen([str(haproxy), "-db", "-f", str(config)], env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port, "HAProxy")
    return proxy


def load(generator, url, args, pids):
    command = [str(generator), url, str(args.clients), str(args.calls), "read_file", '{"path": "README.md"}',
               "--stateless", "--max-seconds", str(args.max_seconds)]
    for pid in pids:
        command += ["--rss-pid", str(pid)]
    out = run(command, capture_output=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def row(label, result, instances):
    print(f"{label:<34} {result['calls']:>8} {result['per_second']:>9.0f} {result['p50_ms']:>8.2f} "
          f"{result['p99_ms']:>8.2f} {result['max_ms']:>8.1f} {result['errors']:>7}")
    for name, pid in instances:
        samples = result["rss_kib_by_pid"][str(pid)]
        print(f"  {name} RSS MiB (start, then each tenth): " + " ".join(f"{k / 1024:.1f}" for k in samples))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--max-seconds", type=float, default=300)
    parser.add_argument("--bosun", type=Path)
    parser.add_argument("--no-build", action="store_true", help="use the binaries already built")
    args = parser.parse_args()

    bosun = args.bosun
    if bosun is None:
        bosun = TARGET / "release" / "bosun"
        if not bosun.exists():
            if not args.no_build:
                run(["cargo", "build", "--quiet", "-p", "bosun-cli"], cwd=ROOT)
            bosun = TARGET / "debug" / "bosun"
    if not args.no_build:
        run(["cargo", "build", "--quiet", "-p", "bosun-mcp", "--example", "mcp_http_load"], cwd=ROOT)
    generator = TARGET / "debug" / "examples" / "mcp_http_load"
    version = run([str(bosun), "--version"], capture_output=True).stdout.strip()
    profile = "release" if "release" in bosun.parts else "debug" if "debug" in bosun.parts else "as given"

    load_before = os.getloadavg()[0]
    scratch = Path(tempfile.mkdtemp(prefix="bosun-bench-fleet-"))
    home, ws = scratch / "home", scratch / "ws"
    home.mkdir()
    (ws / ".git").mkdir(parents=True)
    (ws / "README.md").write_text("# A small file\n\nread by every call of the benchmark.\n")
    port = free_port()
    (home / "config.toml").write_text(
        f'[serve]\nstate_key_env = "BOSUN_BENCH_STATE_KEY"\nallowed_hosts = ["127.0.0.1:{port}"]\n')
    env = dict(os.environ, BOSUN_HOME=str(home), BOSUN_BENCH_STATE_KEY=STATE_KEY)

    processes = []
    try:
        fleet = [start_instance(bosun, ws, env) for _ in range(3)]
        processes += [p for p, _ in fleet]
        backends = [(f"s{n + 1}", url.removeprefix("http://").removesuffix("/mcp")) for n, (_, url) in enumerate(fleet)]
        proxy = start_haproxy(scratch, port, backends)
        processes.append(proxy)
        through = load(generator, f"http://127.0.0.1:{port}/mcp", args, [p.pid for p, _ in fleet] + [proxy.pid])

        single, url = start_instance(bosun, ws, env)
        processes.append(single)
        direct = load(generator, url, args, [single.pid])
    finally:
        for process in processes:
            process.kill()
            process.wait()
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"bosun: {version} ({profile} build: {bosun})")
    print(f"load: {args.clients} concurrent rmcp clients on MCP 2026-07-28, {args.calls} calls of read_file "
          f"each way, at most {args.max_seconds:.0f} s each; machine: {os.cpu_count()} CPUs, "
          f"load average before the runs {load_before:.2f}")
    print()
    print(f"{'server':<34} {'calls':>8} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>7}")
    row("3 instances behind HAProxy", through,
        [(name, p.pid) for (name, _), (p, _) in zip(backends, fleet)] + [("haproxy", proxy.pid)])
    row("1 instance, direct", direct, [("s", single.pid)])


if __name__ == "__main__":
    main()
