"""The Kafka side of ``ragtrace consume``: poll → decode (or dead-letter) → ingest → commit,
while :class:`~ragtrace_consumers.scoring.workers.ScoringWorkers` score due traces concurrently.

Each step has one job, in its own module, and :class:`KafkaRunner` (``runner``) composes them.
The messages come from :class:`~ragtrace_consumers.intake.kafka_poll.KafkaIntake` (the intake
room: poll the consumer and decode each message into span records, sampling at decode dropping
unwanted traces before they are built); the steps share one type, :class:`Step` (``step``:
``tick`` on every iteration, ``join`` at shutdown):

* ``dead_letters`` — a message that cannot be decoded goes to the dead-letter topic with its
  reason and origin in headers; offsets are committed only once the broker acknowledged every
  dead letter before them (the ones it did not take are sent again);
* ``ingest`` — store the spans (``Pipeline.ingest``, durable when it returns), then make their
  offsets committable; commit every ``commit_interval_s``, on partition revocation and on
  shutdown — never by auto-commit. A failed store call seeks back and re-reads;
* ``lag_probe`` — once a second, the held partitions' lag as the consumer-lag metric;
* ``membership`` — subscription with the topic's metadata loaded before the first join, the
  rebalance listener, pausing the partitions while every worker is busy, and the rejoin
  watchdog for a membership stuck unsettled.

Scoring needs no offsets: it works from the TraceStore, whose leases hand a dead replica's
traces to another one. Outages (:mod:`ragtrace_consumers.runtime.retry`): store calls wait out a Redis
outage inside the stores (ingest holds its batch, nothing is re-read or dead-lettered twice),
Kafka calls go through the ``kafka`` retrier, a failed commit is retried at the next interval;
the loop never exits for an outage. A replica is stateless apart from its partitions: scale out
with more replicas (same group) and more partitions.
"""

from __future__ import annotations

from ragtrace_consumers.runtime.kafka.dead_letters import (
    DLQ_HEADER_OFFSET,
    DLQ_HEADER_PARTITION,
    DLQ_HEADER_TOPIC,
    DeadLetters,
)
from ragtrace_consumers.runtime.kafka.ingest import Ingest, Offsets
from ragtrace_consumers.runtime.kafka.lag_probe import LagProbe
from ragtrace_consumers.runtime.kafka.membership import Membership
from ragtrace_consumers.runtime.kafka.runner import KafkaRunner
from ragtrace_consumers.runtime.kafka.step import Step

__all__ = [
    "DLQ_HEADER_OFFSET",
    "DLQ_HEADER_PARTITION",
    "DLQ_HEADER_TOPIC",
    "DeadLetters",
    "Ingest",
    "KafkaRunner",
    "LagProbe",
    "Membership",
    "Offsets",
    "Step",
]
