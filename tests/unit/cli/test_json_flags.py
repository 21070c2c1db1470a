"""The CLI in pipelines: ``--json`` is a flag in every command (it never takes the next word),
``--json-file PATH`` writes a file, one exit code per cause, and the service commands say which
package to install when it is missing."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace.cli import SERVICE_COMMANDS, build_parser, main
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, EXIT_UNAVAILABLE

ROOT = Path(__file__).resolve().parents[3]


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))
    if path:
        yield path, parser


ALL = sorted(_commands(build_parser()), key=lambda c: c[0])
WITH_JSON = [(path, p) for path, p in ALL if any("--json" in a.option_strings for a in p._actions)]


def test_every_command_with_machine_output_has_both_options() -> None:
    names = {" ".join(path) for path, _ in WITH_JSON}
    assert {"eval", "compare", "groundedness", "calibrate", "detect-eval", "demo", "inspect"} <= (
        names
    )
    assert {"serve", "consume", "labels load", "labels list", "labels stats"} <= names


@pytest.mark.parametrize(("path", "parser"), WITH_JSON, ids=[" ".join(p) for p, _ in WITH_JSON])
def test_json_is_a_flag_and_json_file_takes_the_path(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    by_option = {o: a for a in parser._actions for o in a.option_strings}
    flag, to_file = by_option["--json"], by_option["--json-file"]
    assert flag.nargs == 0 and flag.dest == to_file.dest == "json"
    assert to_file.nargs is None and to_file.metavar == "PATH"


def test_json_before_positionals_does_not_swallow_them() -> None:
    args = build_parser().parse_args(["compare", "--json", "a.json", "b.json"])
    assert (args.a, args.b, args.json) == ("a.json", "b.json", "-")
    args = build_parser().parse_args(["compare", "a.json", "b.json", "--json-file", "c.json"])
    assert args.json == "c.json"


def test_inspect_json_reads_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    request: dict[str, list[object]] = {"resourceSpans": []}
    monkeypatch.setattr(sys, "stdin", _Stdin(json.dumps(request)))
    code = main(["inspect", "--json", "-"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    assert json.loads(out) == []


class _Stdin:
    def __init__(self, text: str) -> None:
        import io

        self.buffer = io.BytesIO(text.encode())

    def read(self) -> str:
        return self.buffer.read().decode()


def test_json_and_json_file_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["compare", "a.json", "b.json", "--json", "--json-file", "c.json"])
    assert info.value.code == EXIT_BAD_INPUT
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_old_json_path_form_is_refused_with_a_hint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["eval", "--labels", "l.jsonl", "--run", "r.jsonl", "--json", "out.json"]
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == EXIT_BAD_INPUT
    assert "unrecognized arguments: out.json (--json takes no PATH: use --json-file PATH)" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--labels", "l.jsonl", "--run", "r.jsonl", "--json=out.json"],
        ["compare", "a.json", "b.json", "--json=out.json"],
        ["labels", "stats", "--json=out.json"],
        ["serve", "--json=out.json"],
    ],
    ids=lambda argv: argv[0],
)
def test_the_old_json_equals_path_form_gets_the_same_hint(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "argument --json: ignored explicit argument 'out.json'" in err
    assert err.rstrip().endswith("(--json takes no PATH: use --json-file PATH)")


# --- exit codes ---------------------------------------------------------------------------------
def test_one_code_per_cause() -> None:
    assert (EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT, EXIT_UNAVAILABLE) == (0, 1, 2, 3)
    table = (ROOT / "docs" / "cli.md").read_text()
    for code, cause in ((0, "success"), (1, "failed"), (2, "usage"), (3, "unreachable")):
        assert f"| {code} |" in table and cause in table, code


def test_an_unreachable_redis_exits_unavailable_in_labels(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["labels", "stats", "--redis", "redis://127.0.0.1:1/0"]) == EXIT_UNAVAILABLE
    assert "cannot use Redis" in capsys.readouterr().err


def test_judge_commands_share_the_unavailable_code() -> None:
    from ragtrace.cli import answer, calibrate, detect_eval, groundedness

    for module in (answer, calibrate, detect_eval, groundedness):
        assert module.EXIT_JUDGE_UNAVAILABLE == EXIT_UNAVAILABLE, module.__name__


# --- the service package missing ----------------------------------------------------------------
@pytest.mark.parametrize("command", SERVICE_COMMANDS)
def test_a_missing_service_package_names_what_to_install(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its entry points stay registered, but importing the package fails.
    for name in [m for m in sys.modules if m.startswith("ragtrace_consumers")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ragtrace_consumers", None)
    assert main([command, "--some-option", "x"]) == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"ragtrace {command}: error: the {command!r} command comes with the ragtrace-consumers "
        "package, which is not installed: pip install ragtrace-consumers (from a source "
        "checkout: pip install ./consumers)\n"
    )
    assert "invalid choice" not in err


def test_help_lists_the_missing_commands_as_not_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [m for m in sys.modules if m.startswith("ragtrace_consumers")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ragtrace_consumers", None)
    text = build_parser().format_help()
    assert "(not installed: pip install ragtrace-consumers)" in text


# --- '-' for stdin on every file argument ---------------------------------------------------------
# Every file argument a command reads, by command and option (or positional destination).
FILE_ARGUMENTS = {
    ("eval",): ("labels", "run"),
    ("compare",): ("a", "b"),
    ("groundedness",): ("input",),
    ("calibrate",): ("labels",),
    ("detect-eval",): ("input",),
    ("labels", "load"): ("file",),
    ("inspect",): ("path",),
    ("consume",): ("config",),
    ("serve",): ("config", "labels"),
}


@pytest.mark.parametrize("path", sorted(FILE_ARGUMENTS), ids=" ".join)
def test_file_arguments_share_the_stdin_type(path: tuple[str, ...]) -> None:
    from ragtrace.cli._arg_types import input_file

    parser = dict(ALL)[path]
    by_dest = {a.dest: a for a in parser._actions}
    for dest in FILE_ARGUMENTS[path]:
        assert by_dest[dest].type is input_file, (path, dest)
        assert "'-': stdin" in (by_dest[dest].help or ""), (path, dest)


class _TextStdin:
    """A stand-in for sys.stdin with the bytes of ``path`` behind ``.buffer``."""

    def __init__(self, path: Path) -> None:
        import io

        self.buffer = io.BytesIO(path.read_bytes())


def test_eval_and_compare_read_stdin(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    examples = ROOT / "examples"
    monkeypatch.setattr(sys, "stdin", _TextStdin(examples / "labels.jsonl"))
    run = str(examples / "run_vector.jsonl")
    assert main(["eval", "--labels", "-", "--run", run, "--k", "3", "--json"]) == EXIT_OK
    from_stdin = json.loads(capsys.readouterr().out)
    labels = str(examples / "labels.jsonl")
    assert main(["eval", "--labels", labels, "--run", run, "--k", "3", "--json"]) == EXIT_OK
    assert from_stdin == json.loads(capsys.readouterr().out)

    (tmp_path / "a.json").write_text(json.dumps(from_stdin))
    monkeypatch.setattr(sys, "stdin", _TextStdin(tmp_path / "a.json"))
    assert main(["compare", "-", str(tmp_path / "a.json"), "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["paired"] > 0


def test_stdin_is_read_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "-", "-"]) == EXIT_BAD_INPUT
    assert "cannot both be '-'" in capsys.readouterr().err
    assert main(["eval", "--labels", "-", "--run", "-"]) == EXIT_BAD_INPUT
    assert "cannot both be '-'" in capsys.readouterr().err


def test_an_empty_file_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["compare", "", "b.json"])
    assert info.value.code == EXIT_BAD_INPUT
    assert "an empty file name (use '-' for stdin)" in capsys.readouterr().err


_CONFIG = "scoring:\n  k: 3\n"


def _config_on_stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """``text`` is the configuration on stdin, with no configuration from the environment."""
    monkeypatch.delenv("RAGTRACE_CONSUMER_CONFIG", raising=False)
    monkeypatch.delenv("RAGTRACE_SCORING_K", raising=False)
    monkeypatch.setattr(sys, "stdin", _Stdin(text))


@pytest.mark.parametrize("command", ["consume", "serve"])
def test_a_configuration_reads_stdin_named_stdin(
    command: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _config_on_stdin(monkeypatch, _CONFIG)
    assert main([command, "--print-config", "--config", "-"]) == EXIT_OK
    from_stdin = capsys.readouterr().out
    assert "  k: 3  # <stdin>\n" in from_stdin
    (tmp_path / "c.yaml").write_text(_CONFIG)
    assert main([command, "--print-config", "--config", str(tmp_path / "c.yaml")]) == EXIT_OK
    from_file = capsys.readouterr().out
    assert from_stdin == from_file.replace(str(tmp_path / "c.yaml"), "<stdin>")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("scoring:\n  k: 0\n", "<stdin>: scoring.k: must be > 0, got 0"),
        ("scorng:\n  k: 3\n", "<stdin>: scorng: unknown section"),
        ("scoring: [k\n", "<stdin>: not valid YAML"),
        ("- k\n", "<stdin>: expected a mapping of sections at the top level"),
    ],
    ids=["value", "section", "yaml", "layout"],
)
@pytest.mark.parametrize("command", ["consume", "serve"])
def test_a_bad_configuration_on_stdin_is_named_stdin(
    command: str,
    text: str,
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _config_on_stdin(monkeypatch, text)
    assert main([command, "--print-config", "--config", "-"]) == EXIT_BAD_INPUT
    assert f"ragtrace {command}: error: {message}" in capsys.readouterr().err


def test_serve_reads_its_labels_from_stdin(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A bad line on stdin is refused naming where it is: the labels were read from stdin.
    monkeypatch.setattr(sys, "stdin", _Stdin('{"qid": "q1"}\n'))
    argv = ["serve", "--labels", "-", "--state", str(tmp_path / "s.sqlite3"), "--port", "0"]
    assert main([*argv, "--no-metrics", "--no-web"]) == EXIT_BAD_INPUT
    assert "ragtrace serve: error: -, line 1, field 'question': missing" in (
        capsys.readouterr().err
    )


def test_serve_reads_stdin_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--config", "-", "--labels", "-"]) == EXIT_BAD_INPUT
    assert "cannot both be '-'" in capsys.readouterr().err
