"""The Redis stores of the shared state other than traces (keys: :mod:`.redis`): labelled
questions, the judge result cache, the judge budget and the judge batches; the write-back
idempotency marks are :mod:`.redis_marks`' (re-exported here). One Lua script or MULTI transaction per multi-key change, on the keys of one
key space (:mod:`.redis_keys`: one hash slot on a Redis Cluster).

Same semantics as their :mod:`ragtrace_consumers.stores.memory` counterparts (one behavioural
suite tests both).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from redis.typing import EncodableT, FieldT

from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.errors import LabelConflict
from ragtrace_consumers.model import (
    LabelIndex,
    LabelStats,
    SessionTurn,
    question_from_json,
    question_to_json,
    question_version,
    recent_turns,
)
from ragtrace_consumers.stores.defaults import BUDGET_WINDOW_S
from ragtrace_consumers.stores.redis import DEFAULT_PREFIX, _check_prefix, _ms, _text
from ragtrace_consumers.stores.redis_keys import Client, key_space, mget
from ragtrace_consumers.stores.redis_marks import RedisIdempotencyStore
from ragtrace_consumers.stores.session_turns import decode_turn, encode_turn

__all__ = [
    "RedisSessionEvidence",
    "RedisBatchStore",
    "RedisIdempotencyStore",
    "RedisJudgeBudget",
    "RedisJudgeResultCache",
    "RedisLabelStore",
]

_OLD_LABELS_TTL_S = 60  # readers that fetched the old version a moment ago can still finish
_ADD_ATTEMPTS = 50  # a save that lost the race to another set's swap is read and tried again


_LABEL_SWAP = """
local p, new, ttl, expected = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local cur = p .. ':labels:current'
local old = redis.call('GET', cur)
local parts = {':q', ':sha', ':meta'}
if expected ~= '*' and (old or '') ~= expected then
  if new ~= old then
    for _, s in ipairs(parts) do redis.call('EXPIRE', p .. ':labels:' .. new .. s, ttl) end
  end
  return 0
end
redis.call('SET', cur, new)
for _, s in ipairs(parts) do redis.call('PERSIST', p .. ':labels:' .. new .. s) end
if old and old ~= new then
  for _, s in ipairs(parts) do redis.call('EXPIRE', p .. ':labels:' .. old .. s, ttl) end
end
if ARGV[5] ~= '' then redis.call('HSET', p .. ':labels:labelled_at', ARGV[5], ARGV[6]) end
return 1
"""

_LABEL_GET = """
local p, kind, key = ARGV[1], ARGV[2], ARGV[3]
local v = redis.call('GET', p .. ':labels:current')
if not v then return false end
local base = p .. ':labels:' .. v
if kind == 'sha' then
  key = redis.call('HGET', base .. ':sha', key)
  if not key then return false end
end
return redis.call('HGET', base .. ':q', key)
"""

_LABEL_ALL = """
local p = ARGV[1]
local v = redis.call('GET', p .. ':labels:current')
if not v then return {false, {}, {}} end
local base = p .. ':labels:' .. v
return {v, redis.call('HVALS', base .. ':q'), redis.call('HGETALL', base .. ':meta')}
"""

_LABEL_CLEAR = """
local p = ARGV[1]
local v = redis.call('GET', p .. ':labels:current')
redis.call('DEL', p .. ':labels:current', p .. ':labels:labelled_at')
if v then
  redis.call('DEL', p .. ':labels:' .. v .. ':q', p .. ':labels:' .. v .. ':sha',
             p .. ':labels:' .. v .. ':meta')
