"""Type stubs of the extension module (the Rust side of the package)."""

from typing import Any, Literal, Mapping, Sequence, final

JSON = Any
"""A JSON value as Python objects: dict (str keys), list, tuple, str, int, float, bool, None."""

DefinitionSource = Mapping[str, JSON] | str | bytes
"""A definition: a dict, or JSON text (repeated keys are then found as the CLI finds them)."""

ContractSource = Mapping[str, JSON] | str | bytes | Contract

class ToolmockError(Exception):
    """Every error the package raises."""

    code: str
    """A code of docs/error-codes.md."""
    path: str | None
    """A JSON pointer (into the input, state, result, contract or document), or None."""
    message: str

class CallFailed(ToolmockError):
    """A failed call; it changed no state."""

    error_class: Literal["tool_input_error", "harness_error"]
    violations: list[tuple[str, str, str]]
    """For schema errors: (pointer into the value, pointer into the schema, message)."""

class ToolInputError(CallFailed):
    """The caller's input is at fault: a recoverable tool error."""

class HarnessError(CallFailed):
    """The harness is at fault; an attempt with one never passes."""

class DomainError(ToolmockError):
    """A version-2 domain error the mock answered: an answer, not a failed call."""

    error_class: str
    data: JSON | None

class DefinitionError(ToolmockError):
    """A definition that fails its check (code ``invalid_definition``)."""

    problems: list[Problem]

class ContractError(ToolmockError):
    """A contract that cannot be read, hashed or compiled."""

class ManifestError(ToolmockError):
    """A platform manifest with problems (code ``invalid_manifest``)."""

    problems: list[Problem]

class AttemptError(ToolmockError):
    """An attempt that cannot start (``state_conflict``, ``missing_contract``)."""

class NotJsonError(ToolmockError):
    """A Python value without a JSON form (code ``not_json``)."""

@final
class Problem:
    """One problem: code, JSON pointer, message, and severity."""

    code: str
    path: str
    message: str
    severity: Literal["error", "warning"]
    file: str | None
    """For a simulation's problem, the file ``path`` points into; else None."""

@final
class Contract:
    """An operation contract with its two schemas compiled."""

    def __init__(self, contract: Mapping[str, JSON] | str | bytes) -> None: ...
    @property
    def hash(self) -> str: ...
    @property
    def name(self) -> str: ...
    def to_dict(self) -> dict[str, JSON]: ...

@final
class Outcome:
    """What one call answered."""

    variant: str
    rule: int | None
    result: JSON
    error: dict[str, JSON] | None
    state: dict[str, JSON]
    delay_ms: int

@final
class CompiledDefinition:
    """A definition that passed its check, compiled once."""

    def evaluate(
        self, input: JSON, state: Mapping[str, JSON] | None = None, variant: str | None = None
    ) -> tuple[JSON, dict[str, JSON], int]:
        """``(result, new_state, delay_ms)``; raises ToolInputError or HarnessError."""
    def evaluate_outcome(
        self, input: JSON, state: Mapping[str, JSON] | None = None, variant: str | None = None
    ) -> Outcome: ...
    @property
    def initial_state(self) -> dict[str, JSON]: ...
    @property
    def default_variant(self) -> str: ...
    @property
    def variant_names(self) -> list[str]: ...
    @property
    def contract(self) -> Contract | None: ...

class Attempt:
    """One attempt's operations and state across calls, as the dispatcher keeps them."""

    def __init__(
        self,
        definitions: Mapping[str, DefinitionSource | CompiledDefinition],
        contracts: Mapping[str, ContractSource],
        variants: Mapping[str, str] | None = None,
    ) -> None: ...
    def call(self, operation: str, arguments: JSON = None, variant: str | None = None) -> JSON:
        """The rendered result; raises ToolInputError or HarnessError."""
    @property
    def state(self) -> dict[str, JSON]: ...
    @property
    def initial_state(self) -> dict[str, JSON]: ...
    @property
    def operations(self) -> list[str]: ...
    @property
    def elapsed_ms(self) -> int: ...
    @property
    def calls(self) -> list[dict[str, JSON]]: ...
    @property
    def harness_errors(self) -> list[dict[str, JSON]]: ...
    def restart(self, variants: Mapping[str, str] | None = None) -> Attempt: ...

def compile(definition: DefinitionSource, contract: ContractSource | None = None) -> CompiledDefinition:
    """Checks a definition and returns it compiled; raises DefinitionError with every problem."""

def check(definition: DefinitionSource, contract: ContractSource) -> list[Problem]:
    """Every problem (errors, or the warnings of a passing definition)."""

def contract_hash(contract: Mapping[str, JSON] | str | bytes) -> str:
    """The contract hash (64 lowercase hex digits)."""

def normalize_manifest(manifest: Mapping[str, JSON] | str | bytes) -> list[dict[str, JSON]]:
    """``toolmock normalize``: one ``{"contract", "contract_hash"}`` per operation."""

def _check_documented_codes(markdown: str) -> None: ...

__version__: str
_version_line: str

def _main(argv: Sequence[str]) -> int:
    """The ``toolmock`` command with ``argv`` (``argv[0]`` is the program); its exit status."""

def _run(args: Sequence[str]) -> dict[str, JSON]:
    """``toolmock run ARGS --json``'s results document."""

def _plan(path: str) -> list[tuple[str, int]]:
    """``(case, attempts)`` per case of a simulation file, as ``toolmock run`` plays them."""

@final
class _Server:
    """``toolmock serve ARGS`` (with ``--http``) in the background."""

    def __init__(self, args: Sequence[str]) -> None: ...
    @property
    def address(self) -> str: ...
    @property
    def case(self) -> str: ...
    @property
    def running(self) -> bool: ...
    def new_attempt(self) -> int: ...
    def finish(self, number: int) -> dict[str, JSON]: ...
    def results(self) -> dict[str, JSON]: ...
    def stop(self) -> dict[str, JSON] | None: ...
