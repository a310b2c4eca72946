#!/usr/bin/env python3
"""Keeps the documentation standing alone and true to the repository.

usage: python3 scripts/check-docs.py        (run by `just lint`)

1. No tracked file cites the rules or the folder that CI keeps beside the
   repository (a user of the repository does not have them): neither the
   shared rules file (by name, or as "S-P-E-C §N" without the dashes) nor the
   folder (dot-dot-slash "shared"), in Markdown, comments, doc comments or
   strings.
   The rules are docs/spec.md's ("spec §N"). The only exceptions are the code
   lines (not comments) that read or run the shared vectors and anchors when
   they are there, listed in ALLOWED below by file and exact code fragment.
2. Every "spec §N" reference names a section docs/spec.md has.
3. Every relative link of a tracked Markdown file ([text](path#anchor))
   reaches a tracked file, and its anchor a heading of that file (GitHub's
   slugs).
4. Every repository path that README.md, ARCHITECTURE.md or docs/*.md cites
   in a code block or between backticks (a path under crates/, bins/,
   bindings/, docs/, fixtures/, scripts/, ui-tests/, fuzz/ or .ci/) names a
   tracked file or folder; a glob (`*`, `{a,b}`) must match one. Paths git
   ignores (what a build or an install writes: fuzz/artifacts/, …) are not
   the repository's and are left alone.
5. A page of README.md or docs/ that runs a program installed under
   `.cache/` (a path `.cache/NAME/…/bin/…`: what `scripts/just setup`
   installs, and `scripts/just run` does not) says so at its top: its
   opening, before the first `## ` heading, names `scripts/just setup` and
   each such `.cache/NAME`.

Exits 1 listing every problem as FILE:LINE: message, 0 when there is none.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SELF = "scripts/check-docs.py"  # this file names the patterns it looks for

# Built from pieces so that this file does not match itself.
FORBIDDEN = re.compile(
    r"\b" + "SP" + r"EC\b"  # the shared rules file's name, or a citation of it
    + r"|\.\./" + "shared"  # the folder beside the repository
    + r"|" + "shared" + r"/(anchors|conformance|seed)\b"
)

# (file, exact code fragment): code lines that read or run the shared vectors
# and anchors when CI (or a developer) has them beside the repository.
ALLOWED = [
    ("justfile", 'echo "no ../' + 'shared/conformance here'),
    ("bins/cli/tests/conformance.rs", 'root.join("../' + 'shared/conformance")'),
    ("crates/store/benches/pg_dispatcher.rs", '"/../../../' + 'shared/anchors/pgbench"'),
    ("scripts/bench-api.sh", 'anchor="$root/../' + 'shared/anchors/pgbench"'),
    ("scripts/bench-api.sh", 'print("pgbench anchor: not run (../' + 'shared/anchors/pgbench'),
    ("scripts/bench-worker.sh", 'anchor="$root/../' + 'shared/anchors/pgbench"'),
    ("scripts/bench-worker.sh", 'print("pgbench anchor: not run (../' + 'shared/anchors/pgbench'),
    ("scripts/bench-python.sh", 'anchor="${TOOLMOCK_SHARED_DIR:-$root/../' + 'shared}'),
    ("scripts/fuzz.sh", 'for dir in "$root/../' + 'shared/conformance"'),
]

COMMENT_START = ("//", "#", "/*", "*", '"""', "<!--")


def tracked_files():
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    return [p for p in out.decode().split("\0") if p]


def read_text(path):
    try:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        return None


def spec_sections():
    text = read_text("docs/spec.md") or ""
    return {int(m.group(1)) for m in re.finditer(r"^## (\d+)\. ", text, re.M)}


