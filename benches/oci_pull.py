#!/usr/bin/env python3
"""Pull and install of a 5 MB Wasm component from a loopback OCI registry, side by side in one
run:

- Bosun's crate (`crates/oci/examples/oci_pull.rs`, release): by digest, the manifest, config and
  layer each hashed and checked against its descriptor, the Wasm layout checked, the binary
  written to a file — what an install does before its own checks;
- Python's ORAS SDK (`oras` from target/tools/oras, installed by scripts/oci-peers), `pull` of the
  same artifact by the same digest into a folder: the manifest and the layer, no digest check.

Then the whole install a person runs, next to standard tools pulling the same artifact:

- `bosun plugins install hello --from hub --yes` (the release binary, `BOSUN_BIN` or
  target/release/bosun) of the `hello` test component padded to 5 MB with a custom section and
  published with `bosun plugins publish --to hub`: the tag resolved, the signature found through
  the referrers API and verified against the pinned key, the layer pulled by digest and checked,
  the component read and precompiled, the trust review, the swap and the integrity record — in a
  fresh `BOSUN_HOME` each run;
- the ORAS Python SDK's `pull` of the same tag;
- `skopeo copy docker://… oci:DIR` (Debian's skopeo, when installed) of the same tag into an
  image layout.

All against one Debian `docker-registry` (scripts/oci-peers) on 127.0.0.1 with a scratch
storage folder, runs interleaved. Each row gives the whole command (process start included) and,
where the process times itself, the pull alone.

Usage: python3 benches/oci_pull.py [RUNS]   (builds the release example it needs; the hello
component is found in the test programs' build output, or HELLO_WASM)
"""

import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
TOOLS = TARGET / "tools"
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
SIZE = 5 * 1024 * 1024

ORAS_PULL = r'''
import sys, time, json
import oras.provider
started = time.perf_counter()
registry = oras.provider.Registry(hostname=sys.argv[1], insecure=True)
files = registry.pull(target=sys.argv[2], outdir=sys.argv[3])
print(json.dumps({"files": files, "seconds": time.perf_counter() - started}))
'''


