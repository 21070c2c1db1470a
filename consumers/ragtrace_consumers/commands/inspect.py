"""``ragtrace inspect``: which reader took each span of a trace, and what it extracted.

The first thing to run when a score looks wrong. Input is an OTLP trace export request as a
file — protobuf (``.pb``/``.bin``) or OTLP/JSON (one request per file, or one per line, as
the collector's file exporter writes) — or ``-`` for standard input. For every trace it prints
each span with its reader (or ``unrecognised``, with the attribute keys it carried) and the
extracted query, chunks (``hashed`` marks a content-hash ID), context, answer or the reason
there is none, then the RAG view that scoring uses, where its context came from, and — for a
trace that would not be fully scored — why (the skip reasons of the skipped-by-reason metric,
at full sampling rates; whether a label matches is not known here; a trace no reader makes a
RAG step of is ``unrecognised``, with the instrumentation scopes it showed).

It reads with exactly the readers ``serve`` and ``consume`` read with: those of the consumer
configuration (``--config``, else ``$RAGTRACE_CONSUMER_CONFIG``, and the ``RAGTRACE_*``
variables), its ``mapping`` section included.

``--trace ID`` takes any unique prefix of a trace ID. With ``--state FILE --trace ID`` instead of
PATH it reads one trace from ``serve``'s state file: its spans while the file holds them (being
assembled or scored, or given up); once scored, its spans are gone and it shows what the file
kept (the scored result: query, answer, ranked chunks, gold IDs, scores, unsupported claims).
A file that is not an OTLP trace request (a labels file, say) is refused (exit 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragtrace.cli._arg_types import input_file, stdin_used_twice
from ragtrace.cli.output import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    EXIT_OK,
    add_json_option,
    emit_json,
    error,
    json_to_stdout,
)

__all__ = ["explain", "register", "run"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="show which reader took each span of a trace and what it extracted",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "path",
        metavar="PATH",
        nargs="?",
        type=input_file,
        default=None,
        help="OTLP trace request: protobuf, JSON or JSON Lines ('-': stdin); or --state",
    )
    p.add_argument(
        "--trace", metavar="ID", default=None, help="only this trace (any unique prefix of its ID)"
    )
    source.add_argument(
        "--state",
        metavar="FILE",
        type=input_file,
        default=None,
        help="read the --trace from serve's state file instead of PATH",
    )
    p.add_argument(
        "--config",
        metavar="PATH",
        type=input_file,
        default=None,
        help="consumer configuration file whose readers (its mapping section) to read with, "
        "as serve and consume do (default: $RAGTRACE_CONSUMER_CONFIG)",
    )
    add_json_option(p, "the readings of every trace (one document)")
    p.set_defaults(func=run, usage_error=p.error)


_REQUEST_KEYS = frozenset({"resourceSpans", "resource_spans"})


def _otlp_json(document: bytes, where: str = "") -> list[Any]:
    """The spans of one OTLP/JSON request; ``ValueError`` saying what it is not when the JSON is
    an object without ``resourceSpans`` (a labels file, a span dump)."""
    from ragtrace_consumers.intake.decode import decode_json_request

    try:
        parsed = json.loads(document)
    except ValueError:
        parsed = None  # the decoder says what is wrong with it
    if isinstance(parsed, dict) and not _REQUEST_KEYS & parsed.keys():
        keys = ", ".join(sorted(parsed)[:6]) or "none"
        what = (
            " (it looks like a labels file: ragtrace eval and ragtrace labels load read those)"
            if {"question", "gold"} <= parsed.keys()
            else ""
        )
        raise ValueError(
            f"{where}not an OTLP trace request: a JSON object without resourceSpans "
            f"(its keys: {keys}){what}"
        )
    spans: list[Any] = decode_json_request(document)
    return spans


def _spans(raw: bytes) -> list[Any]:
    from ragtrace_consumers.errors import DecodeError
    from ragtrace_consumers.intake.decode import decode_request

    text = raw.lstrip()
    if text[:1] in (b"{", b"["):
        lines = [(n, line) for n, line in enumerate(raw.splitlines(), 1) if line.strip()]
        if len(lines) <= 1:
            return _otlp_json(raw)
        try:
            return _otlp_json(raw)
        except DecodeError:  # JSON Lines: one request per line
            out: list[Any] = []
            for n, line in lines:
                out += _otlp_json(line, f"line {n}: ")
            return out
    spans: list[Any] = decode_request(raw)
    return spans


def _one_trace(spans: list[Any], prefix: str) -> list[Any]:
    """The spans of the one trace whose ID starts with ``prefix``; ``ValueError`` when several
    do (naming them). No match: no spans."""
    wanted = prefix.lower()
    ids = sorted({s.trace_id for s in spans if s.trace_id.startswith(wanted)})
    if len(ids) > 1:
        raise ValueError(f"--trace {prefix} is ambiguous: it starts {', '.join(ids)}")
    return [s for s in spans if ids and s.trace_id == ids[0]]


def explain(spans: list[Any], readers: Any = None) -> list[dict[str, object]]:
    """Per trace: every span's reading and the resulting RAG view, as plain data."""
    from ragtrace_consumers.readers import default_readers, read_trace, to_rag_trace
    from ragtrace_consumers.scoring.sampling import Sampler, SamplerConfig
    from ragtrace_consumers.scoring.skips import scopes_seen, skip_detail, unscored_reason

    sampler = Sampler(SamplerConfig())
    readers = readers or default_readers()

    by_trace: dict[str, list[Any]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    out: list[dict[str, object]] = []
    for trace_id, group in by_trace.items():
        group.sort(key=lambda s: (s.start_ns, s.span_id))
        rows = []
        for span, reading in read_trace(group, readers):
            row: dict[str, object] = {
                "span_id": span.span_id,
                "name": span.name,
                "scope": span.scope,
            }
            if span.scope_version:
                row["scope_version"] = span.scope_version
            if reading is None:
                row["reader"] = "unrecognised"
                row["attribute_keys"] = sorted(span.attributes)
            else:
                row.update(reading.summary())
            rows.append(row)
        rag = to_rag_trace(group, readers)
        view: dict[str, object] | None = None
        skips: dict[str, str] = {}
        if rag is None:
            unscored = unscored_reason(group, readers)
            skips["trace"] = f"{unscored}: {skip_detail(None, unscored, scopes_seen(group))}"
        else:
            decision = sampler.decide(rag)
            for step, reason in (
                ("recall", decision.recall_reason),
                ("judge", decision.judge_reason),
            ):
                if reason is not None:
                    skips[step] = f"{reason}: {skip_detail(None, reason)}"
            view = {
                "query": rag.query,
                "question_id": rag.question_id,
                "retrieved": [c.id for c in rag.retrieved],
                "context": [c.id for c in rag.context],
                "answer": rag.answer,
                "recall_na_reason": rag.recall_na_reason,
                "answer_na_reason": rag.answer_na_reason,
                "retrieval_span_id": rag.retrieval_span_id,
                "generation_span_id": rag.generation_span_id,
                "context_source": rag.context_source,
                "context_sources": list(rag.context_sources),
                "steps": [s.summary() for s in rag.steps],
            }
        out.append({"trace_id": trace_id, "spans": rows, "rag": view, "skipped": skips})
    return out


def _text(trace: dict[str, Any]) -> str:
    lines = [f"trace {trace['trace_id']}"]
    for row in trace["spans"]:
        scope = " ".join(str(row[k]) for k in ("scope", "scope_version") if k in row)
        head = f"  {row['span_id']}  {row['name']}  [{scope}]  -> {row['reader']}"
        if row["reader"] == "unrecognised":
            lines.append(head + f"  keys: {', '.join(row['attribute_keys']) or 'none'}")
            continue
        lines.append(head + f" {row['role']}")
        for key in ("query", "model", "response_id", "answer", "answer_problem", "continues"):
            if key in row:
                lines.append(f"      {key}: {row[key]!r}")
        for key in ("chunks", "context"):
            for c in row.get(key, ()):
                flag = " (hashed: no ID field or metadata ID)" if c.get("hashed") else ""
                lines.append(f"      {key[:-1] if key == 'chunks' else key}: {c['id']}{flag}")
    rag = trace["rag"]
    if rag is None:
        lines.append("  RAG view: none (no retrieval and no generation recognised)")
    else:
        lines.append("  RAG view: " + json.dumps(rag, ensure_ascii=False))
    for step, why in trace.get("skipped", {}).items():
        lines.append(f"  not scored ({step}): {why}")
    return "\n".join(lines)


def _usage(args: argparse.Namespace) -> str | None:
    """Why the arguments cannot run (None: they can); argparse has checked PATH xor --state."""
    if args.state is not None and args.trace is None:
        return "--state needs --trace ID (any unique prefix of the trace ID)"
    if stdin_used_twice(args.config, args.path) or stdin_used_twice(args.config, args.state):
        return "--config and the input cannot both be '-' (stdin can be read once)"
    return None


def _read(args: argparse.Namespace, readers: Any) -> list[dict[str, object]]:
    """The readings asked for; ``OSError``/``ValueError`` for an input that cannot be read."""
    from ragtrace_consumers.commands.inspect_stored import read_stored

    if args.state is not None:
        return [read_stored(args.state, args.trace, lambda spans: explain(spans, readers))]
    raw = sys.stdin.buffer.read() if args.path == "-" else Path(args.path).read_bytes()
    spans = _spans(raw)
    return explain(spans if args.trace is None else _one_trace(spans, args.trace), readers)


def _full_text(trace: dict[str, Any]) -> str:
    from ragtrace_consumers.commands.inspect_stored import stored_text

    if "spans_kept" not in trace:
        return _text(trace)
    head = _text(trace).splitlines() if trace["spans_kept"] else [f"trace {trace['trace_id']}"]
    return "\n".join(head + stored_text(trace))


def run(args: argparse.Namespace) -> int:
    from ragtrace_consumers.config import ConfigError, load_config

    problem = _usage(args)
    if problem is not None:
        args.usage_error(problem)  # argparse's error: the usage line, then exit 2
        return EXIT_BAD_INPUT
    try:
        readers = load_config(args.config).mapping.readers()
    except (ConfigError, OSError, ValueError) as exc:
        error("inspect", str(exc))
        return EXIT_BAD_INPUT
    source = args.state if args.state is not None else args.path
    try:
        traces = _read(args, readers)
    except OSError as exc:
        error("inspect", f"{source}: cannot read: {exc.strerror or exc}")
        return EXIT_BAD_INPUT
    except ValueError as exc:  # DecodeError, a JSON object of another kind, an ambiguous ID
        error("inspect", str(exc) if args.state is not None else f"{source}: {exc}")
        return EXIT_BAD_INPUT
    if args.json is not None and not emit_json("inspect", args.json, traces):
        return EXIT_FAILURE
    if not json_to_stdout(args.json):
        print("\n\n".join(_full_text(t) for t in traces) or "no spans")
    return EXIT_OK
