"""``toolmock run`` and ``toolmock serve`` from Python, on the embedded
runtime: the CLI's own code, in this process.

Options are the command's flags, spelled as keywords: ``jobs=4`` is
``--jobs 4``, ``real_delays=True`` is ``--real-delays`` (``False`` and
``None`` leave a flag out), ``evidence=path`` is ``--evidence path``. They
are read by the command's own argument parser, so they take exactly the
values the command takes (and the model flags their ``TOOLMOCK_*``
environment variables, as the command does).
"""

from __future__ import annotations

import os
# Annotations are never evaluated here (`from __future__ import annotations`),
# and importing `typing` would be most of `import toolmock`'s time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from toolmock._toolmock import _run, _Server


def _flags(options: dict[str, Any]) -> list[str]:
    """Keyword options as the command's flags."""
    flags: list[str] = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            flags.append(flag)
        elif isinstance(value, (str, int, float, os.PathLike)):
            flags += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
        else:
            raise TypeError(f"option {name}={value!r}: a flag's value is a str, a number, a path, True, False or None")
    return flags


def run(path: str | os.PathLike[str], **options: Any) -> dict[str, Any]:
    """Runs a simulation file on the embedded runtime, as ``toolmock run``
    does, and returns its results document as Python objects: exactly what
    ``toolmock run PATH --json`` prints, read by ``json.loads``.

    ``options`` are ``toolmock run``'s flags as keywords (``jobs``,
    ``real_delays``, ``junit``, ``evidence``, the model flags); ``json``,
    ``check`` and ``min_pass_rate`` do not apply (the document is returned
    whole; ``results["ok"]`` says whether every attempt ended as expected).

    Raises ``SimulationError`` (code ``invalid_simulation``, every problem
    in ``problems``) for a file that cannot run, ``ToolmockError`` with code
    ``invalid_option`` for options the command does not take.
    """
    return _run([os.fspath(path), *_flags(options)])


class Server:
    """``toolmock serve --http`` in the background of this process: one
    case of a simulation file served as MCP tools over streamable HTTP,
    attempt ``n`` at ``attempt_url(n)``, each attempt judged when it ends.

    A context manager: leaving the ``with`` block stops it (``stop()``).
    """

    def __init__(self, inner: _Server) -> None:
        self._inner = inner
        self._results: dict[str, Any] | None = None

    @property
    def address(self) -> str:
        """``HOST:PORT`` it listens on."""
        return self._inner.address

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT``: ``POST /attempts`` and
        ``POST /attempts/n/finish`` are there, as for ``toolmock serve``."""
        return f"http://{self._inner.address}"

    @property
    def case(self) -> str:
        """The served case's name."""
        return self._inner.case

    @property
    def url(self) -> str:
        """Attempt 1's MCP endpoint (started at its first request)."""
        return self.attempt_url(1)

    def attempt_url(self, number: int) -> str:
        """Attempt ``number``'s MCP endpoint."""
        return f"{self.base_url}/attempts/{number}/mcp"

    def new_attempt(self) -> int:
        """Starts a new attempt (the next unused number) and returns its number."""
        return self._inner.new_attempt()

    def finish(self, number: int = 1) -> dict[str, Any]:
        """Ends attempt ``number``, judges it by the case's expectations
        and returns its result: an attempt object of the results document
        (``outcome``, ``as_expected``, ``unmet``, ``calls``, …)."""
        return self._inner.finish(number)

    @property
    def running(self) -> bool:
        """Whether it still serves."""
        return self._inner.running

    @property
    def results(self) -> dict[str, Any]:
        """The results document (as ``toolmock serve --json`` writes it):
        of the attempts ended so far, or, once stopped, of them all."""
        if self._results is not None:
            return self._results
        return self._inner.results()

    def stop(self) -> dict[str, Any]:
        """Stops serving (a call being answered is answered first), ends
        and judges every attempt still open, writes the ``json``, ``junit``
        and ``evidence`` files it was asked for, and returns the results
        document. Stopping again returns the same document."""
        stopped = self._inner.stop()
        if stopped is not None:
            self._results = stopped
        assert self._results is not None, "a server that never stopped has results"
        return self._results

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "serving" if self.running else "stopped"
        return f"Server({self.base_url!r}, case={self.case!r}, {state})"


def serve(
    path: str | os.PathLike[str],
    case: str | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    **options: Any,
) -> Server:
    """Starts ``toolmock serve PATH --http HOST:PORT`` in the background
    and returns the ``Server``; port 0 (the default) picks a free one.

    ``case`` names the served case (needed when the file has more than
    one). ``options`` are ``toolmock serve``'s flags as keywords
    (``max_calls``, ``idle_timeout``, ``real_delays``, ``json``, ``junit``,
    ``evidence``); ``stdio`` and ``attempts`` do not apply.

    >>> with toolmock.serve("calendar.json", case="books_a_day") as server:  # doctest: +SKIP
    ...     agent.run(mcp_url=server.url)
    ...     result = server.finish(1)
    """
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    flags = [os.fspath(path), "--http", address]
    if case is not None:
        flags += ["--case", case]
    return Server(_Server(flags + _flags(options)))
