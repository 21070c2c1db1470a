"""Every public exception ragtrace defines is a ``RagtraceError`` (ragtrace/errors.py).

Found by importing every module of the ``ragtrace`` package, so a new exception class that
forgets the root fails here. Private classes (a leading underscore) never cross a seam.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import ragtrace
from ragtrace.errors import RagtraceError


def _public_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(ragtrace.__path__, "ragtrace."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = obj
    return found


def test_every_public_exception_is_a_ragtrace_error() -> None:
    found = _public_exceptions()
    # The walk reaches the exceptions of the SDK, the evaluation core and the commands.
    assert {
        "ragtrace.chunks.ChunkExtractionError",
        "ragtrace.evaluation.judges.base.JudgeUnavailable",
        "ragtrace.cli._gate.GateError",
    } <= set(found)
    strays = sorted(name for name, cls in found.items() if not issubclass(cls, RagtraceError))
    assert strays == [], f"not under ragtrace.errors.RagtraceError: {strays}"


def test_each_keeps_its_standard_library_base() -> None:
    from ragtrace.chunks import ChunkExtractionError
    from ragtrace.cli._gate import GateError
    from ragtrace.cli._groundedness_batch import BatchInputError
    from ragtrace.evaluation.compare import IncomparableReportsError
    from ragtrace.evaluation.judges.base import JudgeCapabilityError
    from ragtrace.evaluation.judges.model.anthropic_batch import BatchNotFound
    from ragtrace.evaluation.judges.prompts import MalformedOutput
    from ragtrace.evaluation.labels import InputFileError

    for cls, base in (
        (ChunkExtractionError, ValueError),
        (GateError, ValueError),
        (BatchInputError, ValueError),
        (IncomparableReportsError, ValueError),
        (InputFileError, ValueError),
        (MalformedOutput, ValueError),
        (BatchNotFound, LookupError),
        (JudgeCapabilityError, NotImplementedError),
    ):
        assert issubclass(cls, RagtraceError) and issubclass(cls, base), cls
