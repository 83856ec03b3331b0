"""A real Apache Kafka broker for tests, demos and benchmarks.

Single node, KRaft combined mode (broker + controller), listening on 127.0.0.1 on free ports,
run with `java` from the jars Maven fetches from Maven Central (dev/pom.xml) into a git-ignored
cache. Nothing here talks to any address other than loopback.

By hand:
    python -m dev.broker start [--port 9092]   # prints the bootstrap servers, runs in background
    python -m dev.broker status
    python -m dev.broker stop
    python -m dev.broker groups --describe --group my-group   # Kafka's kafka-consumer-groups
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dev.process import CACHE_DIR, REPO_ROOT, BackgroundProcess, free_port, log_tail, start_status_stop

POM = REPO_ROOT / "dev" / "pom.xml"
KAFKA_VERSION = "4.3.1"
LIBS_DIR = CACHE_DIR / f"kafka-{KAFKA_VERSION}" / "libs"

LOG4J2_CONFIG = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log_file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = info
logger.apache.name = org.apache
logger.apache.level = warn
logger.controller.name = org.apache.kafka.controller
logger.controller.level = warn
"""


class BrokerError(RuntimeError):
    """The local broker could not be fetched, started or stopped."""


def require(tool: str, what_for: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise BrokerError(
            f"`{tool}` is not on PATH; it is needed to {what_for}. "
            "Install OpenJDK 17 (java) and Apache Maven (mvn), e.g. `apt-get install openjdk-17-jdk-headless maven`."
        )
    return path


def fetch_jars() -> Path:
    """Resolve the Kafka jars into the cache (once); return the folder that holds them."""
    marker = LIBS_DIR / ".complete"
    wanted = hashlib.sha256(POM.read_bytes()).hexdigest()  # a changed pom resolves the jars again
    if marker.exists() and marker.read_text() == wanted:
        return LIBS_DIR
    mvn = require("mvn", "fetch the Kafka broker jars from Maven Central")
    shutil.rmtree(LIBS_DIR, ignore_errors=True)
    LIBS_DIR.mkdir(parents=True, exist_ok=True)
    cmd = [mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
           f"-DoutputDirectory={LIBS_DIR}", "-DincludeScope=runtime", f"-Dkafka.version={KAFKA_VERSION}"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise BrokerError("Maven could not fetch the Kafka jars:\n" + (result.stdout + result.stderr)[-3000:])
    marker.write_text(wanted)
    return LIBS_DIR


def java_command(main_class: str, *args: str, log4j_config: Path | None = None,
                 system_properties: Mapping[str, str] | None = None) -> list[str]:
    java = require("java", "run the Kafka broker")
    # C1 alone and the serial collector: a test's broker carries a few thousand records a second, and on a 2-core
    # machine a node starting with C2's compiler threads took the CPU its cluster's controller needed to answer
    # heartbeats in time (brokers fenced for seconds)
    cmd = [java, "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
           "-cp", str(fetch_jars() / "*")]
    if log4j_config is not None:
        cmd.append(f"-Dlog4j2.configurationFile={log4j_config}")
    cmd += [f"-D{name}={value}" for name, value in (system_properties or {}).items()]
    return cmd + [main_class, *args]


def kafka_tool(main_class: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run one of Kafka's command-line tools (e.g. the consumer-groups command) and capture its output."""
    quiet = CACHE_DIR / "log4j2-tools.properties"
    if not quiet.exists():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        quiet.write_text("status = error\nrootLogger.level = error\n")
    return subprocess.run(java_command(main_class, *args, log4j_config=quiet),
                          capture_output=True, text=True, timeout=timeout)


CONSUMER_GROUPS_MAIN = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


@dataclass
class Broker(BackgroundProcess):
    """One running broker process and where it keeps its data and log."""

    port: int
    controller_port: int
    data_dir: Path
    pid: int
    process: subprocess.Popen | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "broker.log"

    def consumer_groups(self, *args: str) -> str:
        """Kafka's own kafka-consumer-groups command against this broker; returns its stdout."""
        result = kafka_tool(CONSUMER_GROUPS_MAIN, "--bootstrap-server", self.bootstrap_servers, *args)
        if result.returncode != 0:
            raise BrokerError(f"kafka-consumer-groups {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
        return result.stdout

    def restart(self, timeout: float = 90) -> None:
        """Start this stopped broker again: same ports, same data, no formatting."""
        process = launch(self.data_dir)
        self.pid, self.process = process.pid, process
        await_answer(self, timeout)

    # stop() (from BackgroundProcess) sends SIGTERM first: the broker flushes and closes its logs

    def recent_log(self) -> str:
        return log_tail([self.data_dir / "broker.out", self.log_file], self.data_dir)

    def state(self) -> dict:
        return {"port": self.port, "controller_port": self.controller_port, "data_dir": str(self.data_dir),
                "pid": self.pid}

    @classmethod
    def from_state(cls, state: dict) -> Broker:
        return cls(state["port"], state["controller_port"], Path(state["data_dir"]), state["pid"])


def server_properties(port: int, controller_port: int, data_dir: Path) -> str:
    return "\n".join([
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"log.dirs={data_dir / 'logs'}",
        "num.partitions=1",
        "auto.create.topics.enable=false",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=4",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "transaction.state.log.num.partitions=4",
        "group.initial.rebalance.delay.ms=0",
        # a transaction open longer than its transaction.timeout.ms is aborted within a second rather than 10 s
        "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        # keep records whatever their timestamps (tests produce old CreateTimes); tests delete records explicitly
        "log.retention.ms=-1",
        # the log cleaner looks for logs to compact every second rather than every 15 s, so tests of compacted
        # topics wait for it briefly
        "log.cleaner.backoff.ms=1000",
        "",
    ])


def _broker_answers(bootstrap: str) -> bool:
    """True once the broker answers a metadata request through the real client."""
    from confluent_kafka.admin import AdminClient

    host, port = bootstrap.rsplit(":", 1)
    try:  # a plain TCP probe first, so the client does not log refused connections while Java boots
        socket.create_connection((host, int(port)), timeout=1).close()
    except OSError:
        return False
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 2000, "log_level": 2})
    try:
        metadata = admin.list_topics(timeout=2)
        return bool(metadata.brokers)
    except Exception:
        return False


def cluster_id() -> str:
    """A Kafka cluster id (URL-safe base64 of a UUID). Like Kafka's Uuid.randomUuid, never one starting with
    '-', which the storage tool's argument parser would take for an option."""
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not found.startswith("-"):
            return found


def start(port: int | None = None, data_dir: Path | None = None, timeout: float = 90) -> Broker:
    """Format storage, start the broker, and wait until it answers metadata requests."""
    port = port or free_port()
    controller_port = free_port()
    data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafkasource-broker-"))
    format_storage(data_dir, server_properties(port, controller_port, data_dir), cluster_id())
    process = launch(data_dir)
    broker = Broker(port, controller_port, data_dir, process.pid, process)
    await_answer(broker, timeout)
    return broker


def format_storage(data_dir: Path, properties: str, cluster: str, *format_args: str,
                   what: str = "the broker's storage") -> None:
    """Write a node's server.properties and log settings into `data_dir` and format its storage with
    Kafka's storage tool, which KRaft requires before the first start."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "server.properties").write_text(properties)
    log4j = data_dir / "log4j2.properties"
    log4j.write_text(LOG4J2_CONFIG.format(log_file=data_dir / "broker.log"))
    fmt = subprocess.run(java_command("kafka.tools.StorageTool", "format", "-t", cluster, "-c",
                                      str(data_dir / "server.properties"), *format_args, log4j_config=log4j),
                         capture_output=True, text=True, timeout=120)
    if fmt.returncode != 0:
        raise BrokerError(f"formatting {what} failed:\n{fmt.stdout}{fmt.stderr}")


def launch(data_dir: Path, system_properties: Mapping[str, str] | None = None, niceness: int = 0) -> subprocess.Popen:
    """Start the broker process over the configuration and storage already in `data_dir`, with JVM
    `system_properties` (settings Kafka reads only from the JVM, such as the URLs its OAuth code may call), at
    `niceness` (below 0 only where the user may raise a priority: elsewhere `nice` says so and runs it as it is)."""
    console = open(data_dir / "broker.out", "ab")
    command = java_command("kafka.Kafka", str(data_dir / "server.properties"),
                           log4j_config=data_dir / "log4j2.properties", system_properties=system_properties)
    process = subprocess.Popen((["nice", "-n", str(niceness)] if niceness else []) + command,
                               stdout=console, stderr=subprocess.STDOUT, start_new_session=True)
    console.close()
    return process


def await_answer(broker: Broker, timeout: float) -> None:
    """Wait until the broker answers metadata requests; BrokerError if it exits or stays silent."""
    broker.await_ready(lambda: _broker_answers(broker.bootstrap_servers), timeout, "the Kafka broker",
                       broker.bootstrap_servers, broker.recent_log, BrokerError)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dev.broker", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    start_cmd = sub.add_parser("start", help="start a broker in the background")
    start_cmd.add_argument("--port", type=int, default=9092)
    sub.add_parser("stop", help="stop the broker started with `start`")
    sub.add_parser("status", help="print the bootstrap servers of the running broker")
    sub.add_parser("fetch", help="only download the Kafka jars")
    sub.add_parser("groups", help="run kafka-consumer-groups against the running broker (pass its arguments)")
    args, rest = parser.parse_known_args(argv)

    try:
        if args.command == "fetch":
            print(fetch_jars())
            return 0
        return start_status_stop(
            args.command, "broker", "broker", f"Kafka {KAFKA_VERSION}",
            start=lambda: start(port=args.port, data_dir=CACHE_DIR / "broker-data" / str(args.port)),
            load=Broker.from_state, address=lambda broker: broker.bootstrap_servers,
            stopped=lambda broker: shutil.rmtree(broker.data_dir, ignore_errors=True),
            commands={"groups": lambda broker: print(broker.consumer_groups(*rest), end="")})
    except BrokerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
