#!/usr/bin/env bash
# Runs the chokepoint, native-plugin-call and JavaScript-plugin benchmarks of two revisions side
# by side, in one run on one machine: BASE_REV in a git worktree under the target directory (kept for the next
# run), then the working tree. Both share one target directory, so only
# Bosun's own crates are built twice.
#
# Usage: benches/compare.sh BASE_REV
# Prints each bench's criterion estimate and per-call distribution, labelled with the revision,
# or the tail of the build or run log when a side fails.
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:?usage: benches/compare.sh BASE_REV}"
target="${CARGO_TARGET_DIR:-$PWD/target}"
tree="$target/compare-base"
# The base's worktree is kept between runs: at the same revision its files keep their times, so
# cargo does not build the base again.
if [ "$(git -C "$tree" rev-parse HEAD 2>/dev/null)" != "$(git rev-parse "$base^{commit}")" ]; then
  git worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"
  git worktree prune
  git worktree add --detach "$tree" "$base" >/dev/null
fi

# The benches moved from bosun-agent to bosun-host with the host crate.
package_of() {
  if [ -f "$1/crates/host/benches/chokepoint.rs" ]; then echo bosun-host; else echo bosun-agent; fi
}

run() {
  local label="$1" dir="$2" package
  package="$(package_of "$dir")"
  # Both trees are the same workspace, so their crates share artefact and fingerprint names in
  # the one target directory: the other tree's would pass for fresh (their fingerprints list
  # that tree's sources). Forgetting Bosun's own crates makes cargo build this tree's again;
  # dependencies stay shared.
  rm -rf "$target"/release/.fingerprint/bosun-* "$target"/release/deps/libbosun_* \
    "$target"/release/deps/bosun_* "$target"/release/build/bosun-*
  local benches=("$package chokepoint" "$package plugin_call")
  # The JavaScript engine's bench (a warm Forge call, first calls, an instance's memory).
  if [ -f "$dir/crates/js/benches/js_plugin.rs" ]; then benches+=("bosun-js js_plugin"); fi
  for entry in "${benches[@]}"; do
    local crate="${entry% *}" bench="${entry#* }"
    echo "== $label ($crate) $bench"
    local log="$target/compare-$bench.log"
    if (cd "$dir" && CARGO_TARGET_DIR="$target" cargo bench --locked -p "$crate" --bench "$bench") >"$log" 2>&1; then
      grep -E "time:|p50|MiB" "$log" || true
    else
      echo "failed; the last lines of $log:"
      tail -20 "$log"
    fi
  done
}

run "base $(git rev-parse --short "$base")" "$tree"
run "head $(git rev-parse --short HEAD)+worktree" "$PWD"
