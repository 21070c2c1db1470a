"""The layers run one way (docs/architecture.md): SDK ← evaluation core ← consumers ← commands,
and inside the service, room by room (:data:`SERVICE_ROOMS`).

Read from the source with ``ast`` (every import, including those inside functions and under
``TYPE_CHECKING``), so a lazy import cannot hide an arrow pointing the wrong way.
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


JUDGES = EVALUATION / "judges"
JUDGE_KINDS = ("lexical", "model")
"""The judges by kind (docs/architecture.md); what both share sits at ``judges/`` level."""


def test_the_judge_kinds_import_the_shared_judge_modules_never_each_other() -> None:
    """A kind imports the shared modules; the shared modules import no kind (only the package's
    ``__init__``, whose ``make_judge`` builds every kind)."""
    package = "ragtrace.evaluation.judges"
    bad = []
    for kind in (None, *JUDGE_KINDS):
        folder = JUDGES / kind if kind else JUDGES
        files = (
            _modules(folder) if kind else [p for p in JUDGES.glob("*.py") if p.stem != "__init__"]
        )
        others = tuple(f"{package}.{k}" for k in JUDGE_KINDS if k != kind)
        bad += _violations(files, others)
    assert bad == []


@pytest.mark.parametrize("name", ["demo", "labels", "consume", "serve", "inspect"])
def test_the_service_commands_are_registered_through_entry_points(name: str) -> None:
    from ragtrace.cli import build_parser

    parser = build_parser()
    choices = next(a for a in parser._actions if a.dest == "command").choices
    assert choices is not None and name in choices


SERVICE_ROOMS: tuple[str, ...] = (
    "errors",
    "model",
    "stores",
    "readers",
    "telemetry",
    "scoring",
    "config",
    "writeback",
    "intake",
    "webview",
    "runtime",
    "demo",
    "commands",
)
"""The service's rooms, lowest first: a module may import its own room and the rooms before it.

