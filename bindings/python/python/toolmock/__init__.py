"""toolmock's checked tool mocks, in-process.

The functions and classes here are the very code the ``toolmock`` command
runs (``eval``, ``check``, ``hash``, ``normalize``, ``run``, ``serve``),
compiled into this package: a Python harness gets the same answers, errors,
hashes and results documents as the CLI and toolmock's dispatcher, by
construction. The package also installs the command itself (``toolmock``,
``python -m toolmock``).

>>> import toolmock
>>> mock = toolmock.compile({
...     "schema_version": 1, "default_variant": "ok",
...     "variants": {"ok": {"result": {"id": {"$input": "id"}}, "set_state": {"seen": True}}},
...     "examples": [{"variant": "ok", "input": {"id": 1}, "expected": {"id": 1}}],
... })
>>> mock.evaluate({"id": 7}, {})
({'id': 7}, {'seen': True}, 0)

``docs/python.md`` describes the whole API and the pytest plugin.
"""

from toolmock._toolmock import (
    Attempt,
    AttemptError,
    CallFailed,
    CompiledDefinition,
    Contract,
    ContractError,
    DefinitionError,
    DomainError,
    HarnessError,
    ManifestError,
    NotJsonError,
    Outcome,
    Problem,
    ToolInputError,
    ToolmockError,
    __version__,
    check,
    compile,
    contract_hash,
    normalize_manifest,
)
from toolmock.runner import Server, run, serve
from toolmock.simulation import Simulation, SimulationError, load_simulation

__all__ = [
    "Attempt",
    "AttemptError",
    "CallFailed",
    "CompiledDefinition",
    "Contract",
    "ContractError",
    "DefinitionError",
    "DomainError",
    "HarnessError",
    "ManifestError",
    "NotJsonError",
    "Outcome",
    "Problem",
    "Server",
    "Simulation",
    "SimulationError",
    "ToolInputError",
    "ToolmockError",
    "check",
    "compile",
    "contract_hash",
    "load_simulation",
    "normalize_manifest",
    "run",
    "serve",
]
