#!/usr/bin/env bash
# The README cannot drift (run by `just test`): clones the repository's
# committed HEAD into a temporary folder — no build outputs, no .cache, no
# prepared database — runs there the README's main-job command exactly as the
# README writes it, and compares what it prints on stdout with the README's
# block, line by line; a difference (or a non-zero exit) fails. Then, in the
# same clone, the `toolmock` examples of README.md and docs/ must print what
# the pages show (scripts/test-doc-commands.py).
#
# The command and the expected output are read from README.md, never written
# here: the command is the one in the Quick start table's "the main job" row,
# the expected output is the block under "## The main job", whose first line
# must be `$ COMMAND` (an optional `# comment` after it is not run).
#
# To keep CI inside its time, the clone builds into this checkout's target
# folder (CARGO_TARGET_DIR, default ./target): the dependencies already
# compiled there are reused; the workspace's own crates, whose paths differ in
# the clone, are compiled again, so the build itself is tested from scratch.
#
# The clone is made at one fixed place, $CARGO_TARGET_DIR/tmp/readme-clone
# (removed before and after), so that repeated runs overwrite the same
# artifacts instead of adding a set per run.
#
#   scripts/test-readme.sh [README]   (default: the clone's README.md; another
#                                      file, to see the test fail on it)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
say() { printf 'test-readme: %s\n' "$*" >&2; }

work="$CARGO_TARGET_DIR/tmp/readme-clone"
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

# 1. A clone of the committed HEAD.
head="$(git -C "$root" rev-parse HEAD)"
git clone --quiet --shared --no-checkout "$root" "$work/repo"
git -C "$work/repo" checkout --quiet --detach "$head"
if [[ -e "$work/repo/target" || -e "$work/repo/.cache" ]]; then
    say "the clone is not clean"
    exit 1
fi
readme="${1:-$work/repo/README.md}"

# 2. The command and the expected output, from the README.
python3 "$root/scripts/readme-main-job.py" "$readme" "$work"
command="$(cat "$work/command")"

# 3. The command, as written, in the clone.
say "running \`$command\` in a clone of $head (CARGO_TARGET_DIR=$CARGO_TARGET_DIR)"
status=0
(cd "$work/repo" && bash -c "$command") >"$work/actual" 2>"$work/stderr" || status=$?
if [[ $status != 0 ]]; then
    say "\`$command\` exited $status; its stderr ends:"
    tail -n 20 "$work/stderr" >&2
    exit 1
fi

# 4. The comparison.
if ! diff -u --label "README.md (the main job)" --label "\`$command\` in a clone" "$work/expected" "$work/actual" >"$work/diff"; then
    say "the README's output block differs from what \`$command\` prints:"
    cat "$work/diff" >&2
    exit 1
fi
say "ok: \`$command\` in a fresh clone prints the README's block ($(wc -l <"$work/actual") lines)"

# 5. The toolmock examples of README.md and docs/, with the binaries the main
# job just built (scripts/test-doc-commands.py says which blocks it runs).
python3 "$work/repo/scripts/test-doc-commands.py" "$work/repo" "$CARGO_TARGET_DIR/debug"
