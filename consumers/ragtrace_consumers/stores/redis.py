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
    P:stats                    hash of the counters in model.STORE_STATS
    P:labels:current           version of the label set in use
    P:labels:<version>:q|sha|meta   questions by qid, qid by question digest, load details
    P:judge:<key>              judge result cache (TTL)
    P:written:<trace>:<metric> write-back idempotency marks; counted:<family> after a failed delivery (TTL)
    P:budget                   zset of judge-budget grants in the sliding window
    P:budget:sums              hash: calls and tokens of those grants

The scripts build key names from the prefix, so they need one Redis server (not a cluster).
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis

from ragtrace_consumers.model import STORE_STATS, DeadTrace, Lease, SpanRecord, group_by_trace
from ragtrace_consumers.stores.defaults import (
    DEFAULT_DEAD_TTL_S,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_TTL_S,
)
from ragtrace_consumers.stores.span_encoding import decode_span, encode_span

__all__ = [
    "DEFAULT_PREFIX",
    "DEFAULT_REDIS_URL",
    "ENV_REDIS_PASSWORD",
    "ENV_REDIS_PREFIX",
    "ENV_REDIS_URL",
    "RedisTraceStore",
    "connect",
]

ENV_REDIS_URL = "RAGTRACE_REDIS_URL"
ENV_REDIS_PREFIX = "RAGTRACE_REDIS_KEY_PREFIX"
ENV_REDIS_PASSWORD = "RAGTRACE_REDIS_PASSWORD"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_PREFIX = "ragtrace"


def connect(url: str, password: str | None = None) -> redis.Redis:
    """A client for ``url`` (``redis://host:port/db``); bytes in, bytes out. ``password``
    (``redis.password``, kept out of the URL so no library can print it) overrides a
    password in the URL."""
    options: dict[str, Any] = {}
    if password is not None:
        options["password"] = password
        url = _without_password(url)  # redis-py lets the URL's own password win over the argument
    return redis.Redis.from_url(
        url, socket_timeout=10, socket_connect_timeout=5, health_check_interval=30, **options
    )


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    netloc = f"{userinfo.split(':', 1)[0]}@{host}" if userinfo.split(":", 1)[0] else host
    return urlunsplit(parts._replace(netloc=netloc))


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

    def append(
        self,
        spans: Sequence[SpanRecord],
        due_at: Mapping[str, float],
        creates: Collection[str],
    ) -> None:
        args: list[str | int | bytes] = [self._p, self._ttl_ms]
        for trace_id, group in group_by_trace(spans).items():
            due = due_at.get(trace_id)
            args += [
                trace_id,
                "" if due is None else repr(float(due)),
                "1" if trace_id in creates else "0",
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
