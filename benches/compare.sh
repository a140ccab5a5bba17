#!/usr/bin/env bash
# The speed issue's figures for two revisions side by side in one run on one machine: the
# chokepoint, native-plugin and JavaScript-plugin benches' per-call distributions (alternating
# runs), whole commands (`bosun --version`, `tools call read_file`, `greet`, ...) and the release
# binary's size, printed as one Markdown table. BASE_REV is built in a git worktree under the
# target directory (kept for the next run), the head is the working tree; both share one target
# directory, so only Bosun's own crates are built twice. benches/compare.py has the details.
#
# Usage: benches/compare.sh BASE_REV [--rounds N] [--cli-runs N] [--no-cli]
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 benches/compare.py "$@"
