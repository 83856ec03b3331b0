"""A 3-node Apache Kafka cluster on loopback for failover tests, and where its roles are: a partition's leader and
in-sync replicas, the transaction coordinator of a transactional id, the coordinator of a consumer group.

Each node has its own free ports of 127.0.0.1 and its own data folder. Two layouts:

- "combined" (the default): each node is broker and controller (KRaft combined mode); the three controllers form
  the quorum, so the cluster keeps working while any one node is down.
- "dedicated": a fourth process is the only controller and is never killed, so the cluster's metadata keeps
  working with two of the three brokers down. With combined nodes it cannot: two of three controllers gone is no
  quorum, no leader may shrink its in-sync replicas, and an acks=all write waits until it times out instead of
  being refused with NOT_ENOUGH_REPLICAS.

Topics get replication factor 3 and min.insync.replicas 2 by default.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from dev.broker import Broker, BrokerError, await_answer, cluster_id, format_storage, launch
from dev.process import free_port, port_answers, wait

# partitions of the internal topics the coordinators live on; a key's coordinator leads the partition
# abs(javaHashCode(key)) % partitions of its topic (Kafka's own rule for both). Their counts differ: an exactly-once
# task's transactional id and marker group are one string, which with equal counts falls on the same partition of
# each topic, whose leaders the cluster places alike, so no test could find the two roles on different nodes
OFFSETS_PARTITIONS = 4
TRANSACTION_STATE_PARTITIONS = 3
CONTROLLER_ID = 4  # the dedicated layout's controller
CONTROLLER_NICENESS = -10
QUIET = 2  # the admin client logs only critical errors: refused connections to a killed node are expected


def _topic_defaults() -> list[str]:
    return [
        "auto.create.topics.enable=false",
        "default.replication.factor=3",
        "min.insync.replicas=2",
        "offsets.topic.replication.factor=3",
        f"offsets.topic.num.partitions={OFFSETS_PARTITIONS}",
        "transaction.state.log.replication.factor=3",
        "transaction.state.log.min.isr=2",
        f"transaction.state.log.num.partitions={TRANSACTION_STATE_PARTITIONS}",
        "share.coordinator.state.topic.replication.factor=3",
        "share.coordinator.state.topic.min.isr=2",
        "group.initial.rebalance.delay.ms=0",
        "log.retention.ms=-1",
        # a killed node is noticed in seconds, not the default 9 s of broker session timeout
        "broker.session.timeout.ms=4000",
        "broker.heartbeat.interval.ms=500",
        # a replica that stopped fetching leaves the in-sync replicas after 10 s rather than 30 s
        "replica.lag.time.max.ms=10000",
    ]


def _node_properties(node_id: int, ports: list[int], controller_ports: list[int], data_dir: Path,
                     dedicated: bool) -> str:
    port = ports[node_id - 1]
    if dedicated:
        voters = f"{CONTROLLER_ID}@127.0.0.1:{controller_ports[0]}"
        roles, listeners = "broker", f"PLAINTEXT://127.0.0.1:{port}"
    else:
        voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(controller_ports))
        roles = "broker,controller"
        listeners = f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_ports[node_id - 1]}"
    return "\n".join([
        f"process.roles={roles}",
        f"node.id={node_id}",
        f"controller.quorum.voters={voters}",
        f"listeners={listeners}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"log.dirs={data_dir / 'logs'}",
        *_topic_defaults(),
        "",
    ])


def _controller_properties(controller_port: int, data_dir: Path) -> str:
    return "\n".join([
        "process.roles=controller",
        f"node.id={CONTROLLER_ID}",
        f"controller.quorum.voters={CONTROLLER_ID}@127.0.0.1:{controller_port}",
        f"listeners=CONTROLLER://127.0.0.1:{controller_port}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT",
        f"log.dirs={data_dir / 'logs'}",
        # with eligible leader replicas (Kafka 4.1 on), the controller's cluster-wide min.insync.replicas is the one
        # leaders enforce: without it here, an acks=all write to a partition down to one in-sync replica succeeds
        *_topic_defaults(),
        "",
    ])


def java_hash(text: str) -> int:
    """Java's String.hashCode(): 31-fold over the UTF-16 code units, in 32-bit signed arithmetic."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key: str, partitions: int) -> int:
    """The partition of __consumer_offsets (a group id) or __transaction_state (a transactional id) whose leader
    coordinates `key`: Kafka's Utils.abs(key.hashCode()) % partitions, where Utils.abs(MIN_VALUE) is 0."""
    h = java_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def _sigkill(broker: Broker) -> None:
    if broker.process is not None:
        broker.process.kill()
        broker.process.wait(30)


