#!/usr/bin/env bash
# Counts a crate's public items the way rustdoc lists them: the entries of
# target/doc/CRATE/all.html (structs, enums, traits, functions, type aliases,
# constants, macros; not modules, methods, fields or variants; a re-export is
# listed once, where its item lives), documented with default features.
# Usage: scripts/count-public-items.sh toolmock-runtime [MAX]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
package="$1"
crate="${package//-/_}"
cargo doc -p "$package" --no-deps --locked --quiet
all="${CARGO_TARGET_DIR:-target}/doc/$crate/all.html"
count=$(grep -o '<li><a href="[^"]*">[^<]*</a></li>' "$all" | wc -l)
echo "$package: $count public items"
if [[ $# -ge 2 && "$count" -gt "$2" ]]; then
    echo "$package has more than $2 public items" >&2
    exit 1
fi
