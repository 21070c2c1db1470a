"""``ragtrace labels``: the labelled questions the consumers score recall against, kept in Redis.

``load FILE`` replaces the set atomically (consumers see the old set or the new one, never a
mix) and prints its version; ``list`` and ``stats`` show what is loaded; ``clear`` removes it;
``export`` writes the set in use (Redis's, or with ``--state`` the one an embedded evaluator
keeps, questions labelled in its web view included) as a labels file. The file format is the
one ``ragtrace eval`` reads. ``export-audit --state`` writes the audit labels a person gave in
the web view as claim labels, the file ``ragtrace calibrate --labels`` reads.
"""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragtrace.cli._arg_types import input_file
from ragtrace.cli._command import Subparsers, add_command
from ragtrace.cli.exit_codes import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, EXIT_UNAVAILABLE
from ragtrace.cli.output import (
    JSON_STDOUT,
    add_json_option,
    emit_json,
    error,
    format_table,
    json_to_stdout,
)
from ragtrace.masking import mask_url

__all__ = ["ACTIONS", "register", "resolve_redis"]

_log = logging.getLogger(__name__)
_COMMAND = "labels"
# Same names as the consumer configuration's redis.url / redis.key_prefix overrides.
ENV_REDIS_URL = "RAGTRACE_REDIS_URL"
ENV_REDIS_PREFIX = "RAGTRACE_REDIS_KEY_PREFIX"
ENV_REDIS_PASSWORD = "RAGTRACE_REDIS_PASSWORD"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_PREFIX = "ragtrace"
ACTIONS = ("load", "list", "stats", "export", "export-audit", "clear")
"""The actions of ``ragtrace labels``, in the order its help lists them."""

_DESCRIPTION = """\
Manage the labelled questions the Kafka consumers match live traces to (by ragtrace.question.id,
else by normalised question text) and score recall@k against.

Labels file (JSON Lines): {"qid": "q1", "question": "...", "gold": ["chunk-id", ...]}
Redis: --redis URL, else $RAGTRACE_REDIS_URL, else redis://127.0.0.1:6379/0; keys start with
--prefix, else $RAGTRACE_REDIS_KEY_PREFIX, else "ragtrace" (use the consumers' prefix).
The password: $RAGTRACE_REDIS_PASSWORD (kept out of the URL; it overrides one inside it).
"""


def _prefix_ok(prefix: str) -> bool:
    return bool(prefix) and not any(c.isspace() for c in prefix)


def resolve_redis(
    url: str | None, prefix: str | None, env: dict[str, str] | None = None
) -> tuple[str, str]:
    """(url, prefix): explicit > environment > default. A bad explicit prefix raises ValueError;
    a bad environment prefix warns and falls back to the default."""
    environ = os.environ if env is None else env
    if prefix is not None and not _prefix_ok(prefix):
        raise ValueError(f"--prefix must be non-empty without spaces, got {prefix!r}")
    if prefix is None:
        prefix = environ.get(ENV_REDIS_PREFIX) or DEFAULT_PREFIX
        if not _prefix_ok(prefix):
            _log.warning(
                "ignoring %s=%r (empty or has spaces); using %r",
                ENV_REDIS_PREFIX,
                prefix,
                DEFAULT_PREFIX,
            )
            prefix = DEFAULT_PREFIX
    return url or environ.get(ENV_REDIS_URL) or DEFAULT_REDIS_URL, prefix


