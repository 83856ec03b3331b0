"""What a streaming query's checkpoint holds, read and changed as the tests need: where a batch ended in the
source's partitions (its offset log), and its commit log's last entry taken away, as a driver that died before
recording the batch leaves it."""

from __future__ import annotations

import json
from pathlib import Path


def batch_end(checkpoint: Path, topic: str, batch: int) -> dict[int, int]:
    """Where batch `batch` ended in the source topic's partitions, from the checkpoint's offset log ({} before
    batch 0). An offset log entry is its version, its metadata, then the source's end offsets."""
    if batch < 0:
        return {}
    lines = (checkpoint / "offsets" / str(batch)).read_text().splitlines()
    return {int(p): o for p, o in json.loads(lines[2])[topic].items()}


def forget_last_commit(checkpoint: Path) -> int:
    """Delete the commit log's last entry, as if the driver died after the batch's tasks wrote and before Spark
    recorded the batch: the next start runs that batch again. Its id."""
    commits = checkpoint / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    return last
