"""kafkasource's own committer of a group's offsets, made for a test's broker as the stream reader makes it."""

from __future__ import annotations

from confluent_kafka import Consumer

from kafkasource.commit.committer import OffsetCommitter


def committer(kafka, group, mode, timeout_ms=5000):
    """An OffsetCommitter of `group` in commitMode `mode`, its consumers on `kafka`'s brokers."""
    def factory(on_commit):
        return Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group, "enable.auto.commit": False,
                         "on_commit": on_commit})
    return OffsetCommitter(group, mode, timeout_ms, factory)
