"""The web view's routes through its one seam (WebView.handle): pages, 4xx answers, escaping,
the login session, CSRF and Origin checks, and labels saved into the state file's label sets."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from urllib.parse import urlencode

import pytest

from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.intake.web_seam import WebRequest, WebResponse
from ragtrace_consumers.model import question_version
from ragtrace_consumers.stores.sqlite_labels import SqliteLabelStore, current_label_set
from ragtrace_consumers.stores.sqlite_state import SqliteState
from ragtrace_consumers.webview import Sessions, WebView, WebViewOptions
from ragtrace_consumers.webview.highlight import find_quote, marked
from tests.unit.consumers.webview.rows import HOSTILE, detail, result

HOST = "127.0.0.1:4318"
TRACE = f"{7:032x}"
TOKEN = "s3cret-token"


@pytest.fixture
def state() -> SqliteState:
    s = SqliteState(":memory:")
    s.results.put(
        result(
            7, "generation_failed", groundedness=0.5, answer="Alpha. " + HOSTILE, question_id="q-7"
        ),
        detail(),
    )
    s.results.put(result(8, "unlabelled", recall=None, k=None, query="Is there a dark mode?"))
    return s


@pytest.fixture
def labels(state: SqliteState) -> SqliteLabelStore:
    store = SqliteLabelStore(state)
    store.start([LabelledQuestion("q-7", "question 7?", frozenset({"c-gold"}))], source="file")
    return store


def _view(state: SqliteState, labels: SqliteLabelStore, **kw: object) -> WebView:
    return WebView(state, labels, **kw)  # type: ignore[arg-type]


def get(view: WebView, target: str, headers: Mapping[str, str] | None = None) -> WebResponse:
    path, _, query = target.partition("?")
    response = view.handle(WebRequest("GET", path, query, {"host": HOST, **(headers or {})}))
    assert response is not None
    return response


def post(
    view: WebView, path: str, form: Mapping[str, object], headers: Mapping[str, str] | None = None
) -> WebResponse:
    body = urlencode(form, doseq=True).encode()
    h = {"host": HOST, "content-type": "application/x-www-form-urlencoded", **(headers or {})}
    response = view.handle(WebRequest("POST", path, "", h, body))
    assert response is not None
    return response


def text(r: WebResponse) -> str:
    return r.body.decode()


def csrf_of(page: WebResponse) -> str:
    found = re.search(r'name=csrf value="([^"]*)"', text(page))
    assert found is not None
    return found.group(1)


def test_every_page_answers_and_the_trace_page_shows_why(
    state: SqliteState, labels: SqliteLabelStore
) -> None:
    view = _view(
        state,
        labels,
        options=WebViewOptions(
            trace_url_template="https://jaeger.example/trace/{trace_id}?span={span_id}"
        ),
    )
    assert get(view, "/").status == 303
    for target in ("/ui/", "/ui/traces", "/ui/questions", f"/ui/traces/{TRACE}"):
        r = get(view, target)
        assert r.status == 200, (target, text(r))
        assert r.content_type == "text/html; charset=utf-8"
        assert dict(r.headers)["X-Frame-Options"] == "DENY"
    css = get(view, "/ui/static/ragtrace.css")
    assert css.status == 200 and b".unit.unsupported" in css.body
    page = text(get(view, f"/ui/traces/{TRACE}"))
    assert "<script>" not in page and "&lt;script&gt;" in page
    ranks = re.findall(r'<li class="([^"]+)" data-chunk="([^"]+)"', page)
    assert ranks == [
        ("chunk", "c-1"),
        ("chunk", "c-2"),
        ("chunk", "c-3"),
        ("chunk gold below-cut", "c-gold"),
    ]
    assert page.index("c-3") < page.index("class=cutoff") < page.index('data-chunk="c-gold"')
    assert "Gold never retrieved: <code>c-missing</code>" in page
    assert "Gold retrieved below the cut-off (k=3) at rank 4" in page
    assert '<div class="unit supported" id="unit-1">' in page
    assert '<div class="unit unsupported" id="unit-2">' in page
    assert "downgraded by check <code>unrelated</code>" in page
    assert '<mark class="ev-ok">Alpha passage about exports</mark>' in page
    assert '<mark class="ev-bad">Beta passage</mark>' in page
    assert "https://jaeger.example/trace/" + TRACE + "?span=" + "1" * 16 in page
    assert "1" * 16 in page and "2" * 16 in page and "3" * 16 in page
    assert "prompt sha256" in page and "a" * 64 in page


@pytest.mark.parametrize(
    ("target", "status", "message"),
    [
        ("/ui/traces?cell=nope", 400, "cell must be one of"),
        ("/ui/traces/not-a-trace", 400, "not a trace ID"),
        (f"/ui/traces/{9:032x}", 404, "no scored trace"),
        ("/ui/traces?page=-1", 400, "page must be within"),
        ("/ui/?debug=1", 400, "unknown parameter"),
        ("/ui/nowhere", 404, "no page at /ui/nowhere"),
        ("/ui/traces?" + "a=1&" * 60, 400, "bad query string"),
    ],
)
def test_bad_parameters_get_4xx_pages(
    state: SqliteState, labels: SqliteLabelStore, target: str, status: int, message: str
) -> None:
    r = get(_view(state, labels), target)
    assert r.status == status
    assert message in text(r)
    assert "Traceback" not in text(r)


def test_other_paths_are_left_to_the_receiver(state: SqliteState, labels: SqliteLabelStore) -> None:
    assert _view(state, labels).handle(WebRequest("GET", "/metrics")) is None


def test_a_label_saved_from_a_trace_is_a_new_versioned_set(
    state: SqliteState, labels: SqliteLabelStore
) -> None:
    seen: list[tuple[str, str]] = []
    view = _view(state, labels, on_label=lambda q, v: seen.append((q.qid, v)))
    before = labels.version()
    trace = f"{8:032x}"
    form = {
        "csrf": csrf_of(get(view, f"/ui/traces/{trace}")),
        "trace_id": trace,
        "question": "Is there a dark mode?",
        "qid": "",
        "gold": ["c-1"],
        "extra_gold": "c-9, c-10\nc-11",
    }
    r = post(view, "/ui/labels", form, {"origin": f"http://{HOST}"})
    assert r.status == 303, text(r)
    location = dict(r.headers)["Location"]
    assert location.startswith(f"/ui/traces/{trace}?saved=")
    q = labels.by_question_sha256(
        LabelledQuestion("x", "is there a  DARK mode?", frozenset()).question_sha256
    )
    assert q is not None and q.gold == {"c-1", "c-9", "c-10", "c-11"}
    assert q.qid.startswith("web-")
    assert labels.version() != before and seen == [(q.qid, labels.version())]
    assert current_label_set(state) == (labels.version(), labels.questions())
    saved = get(view, location.split("#")[0])
    assert "Saved. Label set version" in text(saved)
    # A restart lays the web-view label over the file again (the same set: no new row).
    sets = state.execute("SELECT COUNT(*) FROM label_sets")
    assert sets == [(2,)]
    again = SqliteLabelStore(state)
    again.start([LabelledQuestion("q-7", "question 7?", frozenset({"c-gold"}))], source="file")
    assert again.by_id(q.qid) == q and again.version() == labels.version()
    assert state.execute("SELECT COUNT(*) FROM label_sets") == sets


@pytest.mark.parametrize(
    ("change", "headers", "status", "message"),
    [
        ({"csrf": "forged"}, {}, 403, "stale form token"),
        ({}, {"origin": "https://evil.example"}, 403, "cross-site request refused"),
        ({}, {"origin": "null"}, 403, "opaque origin"),
        ({"gold": [], "extra_gold": ""}, {}, 400, "at least one chunk ID"),
        ({"qid": "bad qid!"}, {}, 400, "qid may hold"),
        ({"trace_id": "zz"}, {}, 400, "not a trace ID"),
        ({"question": ""}, {}, 400, "question must be"),
    ],
)
def test_bad_or_cross_site_label_posts_are_refused(
    state: SqliteState,
    labels: SqliteLabelStore,
    change: dict[str, object],
    headers: dict[str, str],
    status: int,
    message: str,
) -> None:
    view = _view(state, labels)
    before = labels.version()
    form: dict[str, object] = {
        "csrf": csrf_of(get(view, f"/ui/traces/{TRACE}")),
        "trace_id": TRACE,
        "question": "question 7?",
        "gold": ["c-1"],
    }
    form.update(change)
    r = post(view, "/ui/labels", form, headers)
    assert (r.status, message in text(r)) == (status, True), text(r)
    assert labels.version() == before


def test_with_a_token_browsers_sign_in_once_and_scripts_send_it(
    state: SqliteState, labels: SqliteLabelStore
) -> None:
    view = _view(state, labels, sessions=Sessions(TOKEN))
    refused = get(view, "/ui/traces")
    assert refused.status == 401 and "Access token" in text(refused)
    assert get(view, "/ui/static/ragtrace.css").status == 200
    assert get(view, "/ui/", {"authorization": f"Bearer {TOKEN}"}).status == 200
    assert get(view, "/ui/", {"authorization": "Bearer wrong-token"}).status == 401
    assert post(view, "/ui/login", {"token": "wrong-token"}).status == 401
    assert (
        post(view, "/ui/login", {"token": TOKEN}, {"origin": "https://evil.example"}).status == 403
    )
    ok = post(view, "/ui/login", {"token": TOKEN}, {"origin": f"http://{HOST}"})
    assert ok.status == 303
    cookie = dict(ok.headers)["Set-Cookie"]
    for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
        assert attribute in cookie
    session = {"cookie": cookie.split(";", 1)[0]}
    page = get(view, f"/ui/traces/{TRACE}", session)
    assert page.status == 200
    form = {"csrf": csrf_of(page), "trace_id": TRACE, "question": "question 7?", "gold": "c-1"}
    assert post(view, "/ui/labels", form).status == 401  # no session: no write
    assert post(view, "/ui/labels", form, session).status == 303
    other = post(view, "/ui/login", {"token": TOKEN})
    other_session = {"cookie": dict(other.headers)["Set-Cookie"].split(";", 1)[0]}
    assert post(view, "/ui/labels", form, other_session).status == 403  # not its CSRF token


def test_a_trace_url_template_must_name_the_trace() -> None:
    with pytest.raises(ValueError, match=r"\{trace_id\}"):
        WebViewOptions(trace_url_template="https://jaeger.example/search")
    with pytest.raises(ValueError, match="only"):
        WebViewOptions(trace_url_template="https://x.example/{trace_id}/{org}")


def test_quotes_are_found_across_whitespace_and_case_and_escaped() -> None:
    passage = "Exports are LIMITED to one\nrunning job; <b>bold</b>"
    assert find_quote(passage, "limited to one running") == (12, 34)
    assert find_quote(passage, "not there") is None
    html = marked(passage, [("limited to one running", "ev-ok"), ("<b>bold", "ev-bad")])
    assert html == (
        'Exports are <mark class="ev-ok">LIMITED to one\nrunning</mark> job; '
        '<mark class="ev-bad">&lt;b&gt;bold</mark>&lt;/b&gt;'
    )


def test_the_list_searches_and_a_unique_id_prefix_opens_the_trace(
    state: SqliteState, labels: SqliteLabelStore
) -> None:
    view = _view(state, labels)
    found = text(get(view, "/ui/traces?q=DARK+mode"))
    assert "Is there a dark mode?" in found and "question 7?" not in found
    assert 'name=q value="DARK mode"' in found
    assert 'href="/ui/traces.csv?q=DARK+mode"' in found
    assert 'href="/ui/traces.json?q=DARK+mode"' in found
    jump = get(view, "/ui/traces?q=" + TRACE[:-2].upper() + "07")
    assert (jump.status, dict(jump.headers)["Location"]) == (303, f"/ui/traces/{TRACE}")
    short = get(view, "/ui/traces/00")
    assert short.status == 400 and "more than one trace" in text(short)
    state.results.put(result(1, "fine", trace_id="f00d" + "1" * 28, model="gpt-4o"))
    prefix = get(view, "/ui/traces/f00d")
    assert (prefix.status, dict(prefix.headers)["Location"]) == (303, "/ui/traces/f00d" + "1" * 28)
    listed = text(get(view, "/ui/traces?model=gpt-4o"))
    assert "<td class=model>gpt-4o</td>" in listed and '<option value="gpt-4o" selected>' in listed
    assert TRACE not in listed


def test_exports_carry_the_filters_and_the_pages_auth(
    state: SqliteState, labels: SqliteLabelStore
) -> None:
    state.results.put(result(3, "fine", query="@SUM(1+1)*cmd|' /C calc'!A0"))
    view = _view(state, labels, sessions=Sessions(TOKEN))
    assert get(view, "/ui/traces.csv").status == 401
    bearer = {"authorization": f"Bearer {TOKEN}"}
    r = get(view, "/ui/traces.csv?cell=fine", bearer)
    assert r.status == 200 and r.content_type == "text/csv; charset=utf-8"
    headers = dict(r.headers)
    assert headers["Content-Disposition"] == 'attachment; filename="ragtrace-traces.csv"'
    assert (headers["X-Ragtrace-Rows"], headers["X-Ragtrace-Truncated"]) == ("1", "false")
    assert "\"'@SUM(1+1)*cmd|' /C calc'!A0\"" in text(r)
    j = get(view, "/ui/traces.json?service=svc-b&page=3", bearer)
    assert j.status == 200 and j.content_type == "application/json"
    body = json.loads(j.body)
    assert body["filters"] == {"service": "svc-b"}
    assert [row["trace_id"] for row in body["rows"]] == [f"{8:032x}"]
    bad = get(view, "/ui/traces.json?model=", bearer)
    assert bad.status == 200  # empty means any
    refused = get(view, "/ui/traces.csv?sort=worst", bearer)
    assert refused.status == 400 and "unknown parameter &#x27;sort&#x27;" in text(refused)


def test_the_overview_filters_by_service_model_and_range(
    state: SqliteState, labels: SqliteLabelStore
) -> None:
    view = _view(state, labels)
    page = text(get(view, "/ui/?service=svc-a"))
    assert '<option value="svc-a" selected>' in page
    assert 'data-figure="mean groundedness"><span class=count>0.50</span>' in page
    assert 'data-figure="share not grounded"><span class=count>100%</span>' in page
    assert 'href="/ui/traces?cell=fine&amp;service=svc-a"' in page
    assert "choose a time range to compare" in page
    since = "2027-01-15T07:00"
    ranged = text(get(view, f"/ui/?range=custom&from={since}&to=2027-01-15T09:00"))
    assert "against the previous 2 h" in ranged
    assert 'href="/ui/traces?cell=fine&amp;since=1799996400&amp;until=1800003600"' in ranged
    for target, message in (
        ("/ui/?range=forever", "range must be one of"),
        ("/ui/?range=24h&from=2027-01-01", "from/to are for range=custom"),
        ("/ui/?to=2027-01-01", "to: give from as well"),
    ):
        r = get(view, target)
        assert r.status == 400 and message in text(r), target


# --- the label form: the current gold set, its version, re-scoring -------------------------------

HERE = {"origin": f"http://{HOST}"}


def _hidden(page: WebResponse, name: str) -> str:
    found = re.search(rf'name={name} value="([^"]*)"', text(page))
    assert found is not None, name
    return found.group(1)


def _ticked(page: WebResponse) -> list[str]:
    return re.findall(r'name=gold value="([^"]*)" checked', text(page))


def _form(page: WebResponse, **change: object) -> dict[str, object]:
    form: dict[str, object] = {
        "csrf": csrf_of(page),
        "trace_id": _hidden(page, "trace_id"),
        "label_qid": _hidden(page, "label_qid"),
        "replaces": _hidden(page, "replaces"),
        "question": "question 7?",
        "qid": "q-7",
        "gold": _ticked(page),
    }
    form.update(change)
    return form


def test_a_labelled_trace_shows_its_gold_set_and_the_version_it_replaces(
    state: SqliteState, labels: SqliteLabelStore
) -> None:
    labels.add(LabelledQuestion("q-7", "question 7?", frozenset({"c-gold", "c-far"})))
    page = get(_view(state, labels), f"/ui/traces/{TRACE}")
    assert _ticked(page) == ["c-gold", "c-far"]  # retrieved in rank order, then not retrieved
    assert re.search(
        r"<div class=gold-kept>Gold this trace did not retrieve: <label[^>]*>"
        r'<input type=checkbox name=gold value="c-far" checked>',
        text(page),
    )
    assert re.findall(r'name=gold value="([^"]*)"', text(page)) == [
        "c-1",
        "c-2",
        "c-3",
        "c-gold",
        "c-far",
    ]
    q = labels.by_id("q-7")
    assert _hidden(page, "replaces") == question_version(q) != ""
    assert _hidden(page, "label_qid") == "q-7"
    assert f"Saving replaces label version <code>{question_version(q)}</code>" in text(page)
    assert "saved from a trace" in text(page)
    assert "labelled <code>q-7</code> (2 gold chunks)" in text(page)
    assert "name=unanswerable value=1 checked" not in text(page)
    unlabelled = get(_view(state, labels), f"/ui/traces/{8:032x}")
    assert "<span class=label-state>unlabelled</span>" in text(unlabelled)
    assert _hidden(unlabelled, "replaces") == "" and _ticked(unlabelled) == []
    assert "This question has no label yet" in text(unlabelled)


def test_a_save_removes_and_adds_chunks_and_rescores_on_request(
    state: SqliteState, labels: SqliteLabelStore
) -> None:
    calls: list[tuple[str, LabelledQuestion, bool]] = []

    def rescore(trace_id: str, q: LabelledQuestion, others: bool) -> list[str]:
        calls.append((trace_id, q, others))
        return [trace_id, "f" * 32]

    view = _view(state, labels, rescore=rescore)
    page = get(view, f"/ui/traces/{TRACE}")
    assert _ticked(page) == ["c-gold"]
    form = _form(page, gold=["c-2"], extra_gold="c-new", rescore_others="1")
    r = post(view, "/ui/labels", form, HERE)
    assert r.status == 303, text(r)
    location = dict(r.headers)["Location"]
    assert location.endswith("&rescored=1#label")
    saved = LabelledQuestion("q-7", "question 7?", frozenset({"c-2", "c-new"}))
    assert labels.by_id("q-7") == saved
    assert calls == [(TRACE, saved, True)]
    after = get(view, location.split("#")[0])
    assert "this trace was re-scored with it (its judgement kept), and 1 other recent trace" in (
        text(after)
    )
    assert _ticked(after) == ["c-2", "c-new"]
    assert _hidden(after, "replaces") == question_version(saved)
    assert "labelled <code>q-7</code> (2 gold chunks)" in text(after)
    # Without the box ticked only this trace is re-scored; a failing re-score loses no label.
    post(view, "/ui/labels", _form(after, gold=["c-2"]), HERE)
    assert calls[-1][2] is False

    def broken(trace_id: str, q: LabelledQuestion, others: bool) -> list[str]:
        raise RuntimeError("state file gone")

    view = _view(state, labels, rescore=broken)
    page = get(view, f"/ui/traces/{TRACE}")
    r = post(view, "/ui/labels", _form(page, gold=["c-3"]), HERE)
    assert r.status == 303 and "rescored" not in dict(r.headers)["Location"]
    assert labels.by_id("q-7") == LabelledQuestion("q-7", "question 7?", frozenset({"c-3"}))


def test_a_stale_form_is_refused_and_the_label_kept(
    state: SqliteState, labels: SqliteLabelStore
) -> None:
    view = _view(state, labels)
    mine = get(view, f"/ui/traces/{TRACE}")
    theirs = get(view, f"/ui/traces/{TRACE}")
    assert post(view, "/ui/labels", _form(theirs, gold=["c-1"]), HERE).status == 303
    version, kept = labels.version(), labels.by_id("q-7")
    r = post(view, "/ui/labels", _form(mine, gold=["c-gold", "c-3"]), HERE)
    assert r.status == 409
    assert "Not saved: the label of question q-7 changed since it was read" in text(r)
    assert "Open the trace page again" in text(r)
    assert (labels.version(), labels.by_id("q-7")) == (version, kept)
    # A qid changed in the form to one labelled already is not written over either.
    labels.add(LabelledQuestion("q-8", "question 8?", frozenset({"c-8"})))
    fresh = get(view, f"/ui/traces/{TRACE}")
    r = post(view, "/ui/labels", _form(fresh, qid="q-8"), HERE)
    assert r.status == 409 and "question q-8" in text(r)
    assert labels.by_id("q-8") == LabelledQuestion("q-8", "question 8?", frozenset({"c-8"}))


def test_a_question_marked_unanswerable_is_saved_with_an_empty_gold_set(
    state: SqliteState, labels: SqliteLabelStore
) -> None:
    view = _view(state, labels)
    page = get(view, f"/ui/traces/{TRACE}")
    r = post(view, "/ui/labels", _form(page, unanswerable="1"), HERE)  # c-gold still ticked
    assert r.status == 303, text(r)
    q = labels.by_id("q-7")
    assert q is not None and q.gold == frozenset() and not q.answerable
    after = get(view, dict(r.headers)["Location"].split("#")[0])
    assert "labelled unanswerable <code>q-7</code> (empty gold set: recall n/a)" in text(after)
    assert "name=unanswerable value=1 checked" in text(after)
    assert _ticked(after) == [] and "gold: unanswerable" in text(after)
    # Unticking everything without marking it unanswerable says what to do.
    r = post(view, "/ui/labels", _form(after, gold=[]), HERE)
    assert r.status == 400 and "or mark it unanswerable" in text(r)


def test_the_overview_states_the_offline_judges_held_out_figures_for_its_version_only(
    state: SqliteState, labels: SqliteLabelStore
) -> None:
    from ragtrace.evaluation.judges import JudgeInfo, LexicalJudge
    from ragtrace.evaluation.judges.lexical.measured import load_held_out

    record = load_held_out()
    assert record is not None
    lexical = LexicalJudge().info
    page = text(get(_view(state, labels, options=WebViewOptions(judge=lexical)), "/ui/"))
    assert "Measured against people on" in page
    assert f"AUROC {record.auroc:.3f}" in page and f"F1 {record.f1:.1f}" in page
    assert f"flagging every answer: {record.flag_all_f1:.1f}" in page
    other = JudgeInfo("lexical", None, "0" * 64)  # another version of the offline judge
    for judge in (other, JudgeInfo("anthropic", "claude", lexical.prompt_sha256)):
        page = text(get(_view(state, labels, options=WebViewOptions(judge=judge)), "/ui/"))
        assert "Measured against people" not in page
