#!/usr/bin/env python3
"""What Bosun's ACP layer costs, side by side with the same turn through `bosun run`, in one run.

One scripted model (`bosun demo-model serve`, replaying its one text step for every task) on
loopback; a raw newline-delimited JSON-RPC client (no SDK, so the client's own cost is a
`json.loads` per line). Measured, each over TURNS warm turns (the first of each path is dropped):

1. ACP, whole: `session/prompt` sent → first `agent_message_chunk` read (one `bosun acp`, one
   session).
2. `bosun run --json --stream`, whole: spawn → first `model.text` line read (a process per turn),
   and a bare `bosun --version` spawn → exit for what a process start costs.
3. Where each path's time goes, from the client's clock and the timestamps Bosun writes (both
   are the machine's realtime clock): the ACP run's trace file and the run's `--json` envelopes
   give `run.started` and `model.started`; the run's stream gives its first `model.text` as
   Bosun recorded it. So each turn splits into
     before the turn:  request (or spawn) → `run.started` (ACP: decode, dispatch, the session's
                       config, the turn's assembly; run: process start, CLI, the same assembly)
     the turn:         `run.started` → `model.started` (the same code on both paths)
     the model:        `model.started` → the first text, on the client's side of the pipe.
   The run path records its first text in-process too, so its own delivery (print, pipe, read)
   is known; the ACP path's delivery is its model segment less the run's in-process one.
4. The ACP layer alone: a `/status` prompt (answered by the session without a turn or a model:
   request decode, dispatch, the session's lock, one update encoded and written, the response)
   → its `agent_message_chunk`.

The ACP layer's own cost is (4) for a request in and an update out, and (ACP delivery − run
delivery) for a model chunk on its way out; (1) − (2 less the process start) compares the
paths whole.

Usage: cargo build --release -p bosun-cli && python3 benches/acp.py [TURNS]
       (BOSUN=<binary> to measure another build)
"""

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
BOSUN = os.environ.get("BOSUN", str(TARGET / "release/bosun"))
TURNS = int(sys.argv[1]) if len(sys.argv) > 1 else 30


def ns_of(stamp):
    """An RFC 3339 timestamp with nanoseconds (`…T16:50:18.825128463Z`) as Unix nanoseconds."""
    head, frac = stamp.rstrip("Z").split(".")
    whole = datetime.fromisoformat(head + "+00:00").timestamp()
    return int(whole) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])


def ms(ns):
    return ns / 1e6


