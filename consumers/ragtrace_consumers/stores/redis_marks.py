"""The write-back marks of ``ragtrace consume`` in a fixed-size table: memory bounded by its
capacity, whatever the rate.

A mark is 12 bytes of one Redis string: the first 7 bytes of SHA-256 of (trace, metric family)
and its expiry (milliseconds since 2025, 5 bytes big-endian). The hash names two candidate
buckets of 8 such slots; a mark takes a slot holding the same digest, else an expired or empty
slot of the less full bucket, else the slot of the two expiring first (*evicted*: counted in
``<space>:written_marks:evicted``). The string is allocated at its full size (``12 x
capacity`` bytes) by the first mark; it holds ``capacity`` marks at most and evicts almost none
(0.3 % when 87 % full, 0.02 % at 80 %), and:

* a mark evicted before its ``ttl_s`` only forgets early: a replay of that trace is judged
  again and re-sends the *identical* evaluation span (its ID is deterministic), as after a crash
  between the export and the mark;
* a false "written" needs two of 2^56 digests to meet in a lookup's 16 slots: about 2^-52 per
  lookup (one in 4.5 x 10^15), a result then not written back.

On a cluster the table is split over :data:`~.redis_keys.TRACE_SHARDS` key spaces
(``P:{w0}`` ..), each a string of its own slot. Reading is two GETRANGEs per mark in one pipeline;
writing is one script per key space touched. Each table key expires ``ttl_s`` after its last
write, so an idle deployment keeps nothing.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from ragtrace_consumers.stores.redis import DEFAULT_PREFIX, _check_prefix, _ms
from ragtrace_consumers.stores.redis_keys import TRACE_SHARDS, Client, is_cluster, key_space

__all__ = ["DEFAULT_WRITTEN_CAPACITY", "MARK_BYTES", "RedisIdempotencyStore"]

DIGEST_BYTES, EXPIRY_BYTES = 7, 5
MARK_BYTES = DIGEST_BYTES + EXPIRY_BYTES
_SLOTS = 8  # per bucket
_BUCKET_BYTES = MARK_BYTES * _SLOTS
_EPOCH_MS = 1_735_689_600_000  # 2025-01-01: 5 bytes of milliseconds from it reach 2059
DEFAULT_WRITTEN_CAPACITY = 4_194_304  # 50.3 MB

# A table is split into strings of at most _CHUNK_BUCKETS buckets: 1 MiB less the string's
# header, so each is exactly one of the allocator's size classes (no rounding up to 25 %).
_CHUNK_BUCKETS = (2**20 - 32) // _BUCKET_BYTES

# KEYS: the key space's eviction counter. ARGV: now, ttl (ms), then per mark its two candidate
# buckets (string, offset, that string's length), its digest and its expiry.
_MARK = f"""
local evicted, now, ttl = KEYS[1], tonumber(ARGV[1]), ARGV[2]
local D, M, S = {DIGEST_BYTES}, {MARK_BYTES}, {_SLOTS}
local touched = {{}}
local function expiry(s, at)
  local e = 0
  for i = at, at + M - D - 1 do e = e * 256 + (string.byte(s, i) or 0) end
  return e
end
for i = 3, #ARGV, 8 do
  local digest, until_ = ARGV[i + 6], ARGV[i + 7]
  local found, free, free_live, oldest, oldest_at = nil, nil, nil, nil, nil
  for b = 0, 1 do
    local key, offset, size = ARGV[i + 3 * b], tonumber(ARGV[i + 3 * b + 1]), ARGV[i + 3 * b + 2]
    if not touched[key] then
      touched[key] = true
      if redis.call('EXISTS', key) == 0 then  -- allocated once, at its full size
        redis.call('SETRANGE', key, tonumber(size) - 1, '\\0')
      end
    end
    local bucket = redis.call('GETRANGE', key, offset, offset + M * S - 1)
    local live, first_free = 0, nil
    for slot = 0, S - 1 do
      local at = slot * M + 1
      local e = expiry(bucket, at + D)
      local where = {{key, offset + slot * M}}
      if e > now then
        live = live + 1
        if string.sub(bucket, at, at + D - 1) == digest then found = where end
        if not oldest_at or e < oldest_at then oldest, oldest_at = where, e end
      elseif not first_free then
        first_free = where
      end
    end
    if first_free and (not free or live < free_live) then free, free_live = first_free, live end
  end
  local chosen = found or free
  if not chosen then
    chosen = oldest
    redis.call('INCR', evicted)
  end
  redis.call('SETRANGE', chosen[1], chosen[2], digest .. until_)
