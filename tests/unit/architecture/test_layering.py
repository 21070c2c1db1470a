"""The layers run one way (docs/architecture.md): SDK ← evaluation core ← consumers ← commands.

Read from the source with ``ast`` (every import, including those inside functions), so a lazy
import cannot hide an arrow pointing the wrong way.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SDK = ROOT / "ragtrace"
EVALUATION = SDK / "evaluation"
CLI = SDK / "cli"
CONSUMERS = ROOT / "consumers" / "ragtrace_consumers"
CONSUMER_COMMANDS = CONSUMERS / "commands"


def _modules(folder: Path, *, skip: tuple[Path, ...] = ()) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if not any(p.is_relative_to(s) for s in skip))


def _imports(path: Path, source: str | None = None) -> Iterator[tuple[int, str]]:
    """Absolute module names imported by ``path`` (relative imports resolved)."""
    text = path.read_text(encoding="utf-8") if source is None else source
    tree = ast.parse(text, filename=str(path))
    package = _package_of(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            yield node.lineno, name


def _package_of(path: Path) -> str:
    base = CONSUMERS.parent if path.is_relative_to(CONSUMERS) else ROOT
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts if parts[-1] == "__init__" and parts.pop() is not None else parts[:-1])


def _violations(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{p.relative_to(ROOT)}:{line} imports {name}"
        for p in files
        for line, name in _imports(p)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]


SDK_FILES = _modules(SDK, skip=(EVALUATION, CLI))


def test_the_sdk_imports_only_the_standard_library_opentelemetry_and_itself() -> None:
    """What an application installs: no evaluation, no commands, no service, no third party."""
    bad = [
        f"{p.relative_to(ROOT)}:{line} imports {name}"
        for p in SDK_FILES
        for line, name in _imports(p)
        if name.split(".")[0] not in sys.stdlib_module_names
        and name.split(".")[0] not in {"opentelemetry", "typing_extensions"}
        and not (
            name == "ragtrace"
            or name.startswith("ragtrace.")
            and not name.startswith(("ragtrace.evaluation", "ragtrace.cli"))
        )
    ]
    assert bad == []


def test_the_evaluation_core_does_not_import_commands_or_the_service() -> None:
    assert _violations(_modules(EVALUATION), ("ragtrace.cli", "ragtrace_consumers")) == []


def test_the_offline_commands_do_not_import_the_service() -> None:
    """The service's commands join the CLI through entry points, not imports."""
    assert _violations(_modules(CLI), ("ragtrace_consumers",)) == []


def test_the_service_does_not_import_commands() -> None:
    files = _modules(CONSUMERS, skip=(CONSUMER_COMMANDS,))
    assert _violations(files, ("ragtrace.cli", "ragtrace_consumers.commands")) == []


@pytest.mark.parametrize("name", ["demo", "labels", "consume", "serve", "inspect"])
def test_the_service_commands_are_registered_through_entry_points(name: str) -> None:
    from ragtrace.cli import build_parser

    parser = build_parser()
    choices = next(a for a in parser._actions if a.dest == "command").choices
    assert choices is not None and name in choices


def test_the_checker_sees_a_wrong_arrow() -> None:
    """The import reader finds lazy and relative imports (so the tests above can fail)."""
    source = "def f():\n    from ..commands import serve\n    import ragtrace.cli.output\n"
    names = [n for _, n in _imports(CONSUMERS / "readers" / "x.py", source)]
    assert names == ["ragtrace_consumers.commands", "ragtrace.cli.output"]
    assert _violations([CONSUMERS / "labels.py"], ("ragtrace.evaluation",)) != []