end
return v
"""


class RedisLabelStore:
    """:class:`~ragtrace_consumers.model.LabelStore` in Redis.

    ``load`` writes the new set under its own version's keys (one transaction) and then switches
    ``P:labels:current`` to it (one script): readers see the old set or the new one, never a
    mix. The previous version's keys expire a minute later. :meth:`add` switches only if the
    set it read is still current (compare-and-swap in the script), so concurrent saves never
    drop each other's question.
    """

    def __init__(
        self, client: Client, *, prefix: str = DEFAULT_PREFIX, clock: Any = time.time
    ) -> None:
        self._r = client
        self._p = key_space(client, _check_prefix(prefix), "labels")
        self._current = f"{self._p}:labels:current"
        self._clock = clock
        self._swap = client.register_script(_LABEL_SWAP)
        self._get = client.register_script(_LABEL_GET)
        self._all = client.register_script(_LABEL_ALL)
        self._clear = client.register_script(_LABEL_CLEAR)

    def load(self, questions: Sequence[LabelledQuestion], *, source: str | None = None) -> str:
        """Replace the label set atomically; returns its version."""
        version = self._write(questions, source)
        self._switch(version, expected="*")
        return version

    def _write(self, questions: Sequence[LabelledQuestion], source: str | None) -> str:
        """Write ``questions`` under their own version's keys (one transaction); not current
        until :meth:`_switch`. Returns the version."""
        index = LabelIndex.build(questions)
        stats = index.stats(loaded_at=self._clock(), source=source)
        base = f"{self._p}:labels:{index.version}"
        meta: dict[FieldT, EncodableT] = {k: json.dumps(v) for k, v in stats.to_dict().items()}
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(f"{base}:q", f"{base}:sha", f"{base}:meta")
        pipe.hset(f"{base}:q", mapping={q.qid: question_to_json(q) for q in questions})
        if index.by_sha256:
            by_sha256: dict[FieldT, EncodableT] = {k: v for k, v in index.by_sha256.items()}
            pipe.hset(f"{base}:sha", mapping=by_sha256)
        pipe.hset(f"{base}:meta", mapping=meta)
        pipe.execute()
        return str(index.version)

    def _switch(self, version: str, *, expected: str, labelled: str = "") -> bool:
        """Make ``version`` current if the current one is ``expected`` (``"*"``: any; ``""``:
        none); ``labelled``: the qid saved now (its time is kept). Two steps with
        :meth:`_write`, as a cluster pipeline cannot hold a script; a refused switch lets the
        written keys expire."""
        args: list[EncodableT] = [
            self._p,
            version,
            _OLD_LABELS_TTL_S,
            expected,
            labelled,
            str(self._clock()),
        ]
        return bool(self._swap(keys=[self._current], args=args))

    def add(
        self,
        question: LabelledQuestion,
        *,
        trace_id: str | None = None,
        replaces: str | None = None,
    ) -> str:
        """Replace the set with ``question`` added (or replaced, by qid); returns the new
        version. The switch happens only if the set read is still current: a set swapped in
        meanwhile (another save, a ``labels load``) makes this one read it and try again, so no
        save drops another's question, and ``replaces`` (the version of the qid's label the
        caller read; ``""``: none) is checked against the set written over
        (:class:`~ragtrace_consumers.errors.LabelConflict`)."""
        where = f"trace {trace_id}" if trace_id else "the web view"
        for _ in range(_ADD_ATTEMPTS):
            version, questions, _meta = self._snapshot()
            if replaces is not None:
                mine = next((q for q in questions if q.qid == question.qid), None)
                current = question_version(mine)
                if current != replaces:
                    raise LabelConflict(question.qid, replaces, current)
            kept = [q for q in questions if q.qid != question.qid]
            written = self._write([*kept, question], f"labelled from {where}")
            if self._switch(written, expected=version or "", labelled=question.qid):
                return written
            time.sleep(random.uniform(0, 0.01))  # spread the saves that collided
        raise LabelConflict(question.qid, replaces or "", None)

    def labelled_at(self, qid: str) -> float | None:
        """When ``qid`` was last labelled through :meth:`add` (None: never)."""
        raw = self._r.hget(f"{self._p}:labels:labelled_at", qid)
        return float(raw) if raw else None

    def by_id(self, qid: str) -> LabelledQuestion | None:
        raw = self._get(keys=[self._current], args=[self._p, "id", qid])
        return question_from_json(raw) if raw else None

    def by_question_sha256(self, digest: str) -> LabelledQuestion | None:
        raw = self._get(keys=[self._current], args=[self._p, "sha", digest])
        return question_from_json(raw) if raw else None

    def version(self) -> str:
        raw = self._r.get(self._current)
        return _text(raw) if raw else ""

    def _snapshot(self) -> tuple[str | None, list[LabelledQuestion], dict[str, Any]]:
        version, values, meta = self._all(keys=[self._current], args=[self._p])
        if not version:
            return None, [], {}
        flat = list(meta)
        details = {flat[i].decode(): json.loads(flat[i + 1]) for i in range(0, len(flat), 2)}
        return version.decode(), [question_from_json(v) for v in values], details

    def questions(self) -> list[LabelledQuestion]:
        """Every labelled question of the current set, by qid."""
        return sorted(self._snapshot()[1], key=lambda q: q.qid)

    def stats(self) -> LabelStats:
        version, questions, meta = self._snapshot()
        if version is None:
            return LabelStats(version=None)
        return LabelStats(
            version=version,
            questions=int(meta.get("questions", len(questions))),
            answerable=int(meta.get("answerable", 0)),
            ambiguous=int(meta.get("ambiguous", 0)),
            loaded_at=meta.get("loaded_at"),
            source=meta.get("source"),
        )

    def clear(self) -> None:
        self._clear(keys=[self._current], args=[self._p])


# A stored value's first byte: raw deflate follows, or the value follows as it was (only for a value
# that itself starts with one of these bytes). Any other first byte is the value as it was (the
# JSON entries the judges write start with "{", as did every entry of earlier versions).
_DEFLATED, _VERBATIM = b"\x01", b"\x02"


def _deflate(value: bytes) -> bytes:
    # Raw deflate with a 4 KiB window and small state: an entry is a few hundred bytes to a few
    # KiB, and zlib's default state costs about 40 µs per call to set up (this, about 7 µs).
    packer = zlib.compressobj(6, zlib.DEFLATED, -12, 2)
    packed = _DEFLATED + packer.compress(value) + packer.flush()
    if len(packed) < len(value):
        return packed
    return _VERBATIM + value if value[:1] in (_DEFLATED, _VERBATIM) else value


def _inflate(raw: bytes) -> bytes:
    head = raw[:1]
    if head == _DEFLATED:
        return zlib.decompress(raw[1:], -15)
    return raw[1:] if head == _VERBATIM else raw


class RedisJudgeResultCache:
    """:class:`~ragtrace_consumers.model.JudgeResultCache`: ``P:judge:<key>`` with a TTL.

    The cache is most of the memory Redis holds for ragtrace (one entry per judged answer for a
    week by default; docs/benchmarks.md, "Redis scale model"), so a value is stored deflated
    whenever that is shorter; entries written by earlier versions read back unchanged."""

    def __init__(
        self, client: Client, *, prefix: str = DEFAULT_PREFIX, ttl_s: float = 7 * 86400.0
    ) -> None:
        self._r, self._p = client, _check_prefix(prefix)
        self._ttl_ms = _ms(ttl_s)

    def get(self, key: str) -> bytes | None:
        return self.get_many([key])[0]

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """:meth:`get` for several keys in one round trip (MGET; one per node on a cluster)."""
        if not keys:
            return []
        raws = mget(self._r, [f"{self._p}:judge:{k}" for k in keys])
        return [
            None
            if raw is None
            else _inflate(raw if isinstance(raw, bytes) else _text(raw).encode())
            for raw in raws
        ]

    def put(self, key: str, value: bytes) -> None:
        self._r.set(f"{self._p}:judge:{key}", _deflate(value), px=self._ttl_ms)

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        """:meth:`put` for several entries in one round trip."""
        if not items:
            return
        pipe = self._r.pipeline(transaction=False)
        for key, value in items:
            pipe.set(f"{self._p}:judge:{key}", _deflate(value), px=self._ttl_ms)
        pipe.execute()


class RedisSessionEvidence:
    """:class:`~ragtrace_consumers.model.SessionEvidence`: ``P:session:<sha256 of the session
    ID>``, a sorted set of encoded turns scored by their end time, cut to the newest
    ``max_turns`` and to ``ttl_s`` before the newest at every record, and expiring ``ttl_s``
    after the last one. One round trip per call."""

    def __init__(
        self,
        client: Client,
        *,
        prefix: str = DEFAULT_PREFIX,
        max_turns: int = 3,
        ttl_s: float = 1800.0,
    ) -> None:
        if max_turns < 1 or not ttl_s > 0:
            raise ValueError(f"max_turns must be >= 1 and ttl_s > 0, got {max_turns}, {ttl_s}")
        self._r, self._p = client, _check_prefix(prefix)
        self._max_turns, self._ttl_s = max_turns, ttl_s

    def _key(self, session_id: str) -> str:
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return f"{self._p}:session:{digest}"

    def record_many(self, turns: Sequence[tuple[str, SessionTurn]]) -> None:
        if not turns:
            return
        pipe = self._r.pipeline(transaction=False)
        for session_id, turn in turns:
            key = self._key(session_id)
            pipe.zadd(key, {encode_turn(turn): turn.ended_ns})
            pipe.zremrangebyrank(key, 0, -(self._max_turns + 1))
            pipe.zremrangebyscore(key, "-inf", f"({turn.ended_ns - int(self._ttl_s * 1e9)}")
            pipe.pexpire(key, _ms(self._ttl_s))
        pipe.execute()

    def recent_many(
        self, queries: Sequence[tuple[str, int]], max_turns: int, max_age_s: float
    ) -> list[list[SessionTurn]]:
        if not queries:
            return []
        pipe = self._r.pipeline(transaction=False)
        for session_id, before in queries:
            oldest = before - int(max_age_s * 1e9)
            pipe.zrevrangebyscore(self._key(session_id), f"({before}", oldest)
        out = []
        for (_, before), raws in zip(queries, pipe.execute(), strict=True):
            turns = {t.trace_id: t for t in (decode_turn(r) for r in raws)}
            out.append(recent_turns(list(turns.values()), before, max_turns, max_age_s))
        return out


# KEYS[1]: zset of grants "id:calls:tokens" scored by grant time; KEYS[2]: hash of their sums
# (kept in step, so a check costs the grants expiring since the last one, not the whole window).
_BUDGET = """
local key, sums, calls, tokens = KEYS[1], KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2])
local calls_limit, tokens_limit, window = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local function total(members)
  local c_sum, k_sum = 0, 0
  for _, m in ipairs(members) do
    local c, k = string.match(m, '^[^:]*:(%d+):(%d+)$')
    c_sum, k_sum = c_sum + tonumber(c), k_sum + tonumber(k)
  end
  return c_sum, k_sum