``errors`` and ``model`` are the two top-level modules every room shares (the seams and their
vocabulary); ``stores`` implement the store seams and read only the contract, never the
readers or the scoring that call them (the caller names the traces that may start an entry);
``readers`` turn spans into RAG traces; ``telemetry`` is the service's own metrics (every
later room counts); ``scoring`` is the one scoring path, which never reads the settings: ``config`` (the
settings, which reuse scoring's defaults and parsers) comes after it, and the wiring hands
scoring plain values; ``writeback`` sits behind the score sink; ``intake`` is the front door
(decode, admission, the receiver); ``runtime`` wires one process (Kafka or embedded);
``demo`` and ``commands`` run it."""


def _room(module: str) -> str | None:
    """The room of a ``ragtrace_consumers`` module (its first name below the package)."""
    parts = module.split(".")
    if parts[0] != "ragtrace_consumers" or len(parts) < 2:
        return None
    return parts[1]


def _service_arrows(path: Path, source: str | None = None) -> Iterator[tuple[int, str, str]]:
    """(line, imported module, its room) for each import of the service by ``path``."""
    text = path.read_text(encoding="utf-8") if source is None else source
    tree = ast.parse(text, filename=str(path))
    for line, name in _imports(path, text):
        if name == "ragtrace_consumers":  # ``from ragtrace_consumers import x``: x is the room
            node = next(
                n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.lineno == line
            )
            for alias in node.names:
                yield line, f"{name}.{alias.name}", alias.name
        elif (room := _room(name)) is not None:
            yield line, name, room


def _backward_arrows(files: list[Path], sources: dict[Path, str] | None = None) -> list[str]:
    """Imports that point from a room to a later one."""
    out = []
    for path in files:
        mine = _room(_package_of(path) + "." + path.stem)
        assert mine is not None, path
        for line, name, room in _service_arrows(path, (sources or {}).get(path)):
            if room == mine:
                continue
            assert room in SERVICE_ROOMS, f"{name}: a room missing from SERVICE_ROOMS"
            if SERVICE_ROOMS.index(room) > SERVICE_ROOMS.index(mine):
                out.append(f"{path.relative_to(ROOT)}:{line} ({mine}) imports {name} ({room})")
    return out


def test_every_service_module_is_in_a_room() -> None:
    """Nothing new lands at the top level unnoticed: it is a room or a shared module."""
    top = {p.stem for p in CONSUMERS.glob("*.py")} - {"__init__"}
    rooms = {p.name for p in CONSUMERS.iterdir() if (p / "__init__.py").is_file()}
    assert top <= set(SERVICE_ROOMS), sorted(top)
    assert rooms <= set(SERVICE_ROOMS), sorted(rooms)


def test_the_service_rooms_import_one_way() -> None:
    files = [p for p in _modules(CONSUMERS) if p.parent != CONSUMERS or p.stem != "__init__"]
    assert _backward_arrows(files) == []


def test_the_checker_sees_a_wrong_arrow() -> None:
    """The import reader finds lazy and relative imports (so the tests above can fail)."""
    source = "def f():\n    from ..commands import serve\n    import ragtrace.cli.output\n"
    names = [n for _, n in _imports(CONSUMERS / "readers" / "x.py", source)]
    assert names == ["ragtrace_consumers.commands", "ragtrace.cli.output"]
    assert _violations([CONSUMERS / "scoring" / "label_match.py"], ("ragtrace.evaluation",)) != []


@pytest.mark.parametrize(
    ("where", "source", "expected"),
    [
        ("scoring/x.py", "from ragtrace_consumers.runtime.wiring import build_scoring\n", 1),
        ("model.py", "def f():\n    from ragtrace_consumers import scoring\n", 1),
        ("stores/x.py", "from ..writeback import span_content\n", 1),
        ("config/settings.py", "from ragtrace_consumers.runtime import embedded\n", 1),
        ("writeback/x.py", "from ragtrace_consumers.stores.sqlite_state import SqliteState\n", 0),
        ("scoring/x.py", "from ragtrace_consumers.config import ConfigError\n", 1),
        ("scoring/x.py", "from ragtrace_consumers.errors import ConfigError\n", 0),
        ("scoring/x.py", "def f():\n    from ragtrace_consumers import config\n", 1),
        ("config/settings.py", "from ragtrace_consumers.scoring.sampling import SamplingRule\n", 0),
        ("runtime/x.py", "from ragtrace_consumers.config import ConsumerConfig\n", 0),
        ("stores/x.py", "from ragtrace_consumers.scoring.assembly import completion_due\n", 1),
        ("stores/x.py", "from ..telemetry.metrics import ConsumerMetrics\n", 1),
        ("stores/x.py", "from ragtrace_consumers.model import DeadTrace\n", 0),
        ("stores/x.py", "from ragtrace_consumers.readers import creates_trace\n", 1),
        ("stores/x.py", "def f():\n    from ..readers import registry\n", 1),
        ("readers/x.py", "from ragtrace_consumers.stores.span_encoding import encode_span\n", 0),
    ],
)
def test_the_room_checker_sees_an_arrow_pointing_back(
    where: str, source: str, expected: int
) -> None:
    """An import from a room to a later one fails the test above (so it can fail)."""
    path = CONSUMERS / where
    assert len(_backward_arrows([path], {path: source})) == expected


def _own_package_init_imports(path: Path, source: str | None = None) -> list[str]:
    """Names ``path`` imports from the ``__init__`` of a package it belongs to (a submodule
    imported through its package is fine): such an import runs in the middle of that
    ``__init__`` and works only by the order of its lines."""
    text = path.read_text(encoding="utf-8") if source is None else source
    tree = ast.parse(text, filename=str(path))
    base = CONSUMERS.parent if path.is_relative_to(CONSUMERS) else ROOT
    own = path.parent if path.name != "__init__.py" else path.parent.parent
    out = []
    for line, name in _imports(path, text):
        folder = base.joinpath(*name.split("."))
        if not (folder / "__init__.py").is_file() or not own.is_relative_to(folder):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and node.lineno == line:
                out.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
            elif isinstance(node, ast.ImportFrom) and node.lineno == line:
                out.extend(
                    f"{path.relative_to(ROOT)}:{line} imports {a.name} from {name}"
                    for a in node.names
                    if not (folder / f"{a.name}.py").is_file()
                    and not (folder / a.name / "__init__.py").is_file()
                )
    return out


def test_no_module_imports_its_own_package_init() -> None:
    """``__version__`` and the like come from their own modules (``ragtrace._version``)."""
    files = _modules(SDK) + _modules(CONSUMERS)
    assert [v for p in files for v in _own_package_init_imports(p)] == []


@pytest.mark.parametrize(
    ("where", "source", "expected"),
    [
        (SDK / "_health.py", "def f():\n    from ragtrace import __version__\n", 1),
        (SDK / "cli" / "__init__.py", "from ragtrace import __version__\n", 1),
        (CONSUMERS / "config" / "docs.py", "from . import ConsumerConfig\n", 1),
        (CONSUMERS / "readers" / "view.py", "import ragtrace_consumers.readers\n", 1),
        (SDK / "_health.py", "from ragtrace import semconv\n", 0),
        (SDK / "_health.py", "from ragtrace._version import __version__\n", 0),
        (SDK / "__init__.py", "from ragtrace import _config\n", 0),
        (CONSUMERS / "scoring" / "x.py", "from ragtrace_consumers.readers import role_of\n", 0),
    ],
)
def test_the_init_checker_sees_an_import_of_its_own_package(
    where: Path, source: str, expected: int
) -> None:
    assert len(_own_package_init_imports(where, source)) == expected
