"""Drives Python's ORAS SDK (PyPI `oras`, installed by scripts/oci-peers) for the interop tests
and the benchmark of crates/oci: the other side that proves Bosun's artifacts are standard.

Usage (from the folder holding the files to push; ORAS refuses paths outside it):
  oras_peer.py pull HOST TARGET OUTDIR          -> prints the pulled files as JSON
  oras_peer.py push HOST TARGET CONFIG CONFIG_TYPE [--chunked] [KEY=VALUE...] -- FILE:TYPE...
  oras_peer.py manifest HOST TARGET             -> prints the manifest JSON
HOST is 127.0.0.1:PORT (plain HTTP: the registry is on loopback).
"""
import json
import sys

import oras.provider


def main(argv):
    command, host, target = argv[1], argv[2], argv[3]
    registry = oras.provider.Registry(hostname=host, insecure=True)
    if command == "pull":
        files = registry.pull(target=target, outdir=argv[4])
        print(json.dumps(files))
    elif command == "manifest":
        print(json.dumps(registry.get_manifest(target)))
    elif command == "push":
        config, config_type = argv[4], argv[5]
        rest = argv[6:]
        split = rest.index("--")
        options, files = rest[:split], rest[split + 1 :]
        chunked = "--chunked" in options
        annotations = dict(o.split("=", 1) for o in options if o != "--chunked")
        registry.push(
            target=target,
            files=files,
            manifest_config=f"{config}:{config_type}",
            manifest_annotations=annotations or None,
            do_chunked=chunked,
            chunk_size=64 * 1024,
            quiet=True,
        )
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