end
for key in pairs(touched) do redis.call('PEXPIRE', key, ttl) end
redis.call('PEXPIRE', evicted, ttl)
return 1
"""


class RedisIdempotencyStore:
    """:class:`~ragtrace_consumers.model.IdempotencyStore` in a fixed-size table (module doc):
    at most ``capacity`` marks, each remembered for ``ttl_s`` unless evicted earlier."""

    def __init__(
        self,
        client: Client,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_s: float = 7 * 86400.0,
        capacity: int = DEFAULT_WRITTEN_CAPACITY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if capacity < _SLOTS:
            raise ValueError(f"capacity must be >= {_SLOTS} marks, got {capacity}")
        self._r = client
        prefix = _check_prefix(prefix)
        self._spaces = (
            [key_space(client, prefix, f"w{i}") for i in range(TRACE_SHARDS)]
            if is_cluster(client)
            else [prefix]
        )
        self._buckets = _buckets_for(math.ceil(capacity / _SLOTS / len(self._spaces)))
        self._ttl_ms = _ms(ttl_s)
        self._clock = clock
        self._mark = client.register_script(_MARK)

    def _where(self, trace_id: str, metric: str) -> tuple[str, list[tuple[str, int, int]], bytes]:
        """(key space, its two candidate buckets as (string, offset, string length), digest)."""
        h = hashlib.sha256(f"{trace_id}\x00{metric}".encode("utf-8", "surrogatepass")).digest()
        space = self._spaces[h[8] % len(self._spaces)]
        buckets = []
        for at in (9, 17):
            chunk, bucket = divmod(
                int.from_bytes(h[at : at + 8], "big") % self._buckets, _CHUNK_BUCKETS
            )
            size = min(_CHUNK_BUCKETS, self._buckets - chunk * _CHUNK_BUCKETS) * _BUCKET_BYTES
            buckets.append((f"{space}:written_marks:{chunk}", bucket * _BUCKET_BYTES, size))
        return space, buckets, h[:DIGEST_BYTES]

    @property
    def capacity(self) -> int:
        """The marks the table holds: the capacity asked for, rounded up to fill the memory it
        takes anyway."""
        return self._buckets * _SLOTS * len(self._spaces)

    def written(self, trace_id: str, metric: str) -> bool:
        return self.written_many([(trace_id, metric)])[0]

    def written_many(self, keys: Sequence[tuple[str, str]]) -> list[bool]:
        """:meth:`written` for several (trace, metric) pairs in one pipeline (one round trip
        per node)."""
        if not keys:
            return []
        where = [self._where(t, m) for t, m in keys]
        pipe = self._r.pipeline(transaction=False)
        for _, buckets, _ in where:
            for key, offset, _ in buckets:
                pipe.getrange(key, offset, offset + _BUCKET_BYTES - 1)
        now = int(self._clock() * 1000) - _EPOCH_MS
        raws = pipe.execute()
        return [
            _holds(bytes(raws[2 * i]) + bytes(raws[2 * i + 1]), digest, now)
            for i, (_, _, digest) in enumerate(where)
        ]

    def mark_written(self, trace_id: str, metric: str) -> None:
        self.mark_written_many([(trace_id, metric)])

    def mark_written_many(self, keys: Sequence[tuple[str, str]]) -> None:
        """:meth:`mark_written` for several pairs: one script per key space touched."""
        if not keys:
            return
        now = int(self._clock() * 1000) - _EPOCH_MS
        until = (now + self._ttl_ms).to_bytes(EXPIRY_BYTES, "big")
        by_space: dict[str, list[Any]] = {}
        for trace_id, metric in keys:
            space, buckets, digest = self._where(trace_id, metric)
            args = by_space.setdefault(space, [])
            for bucket in buckets:
                args.extend(bucket)
            args.extend([digest, until])
        for space, args in by_space.items():
            self._mark(keys=[f"{space}:written_marks:evicted"], args=[now, self._ttl_ms, *args])

    def evicted(self) -> int:
        """Marks evicted before their time so far (while the table keys live)."""
        raws = [self._r.get(f"{space}:written_marks:evicted") for space in self._spaces]
        return sum(int(raw) for raw in raws if raw is not None)


def _buckets_for(wanted: int) -> int:
    """At least ``wanted`` buckets, rounded up to fill the allocator's size class of the last
    string (jemalloc, Redis' default: 4 classes per doubling, 25 % apart at most)."""
    full, rest = divmod(max(1, wanted), _CHUNK_BUCKETS)
    if not rest:
        return full * _CHUNK_BUCKETS
    size = rest * _BUCKET_BYTES + 32  # the string's header and terminator, with room
    step = max(16, 1 << max(0, (size - 1).bit_length() - 3))
    fitted = ((size + step - 1) // step * step - 32) // _BUCKET_BYTES
    return full * _CHUNK_BUCKETS + min(_CHUNK_BUCKETS, max(rest, fitted))


def _holds(buckets: bytes, digest: bytes, now_ms: int) -> bool:
    for at in range(0, len(buckets) - MARK_BYTES + 1, MARK_BYTES):
        until = int.from_bytes(buckets[at + DIGEST_BYTES : at + MARK_BYTES], "big")
        if buckets[at : at + DIGEST_BYTES] == digest and until > now_ms:
            return True
    return False
