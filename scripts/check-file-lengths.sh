#!/usr/bin/env bash
# No Rust source file of the project over LIMIT lines (default 1,000): a file
# that long does more than one job. Prints every offender, then fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
limit="${1:-1000}"
status=0
while IFS= read -r -d '' file; do
    lines=$(wc -l < "$file")
    if [ "$lines" -gt "$limit" ]; then
        echo "$file: $lines lines (over $limit)" >&2
        status=1
    fi
done < <(git ls-files -z -- '*.rs')
exit "$status"
