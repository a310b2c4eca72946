"""The ``toolmock`` command: ``python -m toolmock …``, and the console
script a wheel installs on PATH.

The command is the Rust program of the toolmock CLI, compiled into this
package's extension module: ``toolmock_cli::main`` runs with these
arguments and prints on this process's stdout and stderr exactly what the
binary prints, and its exit status is the process's.
"""

from __future__ import annotations

import signal
import sys

from toolmock._toolmock import _main


def main() -> int:
    """Runs the command with ``sys.argv`` and returns its exit status."""
    # A Rust binary starts with SIGINT at its default (Ctrl-C ends the
    # process, or reaches the handler `toolmock serve` installs) and SIGPIPE
    # ignored (a closed pipe is a write error the command handles). Python
    # ignores SIGPIPE too, but turns SIGINT into KeyboardInterrupt, which
    # native code never sees: give SIGINT back its default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    return _main(["toolmock", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
