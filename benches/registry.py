#!/usr/bin/env python3
"""Registry benchmarks, side by side in one run.

1. `bosun plugins search` over a Reef catalog of 10,000 entries served on loopback: cold (no
   cached catalog: the catalog is fetched, parsed and cached) and cached (within the hour the
   cache answers and the origin is not asked).
2. `bosun plugins search` over a Bosun signed catalog (`kind = "dir"`) of 10,000 entries: with
   nothing trusted yet (the whole catalog verified: root, timestamp, snapshot, the 10,000-target
   targets file, its signature and every entry's claims) and with the trusted versions kept.
3. `bosun plugins list` with 20 installed plugins, with no registry configured and with three
   configured (a Reef, a signed folder and an OCI registry): a configured registry must cost a
   listing nothing, since listing never opens a source.
4. The first call of a plugin's tool in a fresh process (`bosun tools call`, the whole host
   assembled, the call through the chokepoint), with no registry configured and with the same
   three: the host opens no source at start, so the Reef server must see no request at all.

Usage: python3 benches/registry.py [RUNS]   (builds `bosun` in release unless BOSUN_BIN is set)
"""

import hashlib
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
ENTRIES = 10_000


def bosun_bin():
    if os.environ.get("BOSUN_BIN"):
        return Path(os.environ["BOSUN_BIN"])
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "bosun-cli"], cwd=ROOT, check=True)
    return TARGET / "release" / "bosun"


def signed_catalog(root):
    """A signed catalog of ENTRIES plugins, laid out by crates/registry/examples/bench_catalog."""
    out = subprocess.run(
        ["cargo", "run", "--quiet", "--release", "-p", "bosun-registry", "--example", "bench_catalog", "--", str(root), str(ENTRIES)],
        cwd=ROOT, check=True, capture_output=True, text=True,
    )
    return out.stdout.strip(), (root / "metadata" / "targets.json").stat().st_size


def reef_tree(root):
    """A Reef layout with ENTRIES plugins in its catalog (the files of one are served)."""
    entries = []
    text = 'export const manifest = {name: "p0", version: "1.0.0"};\n'
    checksum = hashlib.sha256(text.encode()).hexdigest()
    for i in range(ENTRIES):
        entries.append({
            "name": f"p{i}", "version": f"1.{i % 7}.0", "description": f"Plugin number {i} for benchmarks",
            "author": "bench", "classification": "PUBLIC", "trust": "sandboxed",
            "tags": ["bench", f"t{i % 50}"], "checksum": checksum,
            "publishedAt": "2026-03-01T00:00:00Z", "declaredEndpoints": [],
        })
    (root / "plugins" / "index").mkdir(parents=True)
    (root / "plugins" / "index" / "catalog.json").write_text(json.dumps({"entries": entries, "generatedAt": "2026-03-01T00:00:00Z"}))
    return (root / "plugins" / "index" / "catalog.json").stat().st_size


REQUESTS = []


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        REQUESTS.append(self.path)


def serve(root):
    handler = lambda *a, **kw: Handler(*a, directory=str(root), **kw)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


GREETER = """export const manifest = {
  name: "greeter", version: "1.0.0", description: "Greets", classification: "PUBLIC",
  trust: "sandboxed", declaredEndpoints: [],
};
export const toolDefinitions = [
  { name: "greet", description: "Greets.", parameters: { who: { type: "string", description: "Whom", required: true } } },
];
export function createExecutor(context) {
  return async (name, input) => (name === "greet" ? `hello, ${input.who}` : null);
};
"""


