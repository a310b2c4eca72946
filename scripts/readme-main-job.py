#!/usr/bin/env python3
"""The README's main job: its command and the output it shows.

    readme-main-job.py README OUT_DIR

Writes OUT_DIR/command (the command of the Quick start table's "the main
job" row) and OUT_DIR/expected (the block under "## The main job", whose
first line must be `$ COMMAND`; an optional `# comment` after it is not part
of the command). scripts/test-readme.sh runs the command in a clone and
compares; scripts/test-wheel.sh compares the installed `toolmock run` with
the same block.
"""

import re
import sys

readme, out = sys.argv[1], sys.argv[2]
text = open(readme, encoding="utf-8").read()
row = re.search(r"^\|\s*\*\*the main job\*\*.*\|\s*`([^`]+)`\s*\|\s*$", text, re.M)
if not row:
    sys.exit("readme-main-job: README.md has no Quick start row '| **the main job**: … | `COMMAND` |'")
command = row.group(1)
section = re.search(r"^## The main job.*?^```[a-z]*\n(.*?)^```", text, re.M | re.S)
if not section:
    sys.exit("readme-main-job: README.md has no code block under '## The main job'")
lines = section.group(1).split("\n")
first = re.sub(r"\s+#.*$", "", lines[0])
if first != "$ " + command:
    sys.exit(f"readme-main-job: the main job's block starts with {lines[0]!r}, not '$ {command}' (the Quick start's command)")
with open(f"{out}/command", "w", encoding="utf-8") as f:
    f.write(command + "\n")
with open(f"{out}/expected", "w", encoding="utf-8") as f:
    f.write("\n".join(lines[1:]))
