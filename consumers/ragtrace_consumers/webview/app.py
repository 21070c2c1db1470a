"""The web view: routes of the embedded evaluator's pages, behind one :meth:`WebView.handle`.

It is the :class:`~ragtrace_consumers.intake.web_seam.WebHandler` the OTLP receiver consults, so
the pages live on ``ragtrace serve``'s own address. Routes:

* ``GET /`` → ``/ui/``; ``GET /ui/`` the overview (``service``, ``model``, ``range``, ``from``,
  ``to``); ``GET /ui/traces`` the list (``q``, ``cell``, ``grounded``, ``service``, ``model``,
  ``judge``, ``since``, ``until``, ``page``; a search naming one trace by ID prefix redirects to
  it) and ``GET /ui/traces.csv`` / ``.json`` its export under the same filters;
  ``GET /ui/traces/<trace id>`` a trace (any unique prefix redirects to the full ID);
  ``GET /ui/questions`` questions seen most often without a label;
  ``GET /ui/audit`` the judged traces marked to audit and not audited yet;
  ``GET /ui/static/ragtrace.css``;
* ``POST /ui/labels`` saves a labelled question from a trace (CSRF token and same origin): it
  names the label version it replaces and is refused (409) when that changed since; the trace is
  then re-scored (and the other recent traces asking it, when ticked) through ``rescore``;
* ``POST /ui/audit`` agrees or disagrees with one unit verdict of the judge (same rules as the
  label form), saved as an audit label (:mod:`~ragtrace_consumers.stores.audit_labels`);
* ``GET``/``POST /ui/login`` when a token is set (:mod:`~ragtrace_consumers.webview.sessions`).

A bad parameter is a 4xx page naming it; nothing raises into the server.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs, quote

from ragtrace.evaluation.agreement import agreement
from ragtrace.evaluation.calibration import CalibrationStamp, calibration_warning, load_stamp
from ragtrace.evaluation.judges import JudgeInfo
from ragtrace.evaluation.judges.lexical.measured import held_out_for
from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace.normalize import question_sha256
from ragtrace_consumers.errors import LabelConflict
from ragtrace_consumers.intake.web_seam import WebRequest, WebResponse
from ragtrace_consumers.model import LabelSet
from ragtrace_consumers.stores.audit_labels import AuditLabel, marked_for_audit
from ragtrace_consumers.stores.sqlite_state import SqliteState
from ragtrace_consumers.webview.audit_form import (
    judged_unit,
    render_agreement,
    render_audit_link,
    render_pending,
)
from ragtrace_consumers.webview.errors import BadRequest
from ragtrace_consumers.webview.export import to_csv, to_json
from ragtrace_consumers.webview.html import page
from ragtrace_consumers.webview.label_form import CurrentLabel
from ragtrace_consumers.webview.pages import (
    render_error,
    render_list,
    render_login,
    render_overview,
    render_questions,
)
from ragtrace_consumers.webview.queries import (
    EXPORT_MAX,
    Overview,
    OverviewFilter,
    TraceFilter,
    check_trace_id,
    choices,
    export_rows,
    jump_target,
    list_traces,
    overview,
    resolve_trace_id,
    unlabelled_questions,
)
from ragtrace_consumers.webview.sessions import Sessions
from ragtrace_consumers.webview.trace_page import TraceView, render_trace
from ragtrace_consumers.webview.window_rates import window_rates

__all__ = ["OVERVIEW_TTL_S", "Rescore", "WebView", "WebViewOptions"]

Rescore = Callable[[str, LabelledQuestion, bool], Sequence[str]]
"""Re-scores the trace (and, with True, the other recent traces asking the question) after its
label was saved; returns the IDs of the traces re-scored (the runtime's
:class:`~ragtrace_consumers.runtime.rescoring.Rescoring`)."""

OVERVIEW_TTL_S = 5.0
"""While traces keep arriving, the overview is at most this many seconds behind."""

_log = logging.getLogger(__name__)
_HTML = "text/html; charset=utf-8"
_HEADERS = (
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
    (
        "Content-Security-Policy",
        "default-src 'none'; style-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'",
    ),
)
_QID = re.compile(r"^[A-Za-z0-9._:/-]{1,200}$")
_MAX_GOLD = 100
_OVERVIEWS_KEPT = 32
_EXPORTS = {
    "/ui/traces.csv": ("text/csv; charset=utf-8", "csv"),
    "/ui/traces.json": ("application/json", "json"),
}


@dataclass(frozen=True)
class WebViewOptions:
    """``trace_url_template``: a link to the trace in another backend, ``{trace_id}`` (and
    optionally ``{span_id}``) filled in; ``judge``: the judge in use, shown on the overview
    with the last calibration stamp ``ragtrace calibrate`` saved (``calibration_path``; None:
    its default place); ``groundedness_threshold``: below it a judged answer counts as not
    grounded in the overview's headline (``scoring.groundedness_threshold``);
    ``audit_share``: the share of judged traces marked to audit."""

    trace_url_template: str | None = None
    judge: JudgeInfo | None = None
    calibration_path: Path | None = None
    groundedness_threshold: float = 0.8
    audit_share: float = 0.02
    """The share of judged traces marked to audit (``audit.share``)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.audit_share <= 1.0:
            raise ValueError(f"audit.share must be within 0..1, got {self.audit_share!r}")
        t = self.trace_url_template
        if t is not None:
            if not t.startswith(("http://", "https://")) or "{trace_id}" not in t:
                raise ValueError(
                    "web.trace_url_template must be an http(s) URL containing {trace_id}, "
                    f"got {t!r}"
                )
            try:
                t.format(trace_id="0", span_id="0")
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(
                    f"web.trace_url_template: only {{trace_id}} and {{span_id}} may be "
                    f"filled in ({exc})"
                ) from None