@dataclass
class KafkaCluster:
    nodes: list[Broker]
    controller: Broker | None = None  # the dedicated layout's controller (its port: the controller port)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.bootstrap_servers for node in self.nodes)

    def node(self, node_id: int) -> Broker:
        return self.nodes[node_id - 1]

    def kill(self, node_id: int) -> None:
        """SIGKILL one node: no clean shutdown, no leadership handed over first."""
        _sigkill(self.node(node_id))

    def stop_node(self, node_id: int) -> None:
        """Stop one node cleanly (SIGTERM): it hands its leaderships over and closes its logs first."""
        self.node(node_id).stop()

    def restart(self, node_id: int, timeout: float = 90) -> None:
        self.node(node_id).restart(timeout)

    def restart_down(self, timeout: float = 90) -> None:
        """Start every node that is not running (a test that failed may have left some down)."""
        for node_id, node in enumerate(self.nodes, 1):
            if not node.is_running():
                self.restart(node_id, timeout)

    def fully_replicated(self) -> bool:
        """Whether every partition of every topic, the coordinators' own included, has a leader and all its
        replicas in sync (False while the metadata cannot be read)."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": QUIET})
        try:
            topics = admin.list_topics(timeout=10).topics
        except KafkaException:
            return False
        return all(p.leader >= 0 and len(p.isrs) == len(p.replicas) for t in topics.values()
                   for p in t.partitions.values())

    def bounce(self, node_id: int, how: str, down: float = 10, timeout: float = 180) -> float:
        """One node stopped (`how`: "clean", SIGTERM, or "kill", SIGKILL), kept down `down` seconds and started
        again, then waited for until every partition is fully replicated again, as an operator's rolling restart
        waits before the next node. The seconds from its stop to that point."""
        began = time.monotonic()
        self.kill(node_id) if how == "kill" else self.stop_node(node_id)
        time.sleep(down)
        self.restart(node_id)
        if not wait(self.fully_replicated, timeout, interval=0.5):
            raise BrokerError(f"node {node_id} restarted, but some partition was not fully replicated again "
                              f"within {timeout:.0f} s")
        return time.monotonic() - began

    def rolling_restart(self, how: str, down: float = 10, timeout: float = 180) -> list[tuple[int, float]]:
        """Each node in turn bounced (see bounce): each with the seconds from its stop to being in sync again."""
        return [(node_id, self.bounce(node_id, how, down, timeout)) for node_id in range(1, len(self.nodes) + 1)]

    def stop(self) -> None:
        """End every process of the cluster with SIGKILL: its logs are thrown away after, and a clean stop, one
        node after another, lets the last combined node wait out its whole shutdown timeout (30 s) for a
        controller quorum that is gone."""
        for broker in [*self.nodes, *([self.controller] if self.controller is not None else [])]:
            _sigkill(broker)
        shutil.rmtree(self.nodes[0].data_dir.parent, ignore_errors=True)  # start_cluster's folder of them all

    # -- where the roles are: asked of the cluster's metadata, through a new client each time (one that saw a
    # killed node's leaderships may keep them until its next refresh)

    def _partition(self, topic: str, partition: int):
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": QUIET})
        return admin.list_topics(topic, timeout=10).topics[topic].partitions[partition]

    def leader(self, topic: str, partition: int) -> int:
        """The node leading the partition (-1 while it has none)."""
        return self._partition(topic, partition).leader

    def in_sync(self, topic: str, partition: int) -> list[int]:
        """The partition's in-sync replicas, as its metadata says."""
        return sorted(self._partition(topic, partition).isrs)

    def transaction_coordinator(self, transactional_id: str) -> int:
        """The node coordinating the transactions of `transactional_id`: the leader of its __transaction_state
        partition (confluent-kafka's admin client has no FindCoordinator for transactional ids)."""
        return self.leader("__transaction_state", coordinator_partition(transactional_id, TRANSACTION_STATE_PARTITIONS))

    def group_coordinator(self, group: str) -> int:
        """The node coordinating `group` (its commits, a sink's batch markers): the leader of its
        __consumer_offsets partition, which holds for a group no consumer ever joined too."""
        return self.leader("__consumer_offsets", coordinator_partition(group, OFFSETS_PARTITIONS))


def start_cluster(size: int = 3, timeout: float = 120, layout: str = "combined") -> KafkaCluster:
    """Format and start `size` nodes (and, in the "dedicated" layout, their controller) and wait until each answers
    metadata requests."""
    dedicated = layout == "dedicated"
    ports = [free_port() for _ in range(size)]
    controller_ports = [free_port() for _ in range(1 if dedicated else size)]
    root = Path(tempfile.mkdtemp(prefix="kafkasource-cluster-"))
    cluster = cluster_id()
    processes: list[Broker] = []
    controller = None
    try:
        if dedicated:
            data_dir = root / "controller"
            format_storage(data_dir, _controller_properties(controller_ports[0], data_dir), cluster,
                           what="the controller")
            # ahead of everything else on the machine: a controller that a busy 2-core machine kept from running
            # for 2.5 s handled the brokers' heartbeats late and fenced a live broker (its session is 4 s), whose
            # leaderships then moved under the clients for nothing. Its own machine would give it that CPU.
            process = launch(data_dir, niceness=CONTROLLER_NICENESS)
            controller = Broker(controller_ports[0], controller_ports[0], data_dir, process.pid, process)
        for node_id in range(1, size + 1):
            data_dir = root / f"node{node_id}"
            format_storage(data_dir, _node_properties(node_id, ports, controller_ports, data_dir, dedicated), cluster,
                           what=f"node {node_id}")
        for node_id in range(1, size + 1):  # all at once: each waits for the quorum of the others
            data_dir = root / f"node{node_id}"
            process = launch(data_dir)
            processes.append(Broker(ports[node_id - 1], controller_ports[min(node_id, len(controller_ports)) - 1],
                                    data_dir, process.pid, process))
        deadline = time.monotonic() + timeout
        if controller is not None:
            controller.await_ready(lambda: port_answers(controller_ports[0]), timeout, "the controller",
                                   f"127.0.0.1:{controller_ports[0]}", controller.recent_log, BrokerError)
        for node in processes:
            await_answer(node, max(1.0, deadline - time.monotonic()))
    except BaseException:
        for node in processes:
            node.stop()
        if controller is not None:
            controller.stop()
        raise
    return KafkaCluster(processes, controller)