end
if redis.call('EXISTS', sums) == 0 then  -- first use (or grants kept by an older version)
  local c, k = total(redis.call('ZRANGE', key, 0, -1))
  redis.call('HSET', sums, 'calls', c, 'tokens', k)
end
local gone = redis.call('ZRANGEBYSCORE', key, '-inf', now - window)
if #gone > 0 then
  local c, k = total(gone)
  redis.call('HINCRBY', sums, 'calls', -c)
  redis.call('HINCRBY', sums, 'tokens', -k)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
end
local used_calls = tonumber(redis.call('HGET', sums, 'calls'))
local used_tokens = tonumber(redis.call('HGET', sums, 'tokens'))
if used_calls + calls > calls_limit or used_tokens + tokens > tokens_limit then return 0 end
redis.call('ZADD', key, now, ARGV[6] .. ':' .. calls .. ':' .. tokens)
redis.call('HINCRBY', sums, 'calls', calls)
redis.call('HINCRBY', sums, 'tokens', tokens)
local ttl = math.ceil(window) + 1
redis.call('EXPIRE', key, ttl)
redis.call('EXPIRE', sums, ttl)
return 1
"""


class RedisJudgeBudget:
    """:class:`~ragtrace_consumers.model.JudgeBudget` shared by every replica: a sliding window
    (``window_s``, one minute by default) on Redis server time, checked and charged in one script,
    so concurrent replicas together never exceed either limit. Same rule as
    :class:`~ragtrace_consumers.stores.memory.MemoryJudgeBudget`."""

    def __init__(
        self,
        client: Client,
        calls_per_minute: int,
        tokens_per_minute: int,
        *,
        prefix: str = DEFAULT_PREFIX,
        window_s: float = BUDGET_WINDOW_S,
    ) -> None:
        if calls_per_minute < 0 or tokens_per_minute < 0:
            raise ValueError("budget limits must be >= 0")
        if not window_s > 0:
            raise ValueError(f"window_s must be > 0, got {window_s!r}")
        self._key = f"{key_space(client, _check_prefix(prefix), 'budget')}:budget"
        self._sums = f"{self._key}:sums"
        self._limits = (calls_per_minute, tokens_per_minute, window_s)
        self._script = client.register_script(_BUDGET)

    def try_acquire(self, calls: int, tokens: int) -> bool:
        if calls < 0 or tokens < 0:
            raise ValueError(f"calls and tokens must be >= 0, got {calls}, {tokens}")
        calls_limit, tokens_limit, window = self._limits
        ok = self._script(
            keys=[self._key, self._sums],
            args=[
                int(calls),
                int(tokens),
                calls_limit,
                tokens_limit,
                repr(float(window)),
                uuid.uuid4().hex,
            ],
        )
        return bool(ok)


class RedisBatchStore:
    """:class:`BatchStore` in Redis: ``P:batches`` (set of batch IDs), ``P:batch:<id>`` (hash
    custom ID -> request), ``P:batch_submitted`` (hash custom ID -> batch ID); each change is one
    MULTI transaction."""

    def __init__(self, client: Client, *, prefix: str) -> None:
        self._r: Any = client  # bytes replies
        self._p = key_space(client, prefix, "batches")

    def add_batch(self, batch_id: str, items: Mapping[str, bytes]) -> None:
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(f"{self._p}:batch:{batch_id}", mapping=dict(items))
        pipe.hset(f"{self._p}:batch_submitted", mapping=dict.fromkeys(items, batch_id))
        pipe.sadd(f"{self._p}:batches", batch_id)
        pipe.execute()

    def pending_batches(self) -> list[str]:
        return sorted(b.decode() for b in self._r.smembers(f"{self._p}:batches"))

    def batch_items(self, batch_id: str) -> dict[str, bytes]:
        raw = self._r.hgetall(f"{self._p}:batch:{batch_id}")
        return {k.decode(): bytes(v) for k, v in raw.items()}

    def submitted(self, custom_ids: Sequence[str]) -> list[bool]:
        if not custom_ids:
            return []
        values = self._r.hmget(f"{self._p}:batch_submitted", list(custom_ids))
        return [v is not None for v in values]

    def finish_batch(self, batch_id: str) -> None:
        ids = list(self.batch_items(batch_id))
        pipe = self._r.pipeline(transaction=True)
        if ids:
            pipe.hdel(f"{self._p}:batch_submitted", *ids)
        pipe.delete(f"{self._p}:batch:{batch_id}")
        pipe.srem(f"{self._p}:batches", batch_id)
        pipe.execute()