def leb(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def component(size):
    """A component (header `\\0asm` 0d 00 01 00) holding `size` random bytes in a custom section."""
    name = b"padding"
    payload = leb(len(name)) + name + os.urandom(size)
    return b"\0asm\x0d\x00\x01\x00" + b"\x00" + leb(len(payload)) + payload


def hello_wasm():
    """The `hello` test component (built by `cargo build -p bosun-test-programs`)."""
    if os.environ.get("HELLO_WASM"):
        return Path(os.environ["HELLO_WASM"])
    for guests in sorted(TARGET.glob("debug/build/bosun-test-programs-*/out/guests.rs")):
        found = re.search(r'pub const HELLO: &str = "([^"]+)"', guests.read_text())
        if found and Path(found.group(1)).exists():
            return Path(found.group(1))
    sys.exit("the hello component is missing: cargo build -p bosun-test-programs, or set HELLO_WASM")


def padded(wasm, size):
    """`wasm` with a custom section of `size` random bytes appended (nothing reads it)."""
    name = b"padding"
    payload = leb(len(name)) + name + os.urandom(size)
    return wasm + b"\x00" + leb(len(payload)) + payload


def bosun_bin():
    if os.environ.get("BOSUN_BIN"):
        return Path(os.environ["BOSUN_BIN"])
    return TARGET / "release" / "bosun"


def wall(command, env=None):
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def installs(scratch, address, python, runs):
    """Rows for `bosun plugins install` of a 5 MB plugin next to ORAS and skopeo pulls of it."""
    bosun = bosun_bin()
    if not bosun.exists():
        sys.exit(f"{bosun} is missing: cargo build --release -p bosun-cli, or set BOSUN_BIN")
    src = scratch / "src" / "hello"
    src.mkdir(parents=True)
    (src / "plugin.wasm").write_bytes(padded(hello_wasm().read_bytes(), SIZE))
    key = scratch / "key.json"
    publisher = scratch / "home-publisher"
    publisher.mkdir()
    out = subprocess.run([bosun, "registry", "keygen", key], check=True, capture_output=True, text=True,
                         env=dict(os.environ, BOSUN_HOME=str(publisher))).stdout
    keyid = re.search(r"key id: ([0-9a-f]{64})", out).group(1)
    config = f'[registries.hub]\nkind = "oci"\nurl = "{address}/acme"\nkeys = ["{keyid}"]\n'
    (publisher / "config.toml").write_text(config)
    published = json.loads(subprocess.run(
        [bosun, "plugins", "publish", src, "--to", "hub", "--key", key, "--json"],
        check=True, capture_output=True, text=True, env=dict(os.environ, BOSUN_HOME=str(publisher)),
    ).stdout)
    version = published["claims"]["version"]
    reference = f"{address}/acme/hello:{version}"
    skopeo = shutil.which("skopeo")
    rows = {"bosun": [], "oras": [], "skopeo": []}
    for run in range(runs):
        home = scratch / f"home-install-{run}"
        home.mkdir()
        (home / "config.toml").write_text(config)
        rows["bosun"].append(wall([bosun, "plugins", "install", "hello", "--from", "hub", "--yes", "--json"],
                                  env=dict(os.environ, BOSUN_HOME=str(home))))
        assert (home / "plugins" / "hello" / "plugin.wasm").stat().st_size == (src / "plugin.wasm").stat().st_size
        outdir = scratch / f"oras-install-{run}"
        rows["oras"].append(wall([python, "-c", ORAS_PULL, address, reference, outdir]))
        if skopeo:
            rows["skopeo"].append(wall([skopeo, "copy", "--quiet", "--src-tls-verify=false",
                                        f"docker://{reference}", f"oci:{scratch / f'skopeo-{run}'}:x"]))
    print(f"install: {(src / 'plugin.wasm').stat().st_size} bytes (hello + padding), {runs} runs each, interleaved; {reference}")
    print("| command | whole command |")
    print("| --- | --- |")
    for name, label in [("bosun", "`bosun plugins install hello --from hub --yes` (release)"),
                        ("oras", "ORAS Python SDK `pull` of the same tag"),
                        ("skopeo", "`skopeo copy docker://… oci:DIR` of the same tag")]:
        if rows[name]:
            values = sorted(rows[name])
            p90 = values[min(len(values) - 1, int(len(values) * 0.9))] * 1000
            print(f"| {label} | {statistics.median(values) * 1000:.1f} ms (p90 {p90:.1f}) |")
    if not skopeo:
        print("skopeo is not installed: its row is left out")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_registry(storage):
    binary = TOOLS / "docker-registry/usr/bin/docker-registry"
    if not binary.exists():
        sys.exit(f"{binary} is missing: run scripts/oci-peers")
    address = f"127.0.0.1:{free_port()}"
    config = storage / "config.yml"
    config.write_text(
        "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
        f"storage:\n  filesystem:\n    rootdirectory: {storage / 'data'}\n"
        f"http:\n  addr: {address}\n"
    )
    process = subprocess.Popen([binary, "serve", config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://{address}/v2/", timeout=1)
            return process, address
        except OSError:
            time.sleep(0.05)
    process.kill()
    sys.exit("docker-registry did not start")


def timed(command):
    started = time.perf_counter()
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - started, json.loads(out.strip().splitlines()[-1])


def row(name, wall, inner):
    def ms(values, q):
        values = sorted(values)
        if q == 50:
            return statistics.median(values) * 1000
        return values[min(len(values) - 1, int(len(values) * q / 100))] * 1000
    print(f"| {name} | {ms(wall, 50):.1f} ms (p90 {ms(wall, 90):.1f}) | {ms(inner, 50):.1f} ms (p90 {ms(inner, 90):.1f}) |")


def main():
    python = TOOLS / "oras/venv/bin/python"
    if not python.exists():
        sys.exit(f"{python} is missing: run scripts/oci-peers")
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "-p", "bosun-oci", "--example", "oci_pull"],
        cwd=ROOT, check=True,
    )
    example = TARGET / "release/examples/oci_pull"
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        process, address = start_registry(scratch)
        try:
            wasm = scratch / "big.wasm"
            wasm.write_bytes(component(SIZE))
            _, pushed = timed([example, "push", address, "bench/big:1.0.0", wasm])
            digest = pushed["digest"]
            crate_wall, crate_inner, oras_wall, oras_inner = [], [], [], []
            for run in range(RUNS):
                out = scratch / f"crate-{run}.wasm"
                wall, result = timed([example, "pull", address, "bench/big", digest, out])
                assert out.read_bytes() == wasm.read_bytes()
                crate_wall.append(wall)
                crate_inner.append(result["seconds"])
                outdir = scratch / f"oras-{run}"
                wall, result = timed([python, "-c", ORAS_PULL, address, f"{address}/bench/big@{digest}", outdir])
                assert (outdir / "big.wasm").read_bytes() == wasm.read_bytes()
                oras_wall.append(wall)
                oras_inner.append(result["seconds"])
            print(f"{SIZE} bytes, {RUNS} runs each, interleaved; digest {digest}")
            print("| client | whole command | the pull alone |")
            print("| --- | --- | --- |")
            row("`oci_pull pull` (bosun-oci, verified)", crate_wall, crate_inner)
            row("ORAS Python SDK `pull`", oras_wall, oras_inner)
            print()
            installs(scratch, address, python, RUNS)
        finally:
            process.kill()
            process.wait()


if __name__ == "__main__":
    main()