def register(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "labels",
        help=f"the labelled questions in Redis or serve's state: {', '.join(ACTIONS)}",
        description=_DESCRIPTION,
    )
    commands = parser.add_subparsers(dest="labels_command", metavar="ACTION", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--redis",
            metavar="URL",
            default=None,
            help=f"Redis URL (default: ${ENV_REDIS_URL} or {DEFAULT_REDIS_URL})",
        )
        p.add_argument(
            "--prefix",
            default=None,
            help=f"key prefix (default: ${ENV_REDIS_PREFIX} or {DEFAULT_PREFIX!r})",
        )

    load = commands.add_parser("load", help="replace the label set with a labels file")
    load.add_argument("file", metavar="LABELS.jsonl", type=input_file, help="'-': stdin")
    add_json_option(load, "what was loaded (one object)")
    common(load)
    load.set_defaults(func=_load)

    lister = commands.add_parser("list", help="print the loaded questions")
    lister.add_argument("--limit", type=int, default=None, help="print at most N questions")
    add_json_option(
        lister,
        "the questions",
        stdout_help="the questions as JSON Lines (the labels file format) on stdout instead of "
        "the table",
        file_help="the same JSON Lines to PATH; '-': stdout, as --json",
    )
    common(lister)
    lister.set_defaults(func=_list)

    stats = commands.add_parser("stats", help="version and counts of the loaded set")
    add_json_option(stats, "the counts (one object)")
    common(stats)
    stats.set_defaults(func=_stats)

    export = commands.add_parser(
        "export",
        help="write the label set in use as a labels file (JSON Lines), web-view labels included",
    )
    export.add_argument(
        "--state",
        metavar="PATH",
        default=None,
        help="read the set an embedded evaluator (ragtrace serve) keeps in this state file "
        "instead of Redis's",
    )
    export.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        default=None,
        help="write to PATH (replaced atomically; default and '-': stdout)",
    )
    common(export)
    export.set_defaults(func=_export)

    audit = commands.add_parser(
        "export-audit",
        help="write the web view's audit labels as claim labels for ragtrace calibrate",
    )
    audit.add_argument(
        "--state",
        metavar="PATH",
        required=True,
        help="the state file of the embedded evaluator (ragtrace serve) that holds them",
    )
    audit.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        default=None,
        help="write to PATH (replaced atomically; default and '-': stdout)",
    )
    audit.set_defaults(func=_export_audit)

    clear = commands.add_parser("clear", help="remove the label set (traces then go unlabelled)")
    add_json_option(clear, "what was cleared (one object)")
    common(clear)
    clear.set_defaults(func=_clear)


def _store(args: argparse.Namespace) -> Any:
    from ragtrace_consumers.stores.redis import connect
    from ragtrace_consumers.stores.redis_state import RedisLabelStore

    url, prefix = resolve_redis(args.redis, args.prefix)
    password = os.environ.get(ENV_REDIS_PASSWORD) or None  # never on the command line
    return RedisLabelStore(connect(url, password), prefix=prefix), url


def _run(args: argparse.Namespace, action: Any) -> int:
    import redis

    try:
        store, url = _store(args)
    except ValueError as exc:
        error(_COMMAND, str(exc))
        return EXIT_BAD_INPUT
    except redis.RedisError as exc:  # connecting asks the server whether it is a cluster
        url, _ = resolve_redis(args.redis, args.prefix)
        error(_COMMAND, f"cannot use Redis at {mask_url(url)}: {exc}")
        return EXIT_UNAVAILABLE
    try:
        return int(action(store))
    except redis.RedisError as exc:
        error(_COMMAND, f"cannot use Redis at {mask_url(url)}: {exc}")
        return EXIT_UNAVAILABLE


def _load(args: argparse.Namespace) -> int:
    from ragtrace.evaluation.labels import InputFileError, load_labels

    try:
        questions = load_labels(args.file)
    except InputFileError as exc:
        error(_COMMAND, str(exc))
        return EXIT_BAD_INPUT

    def action(store: Any) -> int:
        previous = store.version()
        try:
            source = "<stdin>" if args.file == "-" else os.path.basename(args.file)
            version = store.load(questions, source=source)
        except ValueError as exc:
            error(_COMMAND, f"{args.file}: {exc}")
            return EXIT_BAD_INPUT
        s = store.stats()
        before = (
            f"replacing {previous}"
            if previous and previous != version
            else ("unchanged" if previous == version else "no previous set")
        )
        doc = {
            **s.to_dict(),
            "file": args.file,
            "previous_version": previous or None,
            "with_reference_answer": sum(q.reference_answer is not None for q in questions),
        }
        if args.json is not None and not emit_json(_COMMAND, args.json, doc):
            return EXIT_FAILURE
        if not json_to_stdout(args.json):
            print(
                f"loaded {s.questions} labelled questions from {args.file} as version {version} "
                f"({before}); {s.answerable} answerable, {s.ambiguous} ambiguous by text"
            )
        return EXIT_OK

    return _run(args, action)


def _list(args: argparse.Namespace) -> int:
    from ragtrace_consumers.model import question_to_json, question_version

    if args.limit is not None and args.limit < 0:
        error(_COMMAND, f"--limit must be >= 0, got {args.limit}")
        return EXIT_BAD_INPUT

    def action(store: Any) -> int:
        questions = store.questions()
        shown = questions if args.limit is None else questions[: args.limit]
        if args.json == JSON_STDOUT:
            for q in shown:
                print(question_to_json(q))
            return EXIT_OK
        if args.json is not None:
            tmp = Path(f"{args.json}.tmp")
            tmp.write_text("".join(question_to_json(q) + "\n" for q in shown), encoding="utf-8")
            tmp.replace(args.json)
        if not questions:
            print("no label set loaded")
            return EXIT_OK
        # The version the web view's label form names as the one a save replaces.
        rows = [(q.qid, len(q.gold), question_version(q), _clip(q.question)) for q in shown]
        print(format_table(("qid", "gold", "version", "question"), rows, align="lrll"))
        if len(shown) < len(questions):
            print(f"({len(questions) - len(shown)} more; version {store.version()})")
        return EXIT_OK

    return _run(args, action)