def _css() -> bytes:
    return (
        resources.files("ragtrace_consumers.webview").joinpath("static/ragtrace.css").read_bytes()
    )


class WebView:
    """Serves the pages from ``state``; writes labels to ``labels`` (None: read-only), then
    calls ``on_label`` and re-scores through ``rescore`` (None: the next trace asking the
    question is the first scored with it)."""

    def __init__(
        self,
        state: SqliteState,
        labels: LabelSet | None,
        *,
        options: WebViewOptions | None = None,
        sessions: Sessions | None = None,
        on_label: Callable[[LabelledQuestion, str], None] | None = None,
        rescore: Rescore | None = None,
    ) -> None:
        self._state = state
        self._labels = labels
        self._options = options or WebViewOptions()
        self.sessions = sessions or Sessions()
        self._on_label = on_label
        self._rescore = rescore
        self._css = _css()
        self._lock = threading.Lock()
        self._cached: dict[OverviewFilter, tuple[object, float, Overview]] = {}

    # --- the seam ------------------------------------------------------------------------------
    def handle(self, request: WebRequest) -> WebResponse | None:
        path = request.path
        if path == "/" and request.method in ("GET", "HEAD"):
            return self._redirect("/ui/")
        if path != "/ui" and not path.startswith("/ui/"):
            return None
        try:
            return self._route(request)
        except BadRequest as exc:
            return self._page(exc.status, "Bad request", render_error(str(exc)))

    def authorised(self, headers: Mapping[str, str]) -> bool:
        """The gate every page but the login form and stylesheet passes (see Sessions)."""
        return self.sessions.authorised(headers)

    def _route(self, req: WebRequest) -> WebResponse:
        path = req.path.rstrip("/") or "/"
        if path == "/ui/static/ragtrace.css":
            return WebResponse(
                200,
                "text/css; charset=utf-8",
                self._css,
                (("Cache-Control", "max-age=3600"), ("X-Content-Type-Options", "nosniff")),
            )
        if path == "/ui/login":
            return self._login(req)
        if not self.authorised(req.headers):
            if req.method == "POST":
                return self._page(401, "Sign in", render_login("sign in first"))
            return self._page(401, "Sign in", render_login(None))
        params = self._params(req.query)
        if req.method == "POST":
            if path == "/ui/labels":
                return self._save_label(req)
            if path == "/ui/audit":
                return self._save_audit(req)
            raise BadRequest(f"no form posts to {path}", 404)
        if path == "/ui":
            o = self._overview(OverviewFilter.parse(params))
            stamp = load_stamp(self._options.calibration_path)
            body = render_overview(
                o,
                *self._judge_lines(),
                services=choices(self._state, "service"),
                models=choices(self._state, "model"),
                rates=window_rates(o, self._options.judge, stamp),
                measured=self._measured(),
            )
            body += render_audit_link(len(self._state.audits.pending(self._options.audit_share)))
            body += self._agreement(stamp)
            return self._page(200, "Overview", body, active="/ui/")
        if path == "/ui/traces":
            f = TraceFilter.parse(params)
            target = jump_target(self._state, f)
            if target is not None:
                return self._redirect(f"/ui/traces/{target}")
            body = render_list(
                list_traces(self._state, f),
                f,
                choices(self._state, "service"),
                choices(self._state, "judge"),
                choices(self._state, "model"),
            )
            return self._page(200, "Scored traces", body, active="/ui/traces")
        if path in _EXPORTS:
            return self._export(TraceFilter.parse(params), *_EXPORTS[path])
        if path.startswith("/ui/traces/"):
            given = self._only(params, {"saved", "rescored"})
            return self._trace(req, path[len("/ui/traces/") :], given)
        if path == "/ui/questions":
            self._only(params, set())
            labels = self._labels
            body = render_questions(
                unlabelled_questions(self._state),
                len(labels.questions()) if labels is not None else 0,
                labels.version() if labels is not None else "",
            )
            return self._page(200, "Questions to label", body, active="/ui/questions")
        if path == "/ui/audit":
            self._only(params, set())
            share = self._options.audit_share
            body = render_pending(self._state.audits.pending(share), share)
            return self._page(200, "Traces to audit", body, active="/ui/audit")
        raise BadRequest(f"no page at {path}", 404)

    # --- pages -----------------------------------------------------------------------------------
    def _trace(self, req: WebRequest, raw_id: str, given: Mapping[str, str]) -> WebResponse:
        trace_id = resolve_trace_id(self._state, raw_id)
        if trace_id != raw_id:  # a prefix (or upper case): the page lives at the full ID
            return self._redirect(f"/ui/traces/{trace_id}")
        result = self._state.results.get(trace_id)
        if result is None:
            raise BadRequest(f"no scored trace {trace_id} in this evaluator's state", 404)
        detail = self._state.results.detail(trace_id)
        label = self._current_label(result.question_id, result.query, detail)
        q = label.question if label is not None else None
        backend = None
        template = self._options.trace_url_template
        if template is not None:
            spans = detail.get("span_ids") if detail else None
            span = spans.get("target") if isinstance(spans, Mapping) else None
            backend = template.format(trace_id=trace_id, span_id=quote(str(span or "")))
        message = self._saved_message(given)
        audits = {a.unit: a for a in self._state.audits.for_trace(trace_id) if a.auditor == "web"}
        title, body = render_trace(
            TraceView(
                result,
                detail,
                q.gold if q is not None else None,
                backend,
                self.sessions.csrf(req.headers),
                message,
                label,
                audits,
                marked_for_audit(trace_id, self._options.audit_share),
            )
        )
        return self._page(200, title, body)

    def _export(self, f: TraceFilter, ctype: str, extension: str) -> WebResponse:
        rows = export_rows(self._state, f)
        truncated = len(rows) > EXPORT_MAX
        rows = rows[:EXPORT_MAX]
        body = to_csv(rows) if extension == "csv" else to_json(rows, f.query(page=None), truncated)
        headers = (
            *_HEADERS,
            ("Content-Disposition", f'attachment; filename="ragtrace-traces.{extension}"'),
            ("X-Ragtrace-Rows", str(len(rows))),
            ("X-Ragtrace-Truncated", "true" if truncated else "false"),
        )
        return WebResponse(200, ctype, body, headers)

    def _current_label(
        self, qid: str | None, query: str | None, detail: Mapping[str, object] | None
    ) -> CurrentLabel | None:
        """The label the trace's question has now: by its question ID, else by its query's
        normalised text (as scoring matches it). None: no label store."""
        labels = self._labels
        if labels is None:
            return None
        found = labels.by_id(qid) if qid else None
        if found is None:
            digest = detail.get("query_sha256") if detail is not None else None
            if not isinstance(digest, str) and query:
                digest = question_sha256(query)
            found = labels.by_question_sha256(digest) if isinstance(digest, str) else None
        at = labels.labelled_at(found.qid) if found is not None else None
        return CurrentLabel(found, at, labels.version())

    @staticmethod
    def _saved_message(given: Mapping[str, str]) -> str | None:
        saved = given.get("saved")
        if not saved:
            return None
        rescored = given.get("rescored")
        if rescored is None:
            then = "the next trace asking this question is scored with recall."
        elif rescored.isdigit() and len(rescored) < 7:
            others = int(rescored)
            then = "this trace was re-scored with it (its judgement kept)" + (
                f", and {others} other recent trace{'' if others == 1 else 's'} asking it."
                if others
                else "."
            )
        else:
            raise BadRequest("rescored must be a count")
        return f"Saved. Label set version {saved[:80]}: {then}"

    def _save_label(self, req: WebRequest) -> WebResponse:
        form = self._form(req)
        why = self.sessions.may_write(req.headers, self._field(form, "csrf", required=False))
        if why is not None:
            raise BadRequest(why, 403)
        labels = self._labels
        if labels is None:
            raise BadRequest("this evaluator has no writable label store", 409)
        trace_id = check_trace_id(self._field(form, "trace_id"))
        question = self._field(form, "question").strip()
        if not question or len(question) > 4000:
            raise BadRequest("question must be 1..4000 characters")
        gold = [g for g in form.get("gold", []) if g.strip()]
        extra = self._field(form, "extra_gold", required=False)
        gold += [g for g in re.split(r"[\s,]+", extra) if g]
        if self._field(form, "unanswerable", required=False):
            gold = []  # an empty gold set, whatever is ticked
        elif not gold:
            raise BadRequest(
                "mark or paste at least one chunk ID that answers the question, or mark it "
                "unanswerable"
            )
        if len(gold) > _MAX_GOLD or any(len(g) > 500 for g in gold):
            raise BadRequest(f"at most {_MAX_GOLD} chunk IDs of up to 500 characters each")
        qid = self._field(form, "qid", required=False).strip()
        if not qid:
            qid = (
                "web-"
                + hashlib.sha256(" ".join(question.lower().split()).encode()).hexdigest()[:12]
            )
        if not _QID.match(qid):
            raise BadRequest(f"qid may hold letters, digits and . _ : / - only, got {qid[:80]!r}")
        if self._state.results.get(trace_id) is None:
            raise BadRequest(f"no scored trace {trace_id}", 404)
        # The version the form replaces is that of the label it showed; a qid changed in the
        # form names a question that must not be labelled yet. No field (a script): likewise.
        shown = self._field(form, "label_qid", required=False)
        replaces = self._field(form, "replaces", required=False) if qid == shown else ""
        labelled = LabelledQuestion(qid=qid, question=question, gold=frozenset(gold))
        try:
            version = labels.add(labelled, trace_id=trace_id, replaces=replaces)
        except LabelConflict as exc:
            raise BadRequest(
                f"Not saved: {exc}. Open the trace page again to see the label as it is now, "
                "then make your change there.",
                409,
            ) from None
        if self._on_label is not None:
            self._on_label(labelled, version)
        _log.info("web view: labelled %s from trace %s (set %s)", qid, trace_id, version)
        target = f"/ui/traces/{trace_id}?saved={quote(version)}"
        if self._rescore is not None:
            others = bool(self._field(form, "rescore_others", required=False))
            try:
                done = self._rescore(trace_id, labelled, others)
            except Exception:  # noqa: BLE001 - the label is saved; the next trace uses it
                _log.exception("web view: re-scoring trace %s after its label failed", trace_id)
                done = []
            if trace_id in done:
                target += f"&rescored={len(done) - 1}"
        return self._redirect(target + "#label")

    def _save_audit(self, req: WebRequest) -> WebResponse:
        form = self._form(req)
        why = self.sessions.may_write(req.headers, self._field(form, "csrf", required=False))
        if why is not None:
            raise BadRequest(why, 403)
        trace_id = check_trace_id(self._field(form, "trace_id"))
        uid = self._field(form, "unit")
        answer = self._field(form, "answer")
        if answer not in ("agree", "disagree"):
            raise BadRequest(f"answer must be agree or disagree, got {answer[:40]!r}")
        result = self._state.results.get(trace_id)
        if result is None:
            raise BadRequest(f"no scored trace {trace_id}", 404)
        unit, judge = judged_unit(self._state.results.detail(trace_id), uid)
        if unit is None:
            raise BadRequest(f"trace {trace_id} has no judged unit {uid[:40]!r}", 404)
        supported = bool(unit.get("supported"))
        self._state.audits.add(
            AuditLabel(
                trace_id=trace_id,
                unit=uid,
                unit_text=str(unit.get("text") or ""),
                judge_supported=supported,
                human_supported=supported if answer == "agree" else not supported,
                judge_name=str(judge.get("name") or result.judge_name or ""),
                judge_model=str(judge.get("model") or result.judge_model or ""),
                prompt_sha256=str(judge.get("prompt_sha256") or ""),
                at=time.time(),
                sampled=marked_for_audit(trace_id, self._options.audit_share),
            )
        )
        _log.info("web view: audited unit %s of trace %s: %s", uid, trace_id, answer)
        return self._redirect(f"/ui/traces/{trace_id}#unit-{quote(uid)}")

    def _login(self, req: WebRequest) -> WebResponse:
        if not self.sessions.login_required:
            return self._redirect("/ui/")
        if req.method != "POST":
            return self._page(200, "Sign in", render_login(None))
        origin = req.headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1] != req.headers.get("host"):
            raise BadRequest("cross-site sign-in refused", 403)
        cookie = self.sessions.login(self._field(self._form(req), "token", required=False))
        if cookie is None:
            return self._page(401, "Sign in", render_login("wrong token"))
        return WebResponse(303, _HTML, b"", (("Location", "/ui/"), ("Set-Cookie", cookie)))

    def _overview(self, f: OverviewFilter) -> Overview:
        """The overview under ``f``, recomputed at most every :data:`OVERVIEW_TTL_S` while
        traces arrive or its time range ends now (it aggregates the table; the list and trace
        pages are always current)."""
        # A trace skipped changes the overview as a trace scored does.
        newest = (self._state.results.newest_seq(), len(self._state.skipped))
        sliding = f.range is not None or (f.since is not None and f.until is None)
        with self._lock:
            cached = self._cached.get(f)
            if cached is not None and (
                (cached[0] == newest and not sliding)
                or time.monotonic() - cached[1] < OVERVIEW_TTL_S
            ):
                return cached[2]
        fresh = overview(self._state, f, grounded_below=self._options.groundedness_threshold)
        with self._lock:
            if len(self._cached) >= _OVERVIEWS_KEPT:
                self._cached.pop(next(iter(self._cached)))
            self._cached[f] = (newest, time.monotonic(), fresh)
        return fresh

    def _agreement(self, stamp: CalibrationStamp | None) -> str:
        """The audit panel of the judge in use ("" when it is not known)."""
        judge = self._options.judge
        if judge is None:
            return ""
        audit = agreement(self._state.audits.confusion(judge.name, judge.prompt_sha256))
        calibrated = (
            agreement(stamp.confusion)
            if stamp is not None and stamp.confusion is not None and stamp.matches(judge)
            else None
        )
        return render_agreement(audit, calibrated)

    def _measured(self) -> str | None:
        judge = self._options.judge
        record = None if judge is None else held_out_for(judge)
        return None if record is None else record.describe()

    def _judge_lines(self) -> tuple[str, str | None]:
        judge = self._options.judge
        if judge is None:
            return "not known", None
        name = judge.name + (f" · model {judge.model}" if judge.model else "")
        name += f" · prompt {judge.prompt_sha256[:12]}"
        stamp = load_stamp(self._options.calibration_path)
        if stamp is None:
            return name, None
        text = (
            f"{stamp.calibrated_at}: {stamp.judge.name}"
            + (f" ({stamp.judge.model})" if stamp.judge.model else "")
            + f" on {stamp.claims} claims, agreement "
            + ("n/a" if stamp.agreement is None else f"{stamp.agreement:.2f}")
            + ", kappa "
            + ("n/a" if stamp.kappa is None else f"{stamp.kappa:.2f}")
        )
        warning = calibration_warning(judge, self._options.calibration_path)
        return name, text + (f" — {warning}" if warning else "")

    # --- helpers ---------------------------------------------------------------------------------
    @staticmethod
    def _params(query: str) -> dict[str, list[str]]:
        try:
            return parse_qs(query, keep_blank_values=True, strict_parsing=False, max_num_fields=50)
        except ValueError as exc:
            raise BadRequest(f"bad query string: {exc}") from None

    @staticmethod
    def _only(params: Mapping[str, list[str]], allowed: set[str]) -> dict[str, str]:
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise BadRequest(f"unknown parameter {unknown[0]!r}")
        return {k: v[0] for k, v in params.items() if v}

    @staticmethod
    def _form(req: WebRequest) -> dict[str, list[str]]:
        ctype = req.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            raise BadRequest(f"forms must be application/x-www-form-urlencoded, got {ctype!r}", 415)
        try:
            return parse_qs(req.body.decode("utf-8"), keep_blank_values=True, max_num_fields=200)
        except (UnicodeDecodeError, ValueError) as exc:
            raise BadRequest(f"unreadable form: {exc}") from None

    @staticmethod
    def _field(form: Mapping[str, list[str]], name: str, *, required: bool = True) -> str:
        values = form.get(name) or []
        if len(values) > 1:
            raise BadRequest(f"form field {name} given {len(values)} times")
        if not values and required:
            raise BadRequest(f"form field {name} is missing")
        return values[0] if values else ""

    @staticmethod
    def _redirect(location: str) -> WebResponse:
        return WebResponse(303, _HTML, b"", (("Location", location),))

    @staticmethod
    def _page(status: int, title: str, body: str, *, active: str = "") -> WebResponse:
        # A 401 names its scheme (RFC 9110); Bearer only, so a browser shows the sign-in form
        # instead of its own password prompt.
        headers = _HEADERS + (
            (("WWW-Authenticate", 'Bearer realm="ragtrace"'),) if status == 401 else ()
        )
        return WebResponse(status, _HTML, page(title, body, active=active), headers)
