"""What a commit of ours carries beside its offset: who made it, and the id of the topic the offset is in.

Kafka keeps a short text with every committed offset (offset.metadata.max.bytes, 4096 by default). Ours is
small JSON. The topic id is what lets a query restarted from its checkpoint, or a new query starting from
the group's commits, tell that the topic was deleted and created again since the commit: the name is the
same, the offsets may even exist in the new log, but they are positions in another log.
"""

from __future__ import annotations

import json

COMMITTER = "kafkasource"


def commit_metadata(topic_id: str | None) -> str:
    return json.dumps({"by": COMMITTER, **({"topicId": topic_id} if topic_id else {})}, separators=(",", ":"))


def committed_topic_id(metadata: str | None) -> str | None:
    """The topic id a commit of ours was made against; None for commits by others or without one."""
    try:
        value = json.loads(metadata or "")
    except ValueError:
        return None
    if isinstance(value, dict) and value.get("by") == COMMITTER and isinstance(value.get("topicId"), str):
        return value["topicId"]
    return None