def _write_labels(questions: list[Any], output: str | None, version: str) -> int:
    from ragtrace_consumers.model import question_to_json

    text = "".join(question_to_json(q) + "\n" for q in sorted(questions, key=lambda q: q.qid))
    if output is None or output == "-":
        print(text, end="")
        return EXIT_OK
    try:
        tmp = Path(f"{output}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(output)
    except OSError as exc:
        error(_COMMAND, f"cannot write {output}: {exc}")
        return EXIT_FAILURE
    print(
        f"wrote {len(questions)} labelled questions (version {version}) to {output}",
        file=sys.stderr,
    )
    return EXIT_OK


def _export(args: argparse.Namespace) -> int:
    if args.state is not None:
        from ragtrace_consumers.stores.sqlite_labels import current_label_set
        from ragtrace_consumers.stores.sqlite_state import SqliteState

        if not Path(args.state).is_file():
            error(_COMMAND, f"--state {args.state}: no such state file")
            return EXIT_BAD_INPUT
        try:
            with SqliteState(args.state) as state:
                found = current_label_set(state)
        except sqlite3.Error as exc:
            error(_COMMAND, f"--state {args.state}: not a readable state file: {exc}")
            return EXIT_BAD_INPUT
        if found is None:
            error(_COMMAND, f"--state {args.state}: no label set was ever loaded there")
            return EXIT_FAILURE
        return _write_labels(found[1], args.output, found[0])

    def action(store: Any) -> int:
        questions = store.questions()
        if not questions:
            error(_COMMAND, "no label set loaded")
            return EXIT_FAILURE
        return _write_labels(questions, args.output, store.version())

    return _run(args, action)


def _export_audit(args: argparse.Namespace) -> int:
    import json

    from ragtrace_consumers.stores.audit_labels import calibration_record
    from ragtrace_consumers.stores.sqlite_state import SqliteState

    if not Path(args.state).is_file():
        error(_COMMAND, f"--state {args.state}: no such state file")
        return EXIT_BAD_INPUT
    try:
        with SqliteState(args.state) as state:
            audits = [a for a in state.audits.all() if a.auditor == "web"]
            records = [calibration_record(a, state.results.detail(a.trace_id)) for a in audits]
    except sqlite3.Error as exc:
        error(_COMMAND, f"--state {args.state}: not a readable state file: {exc}")
        return EXIT_BAD_INPUT
    kept = [r for r in records if r]
    if not kept:
        error(_COMMAND, f"--state {args.state}: no audit label with its passages to export")
        return EXIT_FAILURE
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept)
    if args.output is None or args.output == "-":
        print(text, end="")
    else:
        try:
            tmp = Path(f"{args.output}.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(args.output)
        except OSError as exc:
            error(_COMMAND, f"cannot write {args.output}: {exc}")
            return EXIT_FAILURE
    print(
        f"wrote {len(kept)} audited units as claim labels"
        + (
            f" ({len(records) - len(kept)} without passage texts left out)"
            if len(kept) < len(records)
            else ""
        ),
        file=sys.stderr,
    )
    return EXIT_OK


def _clip(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _stats(args: argparse.Namespace) -> int:
    def action(store: Any) -> int:
        s = store.stats()
        if args.json is not None:
            if not emit_json(_COMMAND, args.json, s.to_dict()):
                return EXIT_FAILURE
            if args.json == JSON_STDOUT:
                return EXIT_OK
        if s.version is None:
            print("no label set loaded")
            return EXIT_OK
        loaded = (
            "unknown"
            if s.loaded_at is None
            else datetime.fromtimestamp(s.loaded_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        )
        print(
            f"version     {s.version}\n"
            f"questions   {s.questions}\n"
            f"answerable  {s.answerable}\n"
            f"ambiguous   {s.ambiguous}\n"
            f"loaded at   {loaded}\n"
            f"source      {s.source or 'unknown'}"
        )
        return EXIT_OK

    return _run(args, action)


def _clear(args: argparse.Namespace) -> int:
    def action(store: Any) -> int:
        previous = store.version()
        store.clear()
        doc = {"cleared_version": previous or None}
        if args.json is not None and not emit_json(_COMMAND, args.json, doc):
            return EXIT_FAILURE
        if not json_to_stdout(args.json):
            print(f"cleared label set {previous}" if previous else "no label set loaded")
        return EXIT_OK

    return _run(args, action)
