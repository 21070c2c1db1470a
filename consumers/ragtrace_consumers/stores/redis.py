"""Redis implementations of every seam in :mod:`ragtrace_consumers.model`, shared by replicas.

Same semantics as :mod:`ragtrace_consumers.stores.memory` (one behavioural suite tests both).
Every multi-key change is one Lua script or one MULTI transaction, so concurrent replicas never
see half of it. Keys (``P`` is the configurable prefix; replicas of one deployment share it)::

    P:trace:<trace_id>:spans   list of JSON spans, TTL refreshed on append (abandoned: expire)
    P:due                      zset trace_id -> due time (earliest wins)
    P:leases                   zset trace_id -> lease expiry
    P:lease_tokens             hash trace_id -> token of the current lease
    P:attempts                 hash trace_id -> parks so far
    P:done:<trace_id>          marker (TTL): the trace was scored; later spans are counted late
    P:dead, P:dead:info        zset trace_id -> time given up; hash trace_id -> JSON details
    P:stats                    hash of the counters in assemble.STORE_STATS
    P:labels:current           version of the label set in use
    P:labels:<version>:q|sha|meta   questions by qid, qid by question digest, load details
    P:judge:<key>              judge result cache (TTL)
    P:written:<trace>:<metric> write-back idempotency marks (TTL)
    P:budget                   zset of judge-budget grants in the sliding window
    P:budget:sums              hash: calls and tokens of those grants

The scripts build key names from the prefix, so they need one Redis server (not a cluster).
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import redis
from redis.typing import EncodableT, FieldT

from ragtrace.evaluation.labels import LabelledQuestion
from ragtrace_consumers.model import Lease, SpanRecord
from ragtrace_consumers.scoring.assembly import (
    STORE_STATS,
    DeadTrace,
    creates_trace,
    group_by_trace,
)
from ragtrace_consumers.scoring.label_match import (
    LabelIndex,
    LabelStats,
    question_from_json,
    question_to_json,
)
from ragtrace_consumers.stores.memory import (
    BUDGET_WINDOW_S,
    DEFAULT_DEAD_TTL_S,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_TTL_S,
)

__all__ = [
    "DEFAULT_PREFIX",
    "DEFAULT_REDIS_URL",
    "ENV_REDIS_PREFIX",
    "ENV_REDIS_URL",
    "RedisIdempotencyStore",
    "RedisJudgeBudget",
    "RedisJudgeResultCache",
    "RedisLabelStore",
    "RedisTraceStore",
    "connect",
    "decode_span",
    "encode_span",
]

ENV_REDIS_URL = "RAGTRACE_REDIS_URL"
ENV_REDIS_PREFIX = "RAGTRACE_REDIS_KEY_PREFIX"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_PREFIX = "ragtrace"
_OLD_LABELS_TTL_S = 60  # readers that fetched the old version a moment ago can still finish


def connect(url: str) -> redis.Redis:
    """A client for ``url`` (``redis://host:port/db``); bytes in, bytes out."""
    return redis.Redis.from_url(
        url, socket_timeout=10, socket_connect_timeout=5, health_check_interval=30
    )


def _check_prefix(prefix: str) -> str:
    if not isinstance(prefix, str) or not prefix or any(c.isspace() for c in prefix):
        raise ValueError(f"key prefix must be a non-empty string without spaces, got {prefix!r}")
    return prefix


def _text(raw: object) -> str:
    """A Redis reply (bytes with this client) as str."""
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _ms(seconds: float) -> int:
    if not seconds > 0:
        raise ValueError(f"a TTL must be > 0 seconds, got {seconds!r}")
    return max(1, math.ceil(seconds * 1000))


def encode_span(span: SpanRecord) -> bytes:
    """Compact UTF-8 JSON of one span (attribute tuples become lists), by orjson. JSON has no
    NaN or infinity: such a double attribute is stored as null and comes back absent."""
    attrs = span.attributes
    return orjson.dumps(
        [
            span.trace_id,
            span.span_id,
            span.parent_span_id,
            span.name,
            span.scope,
            span.service,
            span.start_ns,
            span.end_ns,
            attrs if type(attrs) is dict else dict(attrs),
            span.status_error,
        ],
    )


def decode_span(raw: str | bytes) -> SpanRecord:
    t, s, p, name, scope, service, start, end, attrs, error = orjson.loads(raw)
    return SpanRecord(
        trace_id=t,
        span_id=s,
        parent_span_id=p,
        name=name,
        scope=scope,
        service=service,
        start_ns=start,
        end_ns=end,
        attributes={
            k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items() if v is not None
        },
        status_error=bool(error),
    )


_APPEND = """
local p, ttl_ms = ARGV[1], tonumber(ARGV[2])
local due_key, lease_key, stats = p .. ':due', p .. ':leases', p .. ':stats'
local i = 3
while i <= #ARGV do
  local tid, due, create, n = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
  local first = i + 4
  i = first + n
  local spans = p .. ':trace:' .. tid .. ':spans'
  if redis.call('EXISTS', p .. ':done:' .. tid) == 1 or redis.call('ZSCORE', p .. ':dead', tid) then
    redis.call('HINCRBY', stats, 'late_spans', n)
  else
    local exists = redis.call('EXISTS', spans) == 1
    if exists or create == '1' then
      if not exists then redis.call('HINCRBY', stats, 'traces_created', 1) end
      for j = first, first + n - 1 do redis.call('RPUSH', spans, ARGV[j]) end
      if redis.call('PTTL', spans) < ttl_ms then redis.call('PEXPIRE', spans, ttl_ms) end
      redis.call('HINCRBY', stats, 'spans_appended', n)
      if redis.call('ZSCORE', lease_key, tid) then
        redis.call('HINCRBY', stats, 'late_spans', n)
      elseif due ~= '' then
        redis.call('ZADD', due_key, 'LT', due, tid)
      end
    end
  end
end
return 1
"""

# Returns {trace_id, token, trace_id, token, ...}; tokens are ARGV[5] .. ':' .. n (a random
# prefix per call, made by the client: a script cannot make random values).
_CLAIM = """
local p, now, limit, lease_until = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local prefix = ARGV[5]
local due_key, lease_key, stats = p .. ':due', p .. ':leases', p .. ':stats'
local tokens = p .. ':lease_tokens'
for _, tid in ipairs(redis.call('ZRANGEBYSCORE', lease_key, '-inf', now)) do
  local until_ = redis.call('ZSCORE', lease_key, tid)
  redis.call('ZREM', lease_key, tid)
  redis.call('HDEL', tokens, tid)
  redis.call('ZADD', due_key, 'LT', until_, tid)
  redis.call('HINCRBY', stats, 'lease_expired', 1)
end
local out, n = {}, 0
while n < limit do
  local batch = redis.call('ZRANGEBYSCORE', due_key, '-inf', now, 'LIMIT', 0, limit - n)
  if #batch == 0 then break end
  for _, tid in ipairs(batch) do
    redis.call('ZREM', due_key, tid)
    if redis.call('EXISTS', p .. ':trace:' .. tid .. ':spans') == 0 then
      redis.call('HINCRBY', stats, 'expired', 1)
      redis.call('HDEL', p .. ':attempts', tid)
    else
      local token = prefix .. ':' .. n
      n = n + 1
      redis.call('ZADD', lease_key, lease_until, tid)
      redis.call('HSET', tokens, tid, token)
      table.insert(out, tid)
      table.insert(out, token)
    end
  end
end
return out
"""

# ARGV: prefix, done_ms, then (trace_id, token) pairs; an empty token releases unconditionally.
# Returns one 1 (released) or 0 (the lease was no longer the caller's) per pair.
_RELEASE = """
local p, done_ms = ARGV[1], tonumber(ARGV[2])
local stats, tokens = p .. ':stats', p .. ':lease_tokens'
local out = {}
for i = 3, #ARGV, 2 do
  local tid, token = ARGV[i], ARGV[i + 1]
  if token ~= '' and redis.call('HGET', tokens, tid) ~= token then
    redis.call('HINCRBY', stats, 'lease_lost', 1)
    table.insert(out, 0)
  else
    redis.call('DEL', p .. ':trace:' .. tid .. ':spans')
    redis.call('ZREM', p .. ':due', tid)
    redis.call('ZREM', p .. ':leases', tid)
    redis.call('HDEL', tokens, tid)
    redis.call('ZREM', p .. ':dead', tid)
    redis.call('HDEL', p .. ':dead:info', tid)
    redis.call('HDEL', p .. ':attempts', tid)
    redis.call('SET', p .. ':done:' .. tid, '1', 'PX', done_ms)
    redis.call('HINCRBY', stats, 'released', 1)
    table.insert(out, 1)
  end
end
return out
"""

_PARK = """
local p, tid, retry_at, reason = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local max_attempts, keep_ms, dead_ms = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local token = ARGV[8]
local spans, stats = p .. ':trace:' .. tid .. ':spans', p .. ':stats'
if token ~= '' and redis.call('HGET', p .. ':lease_tokens', tid) ~= token then
  redis.call('HINCRBY', stats, 'lease_lost', 1)
  return -2
end
redis.call('ZREM', p .. ':leases', tid)
redis.call('HDEL', p .. ':lease_tokens', tid)
if redis.call('EXISTS', spans) == 0 then
  redis.call('ZREM', p .. ':due', tid)
  redis.call('HDEL', p .. ':attempts', tid)
  redis.call('HINCRBY', stats, 'expired', 1)
  return -1
end
local n = redis.call('HINCRBY', p .. ':attempts', tid, 1)
if n >= max_attempts then
  redis.call('ZREM', p .. ':due', tid)
  redis.call('ZADD', p .. ':dead', retry_at, tid)
  redis.call('HSET', p .. ':dead:info', tid,
    cjson.encode({attempts = n, reason = reason, at = retry_at}))
  redis.call('PEXPIRE', spans, dead_ms)
  redis.call('HINCRBY', stats, 'dead', 1)
  return n
end
redis.call('ZADD', p .. ':due', retry_at, tid)
if redis.call('PTTL', spans) < keep_ms then redis.call('PEXPIRE', spans, keep_ms) end
redis.call('HINCRBY', stats, 'parked', 1)
return n
"""


class RedisTraceStore:
    """:class:`~ragtrace_consumers.model.TraceStore` in Redis; see
    :class:`~ragtrace_consumers.stores.memory.MemoryTraceStore` for the lifecycle.

    ``append`` is one script per batch (durable in Redis when it returns); ``claim_due`` is one
    script, so each due trace goes to exactly one claimant across replicas.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_s: float = DEFAULT_TTL_S,
        done_ttl_s: float | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        dead_ttl_s: float = DEFAULT_DEAD_TTL_S,
        clock: Any = time.time,
    ) -> None:
        self._r = client
        self._p = _check_prefix(prefix)
        for name, value in (("ttl_s", ttl_s), ("dead_ttl_s", dead_ttl_s)):
            if not value > 0:
                raise ValueError(f"{name} must be > 0, got {value!r}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        self._ttl_ms = _ms(ttl_s)
        self._done_ttl_ms = _ms(ttl_s if done_ttl_s is None else done_ttl_s)
        self._max_attempts = max_attempts
        self._dead_ttl_ms = _ms(dead_ttl_s)
        self._clock = clock
        self._append = client.register_script(_APPEND)
        self._claim = client.register_script(_CLAIM)
        self._release = client.register_script(_RELEASE)
        self._park = client.register_script(_PARK)

    def _spans_key(self, trace_id: str) -> str:
        return f"{self._p}:trace:{trace_id}:spans"

    def append(self, spans: Sequence[SpanRecord], due_at: Mapping[str, float]) -> None:
        args: list[str | int | bytes] = [self._p, self._ttl_ms]
        for trace_id, group in group_by_trace(spans).items():
            due = due_at.get(trace_id)
            args += [
                trace_id,
                "" if due is None else repr(float(due)),
                "1" if creates_trace(group) else "0",
                len(group),
            ]
            args += [encode_span(s) for s in group]
        if len(args) > 2:
            self._append(keys=[], args=args)

    def claim(self, now: float, limit: int, lease_s: float) -> list[Lease]:
        if limit < 1:
            return []
        if not lease_s > 0:
            raise ValueError(f"lease_s must be > 0, got {lease_s!r}")
        out = self._claim(
            keys=[],
            args=[
                self._p,
                repr(float(now)),
                int(limit),
                repr(float(now + lease_s)),
                uuid.uuid4().hex,
            ],
        )
        return [Lease(_text(out[i]), _text(out[i + 1])) for i in range(0, len(out), 2)]

    def claim_due(self, now: float, limit: int, lease_s: float) -> list[str]:
        """:meth:`claim` without the tokens (release/park them with ``token=None``)."""
        return [lease.trace_id for lease in self.claim(now, limit, lease_s)]

    def load(self, trace_id: str) -> list[SpanRecord]:
        return [decode_span(raw) for raw in self._r.lrange(self._spans_key(trace_id), 0, -1)]

    def load_many(self, trace_ids: Sequence[str]) -> list[list[SpanRecord]]:
        """:meth:`load` for several traces in one round trip."""
        if not trace_ids:
            return []
        pipe = self._r.pipeline(transaction=False)
        for trace_id in trace_ids:
            pipe.lrange(self._spans_key(trace_id), 0, -1)
        return [[decode_span(raw) for raw in raws] for raws in pipe.execute()]

    def release(self, trace_id: str, token: str | None = None) -> bool:
        return self.release_many([(trace_id, token)])[0]

    def release_many(self, leases: Sequence[tuple[str, str | None]]) -> list[bool]:
        """:meth:`release` for several (trace, token) pairs in one script call."""
        if not leases:
            return []
        args: list[str | int] = [self._p, self._done_ttl_ms]
        for trace_id, token in leases:
            args += [trace_id, token or ""]
        return [bool(int(x)) for x in self._release(keys=[], args=args)]

    def park(self, trace_id: str, retry_at: float, reason: str, token: str | None = None) -> bool:
        keep_ms = _ms(max(retry_at - self._clock(), 0.0)) + self._ttl_ms
        out = self._park(
            keys=[],
            args=[
                self._p,
                trace_id,
                repr(float(retry_at)),
                reason,
                self._max_attempts,
                keep_ms,
                self._dead_ttl_ms,
                token or "",
            ],
        )
        return int(out) != -2

    def attempts(self, trace_id: str) -> int:
        raw = self._r.hget(f"{self._p}:attempts", trace_id)
        return int(raw) if raw is not None else 0

    def dead(self, limit: int = 100) -> list[DeadTrace]:
        ids = [_text(t) for t in self._r.zrange(f"{self._p}:dead", 0, max(limit, 1) - 1)]
        if not ids or limit < 1:
            return []
        infos = self._r.hmget(f"{self._p}:dead:info", ids)
        out = []
        for trace_id, raw in zip(ids, infos, strict=True):
            info = json.loads(raw) if raw is not None else {}
            out.append(
                DeadTrace(
                    trace_id,
                    int(info.get("attempts", 0)),
                    str(info.get("reason", "")),
                    float(info.get("at", 0.0)),
                )
            )
        return out

    def pending(self) -> int:
        """Traces due, leased or parked (not dead)."""
        pipe = self._r.pipeline(transaction=True)
        pipe.zcard(f"{self._p}:due")
        pipe.zcard(f"{self._p}:leases")
        due, leased = pipe.execute()
        return int(due) + int(leased)

    def stats(self) -> dict[str, int]:
        raw = self._r.hgetall(f"{self._p}:stats")
        got = {_text(k): int(v) for k, v in raw.items()}
        return {name: got.get(name, 0) for name in STORE_STATS}


_LABEL_SWAP = """
local p, new = ARGV[1], ARGV[2]
local cur = p .. ':labels:current'
local old = redis.call('GET', cur)
redis.call('SET', cur, new)
if old and old ~= new then
  for _, s in ipairs({':q', ':sha', ':meta'}) do
    redis.call('EXPIRE', p .. ':labels:' .. old .. s, tonumber(ARGV[3]))
  end
end
return old
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
redis.call('DEL', p .. ':labels:current')
if v then
  redis.call('DEL', p .. ':labels:' .. v .. ':q', p .. ':labels:' .. v .. ':sha',
             p .. ':labels:' .. v .. ':meta')
end
return v
"""


class RedisLabelStore:
    """:class:`~ragtrace_consumers.model.LabelStore` in Redis.

    ``load`` writes the new set under its own version's keys and then switches
    ``P:labels:current`` to it in the same transaction: readers see the old set or the new one,
    never a mix. The previous version's keys expire a minute later.
    """

    def __init__(
        self, client: redis.Redis, *, prefix: str = DEFAULT_PREFIX, clock: Any = time.time
    ) -> None:
        self._r = client
        self._p = _check_prefix(prefix)
        self._clock = clock
        self._swap = client.register_script(_LABEL_SWAP)
        self._get = client.register_script(_LABEL_GET)
        self._all = client.register_script(_LABEL_ALL)
        self._clear = client.register_script(_LABEL_CLEAR)

    def load(self, questions: Sequence[LabelledQuestion], *, source: str | None = None) -> str:
        """Replace the label set atomically; returns its version."""
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
        self._swap(keys=[], args=[self._p, index.version, _OLD_LABELS_TTL_S], client=pipe)
        pipe.execute()
        return str(index.version)

    def by_id(self, qid: str) -> LabelledQuestion | None:
        raw = self._get(keys=[], args=[self._p, "id", qid])
        return question_from_json(raw) if raw else None

    def by_question_sha256(self, digest: str) -> LabelledQuestion | None:
        raw = self._get(keys=[], args=[self._p, "sha", digest])
        return question_from_json(raw) if raw else None

    def version(self) -> str:
        raw = self._r.get(f"{self._p}:labels:current")
        return _text(raw) if raw else ""

    def _snapshot(self) -> tuple[str | None, list[LabelledQuestion], dict[str, Any]]:
        version, values, meta = self._all(keys=[], args=[self._p])
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
        self._clear(keys=[], args=[self._p])


class RedisJudgeResultCache:
    """:class:`~ragtrace_consumers.model.JudgeResultCache`: ``P:judge:<key>`` with a TTL."""

    def __init__(
        self, client: redis.Redis, *, prefix: str = DEFAULT_PREFIX, ttl_s: float = 7 * 86400.0
    ) -> None:
        self._r, self._p = client, _check_prefix(prefix)
        self._ttl_ms = _ms(ttl_s)

    def get(self, key: str) -> bytes | None:
        return self.get_many([key])[0]

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """:meth:`get` for several keys in one round trip (MGET)."""
        if not keys:
            return []
        raws = self._r.mget([f"{self._p}:judge:{k}" for k in keys])
        return [
            raw if isinstance(raw, bytes) or raw is None else _text(raw).encode() for raw in raws
        ]

    def put(self, key: str, value: bytes) -> None:
        self._r.set(f"{self._p}:judge:{key}", value, px=self._ttl_ms)

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        """:meth:`put` for several entries in one round trip."""
        if not items:
            return
        pipe = self._r.pipeline(transaction=False)
        for key, value in items:
            pipe.set(f"{self._p}:judge:{key}", value, px=self._ttl_ms)
        pipe.execute()


class RedisIdempotencyStore:
    """:class:`~ragtrace_consumers.model.IdempotencyStore`: marks expire after ``ttl_s``."""

    def __init__(
        self, client: redis.Redis, *, prefix: str = DEFAULT_PREFIX, ttl_s: float = 7 * 86400.0
    ) -> None:
        self._r, self._p = client, _check_prefix(prefix)
        self._ttl_ms = _ms(ttl_s)

    def written(self, trace_id: str, metric: str) -> bool:
        return bool(self._r.exists(f"{self._p}:written:{trace_id}:{metric}"))

    def written_many(self, keys: Sequence[tuple[str, str]]) -> list[bool]:
        """:meth:`written` for several (trace, metric) pairs in one round trip (MGET)."""
        if not keys:
            return []
        raws = self._r.mget([f"{self._p}:written:{t}:{m}" for t, m in keys])
        return [raw is not None for raw in raws]

    def mark_written(self, trace_id: str, metric: str) -> None:
        self._r.set(f"{self._p}:written:{trace_id}:{metric}", b"1", px=self._ttl_ms)

    def mark_written_many(self, keys: Sequence[tuple[str, str]]) -> None:
        """:meth:`mark_written` for several pairs in one round trip."""
        if not keys:
            return
        pipe = self._r.pipeline(transaction=False)
        for trace_id, metric in keys:
            pipe.set(f"{self._p}:written:{trace_id}:{metric}", b"1", px=self._ttl_ms)
        pipe.execute()


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
        client: redis.Redis,
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
        self._key = f"{_check_prefix(prefix)}:budget"
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
