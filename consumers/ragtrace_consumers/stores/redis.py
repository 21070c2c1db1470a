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
    P:judge:<key>              judge result cache (TTL; values deflated when shorter)
    P:written_marks:<n>        write-back idempotency marks (and counted:<family> ones after a
                               failed delivery): a fixed-size table (.redis_marks)
    P:budget                   zset of judge-budget grants in the sliding window
    P:budget:sums              hash: calls and tokens of those grants

On a Redis Cluster (found by :func:`connect` itself) ``P`` above is a key space with a hash tag:
each trace's keys and the ``due``/``leases``/``stats``/... keys they share live under one of
16 spaces ``P:{t0}`` .. ``P:{t15}`` chosen by the trace ID, so every script runs on one slot;
claims, ``pending`` and ``stats`` visit every space (:mod:`.redis_keys`).
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ragtrace_consumers.model import STORE_STATS, DeadTrace, Lease, SpanRecord, group_by_trace
from ragtrace_consumers.stores.defaults import (
    DEFAULT_DEAD_TTL_S,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_TTL_S,
)
from ragtrace_consumers.stores.redis_keys import Client, connect, space_of, trace_spaces
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

    ``append`` is one script per batch and key space (durable in Redis when it returns);
    ``claim_due`` is one script per key space, so each due trace goes to exactly one claimant
    across replicas. On one server there is one key space; on a cluster
    :data:`~.redis_keys.TRACE_SHARDS`, and a claim first reads which spaces hold the earliest
    due traces (one pipeline), then claims in those spaces only.
    """

    def __init__(
        self,
        client: Client,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_s: float = DEFAULT_TTL_S,
        done_ttl_s: float | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        dead_ttl_s: float = DEFAULT_DEAD_TTL_S,
        clock: Any = time.time,
    ) -> None:
        self._r = client
        self._spaces = trace_spaces(client, _check_prefix(prefix))
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

    def _space(self, trace_id: str) -> str:
        return space_of(self._spaces, trace_id)

    def _spans_key(self, trace_id: str) -> str:
        return f"{self._space(trace_id)}:trace:{trace_id}:spans"

    def _by_space_at(self, trace_ids: Sequence[str]) -> dict[str, list[int]]:
        """The positions in ``trace_ids`` of each key space's traces."""
        out: dict[str, list[int]] = {}
        for i, trace_id in enumerate(trace_ids):
            out.setdefault(self._space(trace_id), []).append(i)
        return out

    def append(
        self,
        spans: Sequence[SpanRecord],
        due_at: Mapping[str, float],
        creates: Collection[str],
    ) -> None:
        groups = group_by_trace(spans)
        trace_ids = list(groups)
        for space, indexes in self._by_space_at(trace_ids).items():
            args: list[str | int | bytes] = [space, self._ttl_ms]
            for trace_id in (trace_ids[i] for i in indexes):
                group, due = groups[trace_id], due_at.get(trace_id)
                args += [
                    trace_id,
                    "" if due is None else repr(float(due)),
                    "1" if trace_id in creates else "0",
                    len(group),
                ]
                args += [encode_span(s) for s in group]
            # The one key names the script's slot for a cluster client (the script builds the rest).
            self._append(keys=[f"{space}:due"], args=args)

    def claim(self, now: float, limit: int, lease_s: float) -> list[Lease]:
        if limit < 1:
            return []
        if not lease_s > 0:
            raise ValueError(f"lease_s must be > 0, got {lease_s!r}")
        if len(self._spaces) == 1:
            return self._claim_in(self._spaces[0], now, limit, lease_s)
        due = self._earliest_due(now, limit)
        counts: dict[str, int] = {}
        for _, _, space in due:
            counts[space] = counts.get(space, 0) + 1
        order = {trace_id: i for i, (_, trace_id, _) in enumerate(due)}
        leases: list[Lease] = []
        for space, n in counts.items():
            leases += self._claim_in(space, now, n, lease_s)
        return sorted(leases, key=lambda lease: order.get(lease.trace_id, len(order)))

    def _claim_in(self, space: str, now: float, limit: int, lease_s: float) -> list[Lease]:
        out = self._claim(
            keys=[f"{space}:due"],
            args=[
                space,
                repr(float(now)),
                int(limit),
                repr(float(now + lease_s)),
                uuid.uuid4().hex,
            ],
        )
        return [Lease(_text(out[i]), _text(out[i + 1])) for i in range(0, len(out), 2)]

    def _earliest_due(self, now: float, limit: int) -> list[tuple[float, str, str]]:
        """The ``limit`` traces due earliest over every key space, as (due, trace, space), read
        in one pipeline (one round trip per node); a lease run out counts as due when it ran
        out (the claim script makes it so). Claiming by these counts keeps a batch in due order
        across spaces; a trace another replica claims meanwhile only makes the batch smaller."""
        pipe = self._r.pipeline(transaction=False)
        for space in self._spaces:
            for key in (f"{space}:due", f"{space}:leases"):
                pipe.zrangebyscore(key, "-inf", repr(float(now)), 0, limit, withscores=True)
        replies = pipe.execute()
        found = [
            (float(score), _text(member), space)
            for i, space in enumerate(self._spaces)
            for reply in replies[2 * i : 2 * i + 2]
            for member, score in reply
        ]
        return sorted(found)[:limit]

    def claim_due(self, now: float, limit: int, lease_s: float) -> list[str]:
        """:meth:`claim` without the tokens (release/park them with ``token=None``)."""
        return [lease.trace_id for lease in self.claim(now, limit, lease_s)]

    def load(self, trace_id: str) -> list[SpanRecord]:
        return [decode_span(raw) for raw in self._r.lrange(self._spans_key(trace_id), 0, -1)]

    def load_many(self, trace_ids: Sequence[str]) -> list[list[SpanRecord]]:
        """:meth:`load` for several traces in one round trip (one per node on a cluster)."""
        if not trace_ids:
            return []
        pipe = self._r.pipeline(transaction=False)
        for trace_id in trace_ids:
            pipe.lrange(self._spans_key(trace_id), 0, -1)
        return [[decode_span(raw) for raw in raws] for raws in pipe.execute()]

    def release(self, trace_id: str, token: str | None = None) -> bool:
        return self.release_many([(trace_id, token)])[0]

    def release_many(self, leases: Sequence[tuple[str, str | None]]) -> list[bool]:
        """:meth:`release` for several (trace, token) pairs in one script call per key space."""
        released: list[bool] = [False] * len(leases)
        for space, indexes in self._by_space_at([t for t, _ in leases]).items():
            args: list[str | int] = [space, self._done_ttl_ms]
            for i in indexes:
                args += [leases[i][0], leases[i][1] or ""]
            out = self._release(keys=[f"{space}:due"], args=args)
            for i, x in zip(indexes, out, strict=True):
                released[i] = bool(int(x))
        return released

    def park(self, trace_id: str, retry_at: float, reason: str, token: str | None = None) -> bool:
        keep_ms = _ms(max(retry_at - self._clock(), 0.0)) + self._ttl_ms
        space = self._space(trace_id)
        out = self._park(
            keys=[f"{space}:due"],
            args=[
                space,
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
        raw = self._r.hget(f"{self._space(trace_id)}:attempts", trace_id)
        return int(raw) if raw is not None else 0

    def dead(self, limit: int = 100) -> list[DeadTrace]:
        if limit < 1:
            return []
        found: list[tuple[float, str, str]] = []  # (given up at, trace, key space)
        for space in self._spaces:
            given_up: Any = self._r.zrange(f"{space}:dead", 0, limit - 1, withscores=True)
            for raw, at in given_up:
                found.append((float(at), _text(raw), space))
        found = sorted(found)[:limit]
        infos: dict[tuple[str, str], Any] = {}
        for space in {space for _, _, space in found}:
            ids = [trace_id for _, trace_id, s in found if s == space]
            raws = self._r.hmget(f"{space}:dead:info", ids)
            infos.update(zip([(space, t) for t in ids], raws, strict=True))
        out = []
        for _, trace_id, space in found:
            raw = infos[(space, trace_id)]
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
        """Traces due, leased or parked (not dead); on a cluster the key spaces are counted one
        after the other (a trace claimed meanwhile may count twice or not at all)."""
        pipe = self._r.pipeline(transaction=len(self._spaces) == 1)
        for space in self._spaces:
            pipe.zcard(f"{space}:due")
            pipe.zcard(f"{space}:leases")
        return sum(int(n) for n in pipe.execute())

    def stats(self) -> dict[str, int]:
        got = dict.fromkeys(STORE_STATS, 0)
        pipe = self._r.pipeline(transaction=False)
        for space in self._spaces:
            pipe.hgetall(f"{space}:stats")
        for raw in pipe.execute():
            for k, v in raw.items():
                if _text(k) in got:
                    got[_text(k)] += int(v)
        return got
