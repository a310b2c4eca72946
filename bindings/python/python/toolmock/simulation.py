"""A simulation file's tools and definitions, ready for attempts.

Reads the ``tools`` of a simulation file (the document ``toolmock run``
reads, see ``docs/simulations.md``) the way toolmock's simulation loader
does: each tool's operations from a platform manifest (normalized by the
same code as ``toolmock normalize``), a ``normalize``/``discover`` contracts
array (a stated ``contract_hash`` must match) or hand-written operations,
the tool's ``output_schema`` for operations without one, and one definition
per operation, inline or by path, checked against its contract. The agent,
the workflows and the cases are left to the caller (``case_variants`` reads
a case's variant choices).
"""

from __future__ import annotations

import os
# Annotations are never evaluated here (`from __future__ import annotations`),
# and importing `typing` would be most of `import toolmock`'s time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

from toolmock._toolmock import (
    Attempt,
    CompiledDefinition,
    Contract,
    ToolmockError,
    compile,
    contract_hash,
    normalize_manifest,
)


class SimulationError(ToolmockError):
    """A simulation file whose tools cannot be read: ``code``, ``path`` (a
    JSON pointer into ``file``), ``message`` and ``file``."""

    def __init__(self, code: str, file: str, path: str, message: str) -> None:
        super().__init__(f"{file}: {path or '/'}: {code}: {message}")
        self.code = code
        self.file = file
        self.path = path
        self.message = message


def _pointer(*tokens: Any) -> str:
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


class Simulation:
    """The operations of a simulation file, compiled once.

    ``contracts`` and ``definitions`` are keyed ``"tool/operation"``;
    ``attempt()`` starts a fresh attempt over them (nothing is compiled
    again).
    """

    def __init__(self, path: str) -> None:
        import json  # here, not at the top: `import toolmock` stays cheap

        self.path = os.fspath(path)
        self._base = os.path.dirname(os.path.abspath(self.path))
        with open(self.path, "rb") as fh:
            try:
                self.document: dict[str, Any] = json.loads(fh.read())
            except ValueError as e:
                raise SimulationError("invalid_json", self.path, "", str(e)) from None
        self.name: str = self.document.get("name", "")
        self.contracts: dict[str, Contract] = {}
        self.definitions: dict[str, CompiledDefinition] = {}
        for i, tool in enumerate(self.document.get("tools", [])):
            self._load_tool(i, tool)
        self._base_attempt = Attempt(self.definitions, self.contracts)

    # -- reading -------------------------------------------------------------

    def _read(self, source: Any, at: str) -> tuple[Any, str]:
        """An inline document as it is, or a path's bytes; and its file."""
        if isinstance(source, str):
            path = os.path.join(self._base, source)
            try:
                with open(path, "rb") as fh:
                    return fh.read(), path
            except OSError as e:
                raise SimulationError("missing_file", self.path, at, f"cannot read {path}: {e}") from None
        return source, self.path

    def _load_tool(self, i: int, tool: Mapping[str, Any]) -> None:
        at = _pointer("tools", i)
        name = tool["name"]
        origin = tool["from"]
        if origin == "manifest":
            manifest, _ = self._read(tool["manifest"], at + "/manifest")
            operations = [entry["contract"] for entry in normalize_manifest(manifest)]
        elif origin == "contracts":
            operations = self._contract_entries(tool, at)
        elif origin == "custom":
            operations = [
                {
                    "operation": {"source": "custom", "name": op["name"]},
                    "description": op.get("description", ""),
                    "input_schema": op["input_schema"],
                    **({"output_schema": op["output_schema"]} if "output_schema" in op else {}),
                }
                for op in tool["operations"]
            ]
        else:
            raise SimulationError(
                "library_tool_not_embedded", self.path, at + "/from",
                "library tools are referenced by id only in the API; give the tool's manifest, contracts or operations",
            )
        by_name: dict[str, Contract] = {}
        for o, contract in enumerate(operations):
            if "output_schema" not in contract:
                if "output_schema" not in tool:
                    raise SimulationError(
                        "needs_output_schema", self.path, _pointer("tools", i, "operations", o),
                        f"{contract['operation']['name']} declares no output schema and the tool gives no fallback output_schema",
                    )
                contract = {**contract, "output_schema": tool["output_schema"]}
            compiled = Contract(contract)
            by_name[compiled.name] = compiled
            self.contracts[f"{name}/{compiled.name}"] = compiled
        for operation, source in tool.get("definitions", {}).items():
            here = at + _pointer("definitions", operation)
            if operation not in by_name:
                raise SimulationError(
                    "unknown_operation", self.path, here,
                    f"tool {name!r} has no operation {operation!r}; it has {', '.join(sorted(by_name))}",
                )
            definition, _ = self._read(source, here)
            self.definitions[f"{name}/{operation}"] = compile(definition, by_name[operation])

    def _contract_entries(self, tool: Mapping[str, Any], at: str) -> list[dict[str, Any]]:
        import json

        raw, file = self._read(tool["contracts"], at + "/contracts")
        entries = json.loads(raw) if isinstance(raw, bytes) else raw
        if not isinstance(entries, list):
            raise SimulationError(
                "wrong_type", file, "",
                "a contracts document is the JSON array `toolmock normalize` or `toolmock discover` prints",
            )
        contracts = []
        for e, entry in enumerate(entries):
            contract = entry["contract"]
            stated = entry.get("contract_hash")
            if stated is not None and "output_schema" in contract:
                actual = contract_hash(contract)
                if actual != stated:
                    raise SimulationError(
                        "contract_hash_mismatch", file, _pointer(e, "contract_hash"),
                        f"the entry says {stated} but its contract hashes to {actual}; re-run normalize or discover",
                    )
            contracts.append(contract)
        return contracts

    # -- using ---------------------------------------------------------------

    def case(self, name: str) -> dict[str, Any]:
        """The case called ``name`` (a ``KeyError`` when there is none)."""
        for case in self.document.get("cases", []):
            if case.get("name") == name:
                return case
        raise KeyError(f"{self.path} has no case {name!r}")

    def case_variants(self, name: str) -> dict[str, str]:
        """A case's variant choices, keyed ``"tool/operation"``."""
        return {f"{v['tool']}/{v['operation']}": v["variant"] for v in self.case(name).get("variants", [])}

    def attempt(self, variants: Mapping[str, str] | None = None) -> Attempt:
        """A fresh attempt: the union of the initial states, no calls."""
        return self._base_attempt.restart(dict(variants or {}))

    def __repr__(self) -> str:
        return f"Simulation({self.path!r}, operations={sorted(self.contracts)})"


def load_simulation(path: str | os.PathLike[str]) -> Simulation:
    """Reads a simulation file's tools and definitions (see ``Simulation``)."""
    return Simulation(os.fspath(path))
