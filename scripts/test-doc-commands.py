#!/usr/bin/env python3
"""Runs the `toolmock` examples of README.md and docs/*.md and compares what
they print with what the page shows (run by scripts/test-readme.sh, in its
fresh clone, after the main job built the binaries).

usage: python3 scripts/test-doc-commands.py REPO BIN_DIR

A ```console block is run when every command in it (a line `$ COMMAND`, with
`\\` continuation lines) is a `toolmock` command, or `echo …` piped into
one, and each command either shows its output or sends it to a file with
`>`. Its commands run in order with bash in REPO (so files a command writes
are there for the next), with BIN_DIR first on PATH; stdout and stderr
together (as a terminal interleaves them) must equal the lines the page shows
after the command, exactly, except that a line of only "…" stands for any
number of lines.
Blocks of commands that show no output (a list of forms with comments) are
left alone. Exits 1 listing every difference, 0 when every example holds.
"""

import os
import re
import subprocess
import sys

COMMAND = re.compile(r"^(?:echo '[^']*' \| )?toolmock \S")


def blocks(text):
    """(line number, lines) of every ```console block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```console":
            start, body = i + 1, []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            yield start + 1, body
        i += 1


def commands(body):
    """[(command, expected output lines)] of a block, or None when it is not run."""
    out, i = [], 0
    while i < len(body):
        line = body[i]
        if not line.startswith("$ "):
            return None  # output before any command
        command = line[2:]
        while command.endswith("\\") and i + 1 < len(body):
            i += 1
            command = command[:-1] + " " + body[i].strip()
        i += 1
        expected = []
        while i < len(body) and not body[i].startswith("$ "):
            expected.append(body[i])
            i += 1
        out.append((command.strip(), expected))
    for command, expected in out:
        if not COMMAND.match(command) or "#" in command:
            return None
        if not expected and ">" not in command:
            return None
    return out


def matches(expected, actual):
    """Whether ACTUAL is EXPECTED, where a line that is only "…" stands for any
    number of lines (a page may shorten a long output)."""
    if "…" not in expected:
        return expected == actual
    cut = expected.index("…")
    head, tail = expected[:cut], expected[cut + 1 :]
    if actual[: len(head)] != head:
        return False
    rest = actual[len(head) :]
    return any(matches(tail, rest[i:]) for i in range(len(rest) + 1))


def main():
    repo, bin_dir = sys.argv[1], os.path.abspath(sys.argv[2])
    pages = ["README.md"] + sorted(
        os.path.join("docs", p) for p in os.listdir(os.path.join(repo, "docs")) if p.endswith(".md")
    )
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], NO_COLOR="1")
    failures, ran = [], 0
    for page in pages:
        with open(os.path.join(repo, page), encoding="utf-8") as f:
            text = f.read()
        for line, body in blocks(text):
            run = commands(body)
            if run is None:
                continue
            for command, expected in run:
                ran += 1
                done = subprocess.run(
                    ["bash", "-c", command],
                    cwd=repo,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
                actual = done.stdout.rstrip("\n").split("\n") if done.stdout else []
                if not matches(expected, actual):
                    failures.append(
                        f"{page}:{line}: $ {command}\n  the page shows:\n    "
                        + "\n    ".join(expected)
                        + "\n  it prints:\n    "
                        + "\n    ".join(actual)
                    )
    for failure in failures:
        print(failure, file=sys.stderr)
    if failures:
        print(f"test-doc-commands: {len(failures)} of {ran} commands differ", file=sys.stderr)
        return 1
    print(f"test-doc-commands: {ran} commands of README.md and docs/ print what the pages show")
    return 0


if __name__ == "__main__":
    sys.exit(main())
