"""Times the installed wheel (scripts/bench-wheel.sh runs this with the
Python of the environment it was installed into):

1. ``import toolmock`` in a fresh interpreter, ROUNDS times: the import
   alone (``time.perf_counter`` around it, inside the process), and the
   whole ``python -c "import toolmock"`` process beside ``python -c pass``.
2. ``toolmock.run(FILE)`` in this process against the CLI's own binary
   (``BINARY run FILE --json``, a process per run, its output discarded) —
   the same document — alternating run by run, ROUNDS each; and, beside
   them, the wheel's console script (``toolmock run FILE --json``).

    wheel.py BINARY FILE ROUNDS

Prints medians (and the quartiles) in milliseconds and the ratios.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from typing import Callable


def quartiles(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=4)
    return f"median {statistics.median(samples) * 1000:8.2f} ms  (quartiles {q[0] * 1000:.2f}–{q[2] * 1000:.2f})"


def wall(command: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - began


def alternate(rounds: int, sides: dict[str, Callable[[], float]]) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, side in sides.items():
            samples[name].append(side())
    return samples


def main() -> None:
    binary, path, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    python = sys.executable
    inside = "import time; t = time.perf_counter(); import toolmock; print(time.perf_counter() - t)"
    imports = []
    for _ in range(rounds):
        done = subprocess.run([python, "-c", inside], capture_output=True, text=True, check=True)
        imports.append(float(done.stdout))
    processes = alternate(rounds, {
        "python -c pass": lambda: wall([python, "-c", "pass"]),
        "python -c 'import toolmock'": lambda: wall([python, "-c", "import toolmock"]),
    })
    print(f"import toolmock (in the process)     {quartiles(imports)}")
    for name, samples in processes.items():
        print(f"{name:<37}{quartiles(samples)}")

    import toolmock

    document = toolmock.run(path)
    printed = json.loads(subprocess.run([binary, "run", path, "--json"], capture_output=True, check=True).stdout)
    assert document == printed, "toolmock.run and the binary's --json differ"
    script = shutil.which("toolmock")
    assert script is not None and script.startswith(sys.prefix), script

    def in_process() -> float:
        began = time.perf_counter()
        toolmock.run(path)
        return time.perf_counter() - began

    for _ in range(3):  # warm the file cache and the allocator
        in_process()
        wall([binary, "run", path, "--json"])
    runs = alternate(rounds, {
        "the binary: run --json (a process)": lambda: wall([binary, "run", path, "--json"]),
        "toolmock.run (in this process)": in_process,
        "console script: toolmock run --json": lambda: wall([script, "run", path, "--json"]),
    })
    for name, samples in runs.items():
        print(f"{name:<37}{quartiles(samples)}")
    cli = statistics.median(runs["the binary: run --json (a process)"])
    print(f"toolmock.run / the binary:          {statistics.median(runs['toolmock.run (in this process)']) / cli:.2f}x")
    print(f"console script / the binary:        {statistics.median(runs['console script: toolmock run --json']) / cli:.2f}x")


if __name__ == "__main__":
    main()