def check_citations(files, problems):
    sections = spec_sections()
    if not sections:
        problems.append("docs/spec.md: no numbered section (## N. Title)")
    for path in files:
        if path == SELF or path == "Cargo.lock":
            continue
        text = read_text(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN.search(line):
                allowed = any(
                    path == f and frag in line and not line.strip().startswith(COMMENT_START)
                    for f, frag in ALLOWED
                )
                if not allowed:
                    problems.append(
                        f"{path}:{number}: cites a file or folder outside the repository; "
                        f"cite docs/spec.md (\"spec §N\") instead: {line.strip()[:120]}"
                    )
            for m in re.finditer(r"spec(?:\.md)?\]?(?:\([^)]*\))? §(\d+)", line):
                if int(m.group(1)) not in sections:
                    problems.append(f"{path}:{number}: docs/spec.md has no §{m.group(1)}")


def strip_code_blocks(text):
    """The lines of a Markdown text with fenced code blocks blanked."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    return lines


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(text):
    found, seen = set(), {}
    for line in strip_code_blocks(text):
        m = re.match(r"^#{1,6} (.*)$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return found


def check_links(files, problems):
    tracked = set(files)
    folders = {os.path.dirname(p) for p in files}
    while "" in folders:
        folders.discard("")
    for p in list(folders):
        while p:
            folders.add(p)
            p = os.path.dirname(p)
    anchors = {}
    for path in files:
        if not path.endswith(".md"):
            continue
        text = read_text(path)
        if text is None:
            continue
        for number, line in enumerate(strip_code_blocks(text), 1):
            line = re.sub(r"`[^`]*`", "", line)
            for m in re.finditer(r"\]\(([^)\s]+)\)", line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:
                file_part, _, anchor = target.partition("#")
                if file_part:
                    resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                else:
                    resolved = path
                if resolved not in tracked and resolved not in folders:
                    problems.append(f"{path}:{number}: link to {target}: no such file in the repository")
                    continue
                if anchor and resolved.endswith(".md"):
                    if resolved not in anchors:
                        anchors[resolved] = anchors_of(read_text(resolved) or "")
                    if anchor not in anchors[resolved]:
                        problems.append(f"{path}:{number}: link to {target}: {resolved} has no heading #{anchor}")


PATH_TOKEN = re.compile(
    r"(?<![\w./@$-])(?:\./)?((?:crates|bins|bindings|docs|fixtures|scripts|ui-tests|fuzz|\.ci)/[\w./@*{},-]*)"
)


def expand_braces(path):
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    out = []
    for part in m.group(1).split(","):
        out += expand_braces(path[: m.start()] + part + path[m.end():])
    return out


def cited_paths(text):
    """(line number, path) of every repository path in code blocks and code spans."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        spans = [line] if fenced else re.findall(r"`([^`]+)`", line)
        for span in spans:
            for m in PATH_TOKEN.finditer(span):
                path = m.group(1).rstrip(".,:;")
                if path.endswith("/") or "/" in path:
                    yield number, path


def ignored(path):
    """Whether git ignores PATH (an output of a build or an install)."""
    return (
        subprocess.run(
            ["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT, capture_output=True
        ).returncode
        == 0
    )


def check_paths(files, problems):
    import fnmatch

    tracked = set(files)
    folders = set()
    for p in files:
        d = os.path.dirname(p)
        while d:
            folders.add(d)
            d = os.path.dirname(d)
    pages = ["README.md", "ARCHITECTURE.md"] + sorted(
        p for p in files if p.startswith("docs/") and p.endswith(".md") and p.count("/") == 1
    )
    for page in pages:
        text = read_text(page)
        if text is None:
            continue
        for number, cited in cited_paths(text):
            found = False
            for path in expand_braces(cited):
                path = path.rstrip("/")
                if "*" in path:
                    found = any(fnmatch.fnmatch(p, path) for p in tracked | folders)
                else:
                    found = path in tracked or path in folders
                if not found:
                    break
            if not found and ignored(cited.replace("*", "x")):
                found = True
            if not found:
                problems.append(f"{page}:{number}: cites {cited}, which is not in the repository")


INSTALLED_PROGRAM = re.compile(r"\.cache/([A-Za-z0-9_.-]+)/[^\s`'\"]*bin/")


def check_setup_named(files, problems):
    pages = ["README.md"] + sorted(
        p for p in files if p.startswith("docs/") and p.endswith(".md") and p.count("/") == 1
    )
    for page in pages:
        text = read_text(page)
        if text is None:
            continue
        opening = " ".join(re.split(r"^## ", text, maxsplit=1, flags=re.M)[0].split())
        first_use = {}
        for number, line in enumerate(text.splitlines(), 1):
            for m in INSTALLED_PROGRAM.finditer(line):
                first_use.setdefault(m.group(1), number)
        if first_use and "scripts/just setup" not in opening:
            line = min(first_use.values())
            problems.append(
                f"{page}:{line}: runs a program from .cache/, but its opening does not say "
                "that `scripts/just setup` installs it"
            )
        for name, line in sorted(first_use.items(), key=lambda item: item[1]):
            if f".cache/{name}" not in opening:
                problems.append(
                    f"{page}:{line}: runs a program from .cache/{name}, which its opening "
                    "(before the first ## heading) does not name"
                )


def main():
    files = tracked_files()
    problems = []
    check_citations(files, problems)
    check_links(files, problems)
    check_paths(files, problems)
    check_setup_named(files, problems)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check-docs: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check-docs: {len(files)} tracked files, no problem")
    return 0


if __name__ == "__main__":
    sys.exit(main())