def timed(cmd, env, cwd):
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def summary(samples):
    samples = sorted(samples)
    p90 = samples[min(len(samples) - 1, int(len(samples) * 0.9))]
    return f"{statistics.median(samples):.1f} ms (p90 {p90:.1f})"


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    bosun = bosun_bin()
    scratch = Path(tempfile.mkdtemp(prefix="bosun-bench-registry-"))
    try:
        size = reef_tree(scratch / "reef")
        url = serve(scratch / "reef")
        ws = scratch / "ws"
        (ws / ".git").mkdir(parents=True)

        # 1. search, cold and cached.
        home = scratch / "home-search"
        home.mkdir()
        (home / "config.toml").write_text(f'[registries.reef]\nkind = "reef"\nurl = "{url}"\n')
        env = dict(os.environ, BOSUN_HOME=str(home))
        search = [str(bosun), "plugins", "search", "number 9999", "--json"]
        cold, cached = [], []
        for _ in range(runs):
            shutil.rmtree(home / "cache" / "registry", ignore_errors=True)
            cold.append(timed(search, env, ws))
            cached.append(timed(search, env, ws))
        out = subprocess.run(search, env=env, cwd=ws, check=True, capture_output=True, text=True)
        found = [r["name"] for r in json.loads(out.stdout)["results"]]
        assert found == ["p9999"], found

        # 2. search over a signed catalog: everything verified, then the trusted versions kept.
        keyid, targets_size = signed_catalog(scratch / "catalog")
        home = scratch / "home-signed"
        home.mkdir()
        (home / "config.toml").write_text(f'[registries.corp]\nkind = "dir"\npath = "{scratch}/catalog"\nkeys = ["{keyid}"]\n')
        env = dict(os.environ, BOSUN_HOME=str(home))
        signed_search = [str(bosun), "plugins", "search", "number 9999", "--from", "corp", "--json"]
        verified, kept = [], []
        for _ in range(runs):
            shutil.rmtree(home / "registry", ignore_errors=True)
            verified.append(timed(signed_search, env, ws))
            kept.append(timed(signed_search, env, ws))
        out = subprocess.run(signed_search, env=env, cwd=ws, check=True, capture_output=True, text=True)
        found = [r["name"] for r in json.loads(out.stdout)["results"]]
        assert found == ["p9999"], found

        # 3. plugins list, without and with registries configured, interleaved.
        lists = {}
        for label, registries in [
            ("no registry", ""),
            ("three registries", f'[registries.reef]\nkind = "reef"\nurl = "{url}"\n\n'
             f'[registries.corp]\nkind = "dir"\npath = "{scratch}/catalog"\nkeys = ["{"a" * 64}"]\n\n'
             f'[registries.hub]\nkind = "oci"\nurl = "127.0.0.1:9/acme"\nkeys = ["{"b" * 64}"]\n'),
        ]:
            home = scratch / f"home-list-{len(lists)}"
            config = []
            for i in range(20):
                d = home / "plugins" / f"p{i:02}"
                d.mkdir(parents=True)
                (d / "mod.ts").write_text(f'export const manifest = {{name: "p{i:02}", version: "1.0.0", description: "d", classification: "PUBLIC", trust: "sandboxed", declaredEndpoints: []}};\nexport async function activate(ctx) {{}}\n')
                config.append(f'[plugins.p{i:02}]\npath = "p{i:02}"\n')
            (home / "config.toml").write_text(registries + "\n" + "\n".join(config))
            lists[label] = (dict(os.environ, BOSUN_HOME=str(home)), [])
        for _ in range(runs):
            for label, (env, samples) in lists.items():
                samples.append(timed([str(bosun), "plugins", "list", "--json"], env, ws))

        # 4. the first call of a plugin's tool, without and with registries configured.
        src = scratch / "src" / "greeter"
        src.mkdir(parents=True)
        (src / "mod.ts").write_text(GREETER)
        firsts = {}
        for label, registries in [
            ("no registry", ""),
            ("three registries", f'[registries.reef]\nkind = "reef"\nurl = "{url}"\n\n'
             f'[registries.corp]\nkind = "dir"\npath = "{scratch}/catalog"\nkeys = ["{"a" * 64}"]\n\n'
             f'[registries.hub]\nkind = "oci"\nurl = "127.0.0.1:9/acme"\nkeys = ["{"b" * 64}"]\n'),
        ]:
            home = scratch / f"home-call-{len(firsts)}"
            home.mkdir()
            (home / "config.toml").write_text(registries)
            env = dict(os.environ, BOSUN_HOME=str(home))
            subprocess.run([str(bosun), "plugins", "install", str(src), "--yes"], env=env, cwd=ws, check=True, capture_output=True)
            tools = json.loads(subprocess.run([str(bosun), "tools", "list", "--json"], env=env, cwd=ws, check=True, capture_output=True, text=True).stdout)
            names = [t["name"] for t in (tools["tools"] if isinstance(tools, dict) else tools) if "greet" in t["name"]]
            assert len(names) == 1, names
            firsts[label] = (env, names[0], [])
        before = len(REQUESTS)
        for _ in range(runs):
            for label, (env, tool, samples) in firsts.items():
                samples.append(timed([str(bosun), "tools", "call", tool, '{"who": "Ada"}', "--yes", "--json"], env, ws))
        assert len(REQUESTS) == before, f"the host fetched at start: {REQUESTS[before:]}"

        print(f"bosun: {bosun}  runs: {runs}  catalog: {ENTRIES} entries, {size / 1e6:.1f} MB")
        print(f"Reef catalog {size / 1e6:.1f} MB")
        print("| what | median (p90) |")
        print("| --- | --- |")
        print(f"| `plugins search` over {ENTRIES:,} entries, cold (fetch, parse, cache) | {summary(cold)} |")
        print(f"| `plugins search` over {ENTRIES:,} entries, cached | {summary(cached)} |")
        print(f"| `plugins search` over a signed catalog of {ENTRIES:,} ({targets_size / 1e6:.1f} MB targets), all verified | {summary(verified)} |")
        print(f"| `plugins search` over a signed catalog of {ENTRIES:,}, trusted versions kept | {summary(kept)} |")
        for label, (_, samples) in lists.items():
            print(f"| `plugins list` (20 JS plugins), {label} | {summary(samples)} |")
        for label, (_, _, samples) in firsts.items():
            print(f"| first call of a JS plugin's tool (`tools call`, fresh process), {label} | {summary(samples)} |")
        print(f"requests the Reef server saw during the first calls: {len(REQUESTS) - before}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
