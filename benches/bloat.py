#!/usr/bin/env python3
"""What a release binary is made of: its sections, and its code by crate.

`size -A` gives the sections; `nm -S --size-sort -C` the size of every function symbol, which
is attributed to the crate its demangled path starts with (`wasmtime::…`, or for a trait impl
`<T as serde::de::Deserialize>::…` the crate of the type, `T`). Generic code instantiated in
another crate counts where its path points, so "core"/"alloc"/"std" hold much of everyone's
generic code. Needs a binary with symbols (one built before `strip`).

Usage: python3 benches/bloat.py BOSUN [--top N]
"""

import argparse
import re
import subprocess
import sys
from collections import Counter

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def crate_of(name):
    """The crate a demangled symbol belongs to, as well as a name can tell."""
    name = name.strip()
    while name.startswith("<"):
        name = name[1:]
        if name.startswith("&"):
            name = name.lstrip("&").removeprefix("mut ").removeprefix("dyn ")
        if name.startswith("["):
            name = name[1:]
    m = IDENT.match(name)
    if not m:
        return "?"
    word = m.group(0)
    if name[m.end():].startswith("::"):
        return word
    return word if word in ("core", "alloc", "std") else "(other)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()

    sections = subprocess.run(["size", "-A", args.binary], capture_output=True, text=True, check=True).stdout
    print("sections over 100 KB:")
    for line in sections.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit() and int(parts[1]) > 100_000:
            print(f"  {parts[0]:<24} {int(parts[1]) / 1e6:8.2f} MB")

    nm = subprocess.run(["nm", "-S", "--size-sort", "-C", args.binary], capture_output=True, text=True, check=True).stdout
    by_crate = Counter()
    total = 0
    for line in nm.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 4 or parts[2] not in "tTwW":
            continue
        size = int(parts[1], 16)
        by_crate[crate_of(parts[3])] += size
        total += size
    if total == 0:
        print("no function symbols: the binary is stripped")
        return 0
    print(f"\nfunction code with symbols: {total / 1e6:.2f} MB; by crate (top {args.top}):")
    for crate, size in by_crate.most_common(args.top):
        print(f"  {crate:<28} {size / 1e6:8.2f} MB  {size / total * 100:5.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
