"""A 3-node Apache Kafka cluster on loopback for failover tests.

Each node is broker and controller (KRaft combined mode) on its own free ports of 127.0.0.1, with
its own data folder; the three controllers form the quorum, so the cluster keeps working while any
one node is down. Topics get replication factor 3 and min.insync.replicas 2 by default.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from dev.broker import Broker, await_answer, cluster_id, format_storage, launch
from dev.process import free_port


def _node_properties(node_id: int, ports: list[int], controller_ports: list[int], data_dir: Path) -> str:
    voters = ",".join(f"{i + 1}@127.0.0.1:{port}" for i, port in enumerate(controller_ports))
    port, controller_port = ports[node_id - 1], controller_ports[node_id - 1]
    return "\n".join([
        "process.roles=broker,controller",
        f"node.id={node_id}",
        f"controller.quorum.voters={voters}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"log.dirs={data_dir / 'logs'}",
        "auto.create.topics.enable=false",
        "default.replication.factor=3",
        "min.insync.replicas=2",
        "offsets.topic.replication.factor=3",
        "offsets.topic.num.partitions=4",
        "transaction.state.log.replication.factor=3",
        "transaction.state.log.min.isr=2",
        "share.coordinator.state.topic.replication.factor=3",
        "share.coordinator.state.topic.min.isr=2",
        "group.initial.rebalance.delay.ms=0",
        "log.retention.ms=-1",
        # a killed node is noticed in seconds, not the default 9 s of broker session timeout
        "broker.session.timeout.ms=4000",
        "broker.heartbeat.interval.ms=500",
        "",
    ])


@dataclass
class KafkaCluster:
    nodes: list[Broker]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.bootstrap_servers for node in self.nodes)

    def node(self, node_id: int) -> Broker:
        return self.nodes[node_id - 1]

    def kill(self, node_id: int) -> None:
        """SIGKILL one node: no clean shutdown, no leadership handed over first."""
        node = self.node(node_id)
        if node.process is not None:
            node.process.kill()
            node.process.wait(30)

    def restart(self, node_id: int, timeout: float = 90) -> None:
        self.node(node_id).restart(timeout)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def start_cluster(size: int = 3, timeout: float = 120) -> KafkaCluster:
    """Format and start `size` nodes and wait until each answers metadata requests."""
    ports = [free_port() for _ in range(size)]
    controller_ports = [free_port() for _ in range(size)]
    root = Path(tempfile.mkdtemp(prefix="kafkasource-cluster-"))
    cluster = cluster_id()
    processes = []
    try:
        for node_id in range(1, size + 1):
            data_dir = root / f"node{node_id}"
            format_storage(data_dir, _node_properties(node_id, ports, controller_ports, data_dir), cluster,
                           what=f"node {node_id}")
        for node_id in range(1, size + 1):  # all at once: each waits for the quorum of the others
            data_dir = root / f"node{node_id}"
            process = launch(data_dir)
            processes.append(Broker(ports[node_id - 1], controller_ports[node_id - 1], data_dir, process.pid, process))
        deadline = time.monotonic() + timeout
        for node in processes:
            await_answer(node, max(1.0, deadline - time.monotonic()))
    except BaseException:
        for node in processes:
            node.stop()
        raise
    return KafkaCluster(processes)
