"""A single-node Apache Kafka broker (KRaft: broker and controller in one JVM) on loopback.

Started from the jars ``scripts/provision.sh`` put in the cache, the way Kafka's own
``bin/kafka-storage.sh format --standalone`` and ``bin/kafka-server-start.sh`` would: a generated
``server.properties`` (every replication factor 1), a formatted log directory, then
``kafka.Kafka``. Heap is capped at 512 MiB; the JVM uses ~0.7 GB RSS.
"""

from __future__ import annotations

import base64
import contextlib
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .process import ServiceError, ServiceProcess, free_port, tcp_open

__all__ = ["JVM_OPTS", "KafkaBroker", "create_topic", "start_kafka"]

JVM_OPTS = [
    "-Xmx512m",
    "-Xms256m",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:TieredStopAtLevel=1",  # C1 only: much faster start on 2 cores; throughput is ample
    "-Djava.awt.headless=true",
]

_LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.controller.name = org.apache.kafka.controller
logger.controller.level = INFO
"""


def _server_properties(port: int, controller_port: int, data_dir: Path) -> str:
    return f"""\
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:{controller_port}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={data_dir}
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.retention.hours=24
# Sized with the collector's Kafka exporter (producer.max_message_bytes 8 MiB): a trace that
# passes the SDK's caps fits (collector/README.md, "Message size").
message.max.bytes=10485760
replica.fetch.max.bytes=10485760
"""


def _cluster_id() -> str:
    """A Kafka cluster ID: a random UUID, base64url without padding (as StorageTool random-uuid)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):  # Kafka avoids IDs that look like a command-line option
            return cid


@dataclass
class KafkaBroker:
    """A running broker; ``bootstrap`` is ``127.0.0.1:PORT``."""

    port: int
    controller_port: int
    workdir: Path
    process: ServiceProcess

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.stop()

    def restart(self, down_s: float = 0.0) -> KafkaBroker:
        """Stop (SIGTERM: a clean shutdown), stay down ``down_s`` s, start on the same ports and
        log directory (not formatted again: topics, offsets and groups survive)."""
        import time

        self.stop()
        time.sleep(down_s)
        return start_kafka(self.workdir, self.port, self.controller_port)


def _java(libs: Path, log4j: Path, main: str, *args: str) -> list[str]:
    return [
        "java",
        *JVM_OPTS,
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        f"{libs}/*",
        main,
        *args,
    ]


def start_kafka(
    workdir: Path,
    port: int | None = None,
    controller_port: int | None = None,
    timeout: float = 60.0,
) -> KafkaBroker:
    """Format a fresh log dir and start the broker; return once it has started and listens."""
    libs = paths.kafka_libs()
    port = port or free_port()
    controller_port = controller_port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    data_dir = workdir / "data"
    props = workdir / "server.properties"
    props.write_text(_server_properties(port, controller_port, data_dir))
    log4j = workdir / "log4j2.properties"
    log4j.write_text(_LOG4J2)

    if not (data_dir / "meta.properties").exists():
        fmt = subprocess.run(
            _java(
                libs,
                log4j,
                "kafka.tools.StorageTool",
                "format",
                "--standalone",
                "-t",
                _cluster_id(),
                "-c",
                str(props),
            ),
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        (workdir / "format.log").write_text(fmt.stdout + fmt.stderr)
        if fmt.returncode != 0:
            raise ServiceError(
                f"kafka storage format failed (exit {fmt.returncode}):\n{fmt.stdout}{fmt.stderr}"
            )

    argv = _java(libs, log4j, "kafka.Kafka", str(props))
    proc = ServiceProcess("kafka", argv, workdir, stop_grace_s=15.0).start()

    def started() -> bool:
        if not tcp_open("127.0.0.1", port):
            return False
        return "Kafka Server started" in proc.log_path.read_text(errors="replace")

    proc.wait_ready(started, timeout, f"'Kafka Server started' and 127.0.0.1:{port}")
    return KafkaBroker(port, controller_port, workdir, proc)


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 3,
    timeout: float = 30.0,
    config: dict[str, str] | None = None,
) -> str:
    """Create a topic (idempotent) with kafka-python's admin client and wait until it has leaders."""
    from kafka import KafkaConsumer
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="ragtrace-fixtures")
    try:
        with contextlib.suppress(TopicAlreadyExistsError):
            admin.create_topics(
                [
                    NewTopic(
                        name,
                        num_partitions=partitions,
                        replication_factor=1,
                        topic_configs=config or {},
                    )
                ],
                timeout_ms=int(timeout * 1000),
            )
    finally:
        admin.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        deadline = time.monotonic() + timeout
        while True:
            found = consumer.partitions_for_topic(name)
            if found and len(found) >= partitions:
                return name
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"topic {name!r} has no {partitions} partitions after {timeout} s"
                )
            time.sleep(0.1)
    finally:
        consumer.close()
