"""Trigger.AvailableNow for the jobs where Spark has no such trigger for Python sources (pyspark 4.0 and 4.1).

There Spark wraps the source itself: it asks latestOffset() once, runs one batch and ends the run without calling
the reader again. So a rate-limited run reads one batch (maxOffsetsPerTrigger records) instead of the backlog,
and the reader commits that batch to the group only at the next run's start (docs/support.md). The jobs know their
trigger and see each run end, so on those versions they
- fix the log ends when they start, and start the query again (same checkpoint) while a run ended below them and
  moved forward: the backlog as it stood at the start, in batches of the rate limit, as on Spark 4.2;
- once the last run has ended without an error, commit the end of its last completed batch (its last progress)
  through the committer the reader uses. A failed run raised before this point and commits nothing.
"""

from __future__ import annotations

import json
import logging

from kafkasource.options import SourceOptions
from kafkasource.planning.offsets import from_json_dict
from kafkasource.planning.partitions import Positions
from kafkasource.runtime.spark_api import ADMISSION_CONTROL

log = logging.getLogger("kafkasource.jobs")


def emulated(available_now: bool) -> bool:
    """Whether the job has to make up for Spark here: an AvailableNow run on a Spark without admission control."""
    return available_now and not ADMISSION_CONTROL


def log_ends(options: SourceOptions) -> Positions:
    """The ends of the subscription's partitions now: where the job's AvailableNow runs stop."""
    from kafkasource.cluster.client import KafkaClient

    client = KafkaClient(options)
    try:
        return client.end(options.subscription.partitions(client.topics()))
    finally:
        client.close()


def completed_end(query) -> Positions | None:
    """The source's end in the query's last progress (a completed batch's, or an idle trigger's: the same). Read
    from the progress's JSON: pyspark 4.0's `SourceProgress.endOffset` is the Python text of a parsed dict."""
    progress = query.lastProgress
    if progress is None:
        return None
    sources = json.loads(progress.json)["sources"]
    end = sources[0].get("endOffset") if sources else None
    if not end:
        return None
    return from_json_dict(json.loads(end) if isinstance(end, str) else end)


def run_again(query, target: Positions, before: Positions | None) -> bool:
    """Whether the run that ended (`query`) left records below the target and moved forward from `before` (a run
    that read nothing would read nothing again: a deleted partition, records held back by a transaction)."""
    end = completed_end(query)
    if end is None or end == before:
        return False
    return any(end.get(tp, -1) < offset for tp, offset in target.items())


def commit_run_end(query, options: SourceOptions) -> Positions | None:
    """Commit the last completed batch of the job's last run to the group; what was committed."""
    from kafkasource.cluster.client import KafkaClient
    from kafkasource.commit.committer import OffsetCommitter
    from kafkasource.commit.outcomes import OutcomeSender

    positions = completed_end(query)
    if options.group_id is None or options.commit_mode == "none" or not positions:
        return None
    client = KafkaClient(options)
    committer = OffsetCommitter(
        options.group_id,
        options.commit_mode,
        options.commit_timeout_ms,
        lambda on_commit: client.new_group_consumer(on_commit=on_commit),
        OutcomeSender(),
    )
    try:
        committer.commit_final(positions)
    finally:
        committer.close()
        client.close()
    log.info("committed the last batch to group %s (this Spark gives the reader no moment to)", options.group_id)
    return positions