class Agent:
    """`bosun acp` over its stdio, spoken to line by line."""

    def __init__(self, env, cwd):
        self.process = subprocess.Popen(
            [BOSUN, "acp"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        self.next_id = 0

    def send(self, method, params):
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()
        return self.next_id

    def read(self):
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit("bosun acp closed its stdout")
        return time.time_ns(), json.loads(line)

    def until(self, predicate):
        """Reads until a message satisfies `predicate`; returns when it was read and it."""
        while True:
            at, message = self.read()
            if predicate(message):
                return at, message

    def request(self, method, params):
        sent = self.send(method, params)
        return self.until(lambda m: m.get("id") == sent)[1]

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


def is_chunk(message):
    return (
        message.get("method") == "session/update"
        and message["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    )


def stamps(lines):
    """The timestamps of `run.started`, `model.started` and the first `model.text` in `lines`."""
    found = {}
    for line in lines:
        event = json.loads(line)
        kind = event["event"]["type"]
        if kind in ("run.started", "model.started", "model.text") and kind not in found:
            found[kind] = ns_of(event["timestamp"])
    return found


def main():
    work = Path(tempfile.mkdtemp(prefix="bosun-acp-bench-"))
    home, ws = work / "home", work / "ws"
    home.mkdir()
    (ws / ".git").mkdir(parents=True)
    script = work / "script.json"
    script.write_text(json.dumps({"each_task": True, "steps": [{"text": "Hello from the scripted model."}]}))
    model = subprocess.Popen([BOSUN, "demo-model", "serve", str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    base_url = model.stdout.readline().decode().strip()
    (home / "config.toml").write_text(
        f'default_model = "scripted"\n[models.scripted]\nprovider = "openai-chat"\nbase_url = "{base_url}"\nmodel = "bosun-scripted"\n'
    )
    env = {**os.environ, "BOSUN_HOME": str(home)}
    runs = home / "runs"
    try:
        acp = measure_acp(env, ws, runs)
        run = measure_run(env, ws)
        start = measure_start(env)
    finally:
        model.kill()
        shutil.rmtree(work, ignore_errors=True)
    report(acp, run, start)


def measure_acp(env, ws, runs):
    agent = Agent(env, ws)
    agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session = agent.request("session/new", {"cwd": str(ws), "mcpServers": []})["result"]["sessionId"]
    whole, before, turn, model, status = [], [], [], [], []
    for i in range(TURNS + 1):
        known = set(runs.iterdir()) if runs.exists() else set()
        sent_at = time.time_ns()
        sent = agent.send("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": f"turn {i}"}]})
        chunk_at, _ = agent.until(is_chunk)
        agent.until(lambda m, sent=sent: m.get("id") == sent)
        (trace,) = set(runs.iterdir()) - known
        found = stamps(trace.read_text().splitlines())
        if i == 0:
            continue  # the first turn warms caches
        whole.append(chunk_at - sent_at)
        before.append(found["run.started"] - sent_at)
        turn.append(found["model.started"] - found["run.started"])
        model.append(chunk_at - found["model.started"])
    for i in range(TURNS + 1):
        sent_at = time.time_ns()
        sent = agent.send("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "/status"}]})
        chunk_at, _ = agent.until(is_chunk)
        agent.until(lambda m, sent=sent: m.get("id") == sent)
        if i > 0:
            status.append(chunk_at - sent_at)
    agent.close()
    return {"whole": whole, "before": before, "turn": turn, "model": model, "status": status}


def measure_run(env, ws):
    whole, before, turn, model, in_process = [], [], [], [], []
    for i in range(TURNS + 1):
        spawned_at = time.time_ns()
        child = subprocess.Popen(
            [BOSUN, "run", "--json", "--stream", f"turn {i}"],
            cwd=ws,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        lines, text_at = [], None
        for line in child.stdout:
            lines.append(line)
            if text_at is None and b'"model.text"' in line:
                text_at = time.time_ns()
                break
        child.stdout.read()
        child.wait(timeout=60)
        found = stamps(lines)
        if i == 0:
            continue
        whole.append(text_at - spawned_at)
        before.append(found["run.started"] - spawned_at)
        turn.append(found["model.started"] - found["run.started"])
        model.append(text_at - found["model.started"])
        in_process.append(found["model.text"] - found["model.started"])
    return {"whole": whole, "before": before, "turn": turn, "model": model, "in_process": in_process}


def measure_start(env):
    times = []
    for i in range(TURNS + 1):
        started = time.time_ns()
        subprocess.run([BOSUN, "--version"], env=env, stdout=subprocess.DEVNULL, check=True)
        if i > 0:
            times.append(time.time_ns() - started)
    return times


def report(acp, run, start):
    med = lambda xs: ms(statistics.median(xs))
    p90 = lambda xs: ms(sorted(xs)[int(len(xs) * 0.9)])
    row = lambda name, xs: f"| {name} | {med(xs):.2f} | {p90(xs):.2f} |"
    cpu = platform.processor() or platform.machine()
    print(f"{TURNS} warm turns each; {os.cpu_count()} cores, {cpu}; {BOSUN}")
    print("| path | median ms | p90 ms |")
    print("| --- | --- | --- |")
    print(row("ACP: session/prompt → first agent_message_chunk", acp["whole"]))
    print(row("run --json --stream: spawn → first model.text", run["whole"]))
    print(row("bosun --version: spawn → exit", start))
    print(row("ACP before the turn: request → run.started", acp["before"]))
    print(row("run before the turn: spawn → run.started", run["before"]))
    print(row("ACP turn: run.started → model.started", acp["turn"]))
    print(row("run turn: run.started → model.started", run["turn"]))
    print(row("ACP model: model.started → chunk read", acp["model"]))
    print(row("run model: model.started → model.text read", run["model"]))
    print(row("run model in-process: model.started → model.text recorded", run["in_process"]))
    print(row("ACP layer alone: /status → its agent_message_chunk", acp["status"]))
    delivery = statistics.median(acp["model"]) - statistics.median(run["in_process"])
    run_delivery = statistics.median(run["model"]) - statistics.median(run["in_process"])
    print()
    print(f"a model chunk's way out: ACP {ms(delivery):.2f} ms, run {ms(run_delivery):.2f} ms "
          f"(model segment less the run's in-process first text)")
    print(f"whole paths: ACP {med(acp['whole']):.2f} ms vs run less a process start "
          f"{med(run['whole']) - med(start):.2f} ms")


if __name__ == "__main__":
    main()
