"""The one way kafkasource reports records it cannot read (data loss), on the driver and on executors."""

from __future__ import annotations

import logging

from kafkasource.errors import DataLossError
from kafkasource.planning.partitions import Positions, TopicPartition, listing, partition_name

log = logging.getLogger(__name__)


def report_data_loss(what: str, fail_on_data_loss: bool, then: str) -> None:
    """Under failOnDataLoss=true raise, saying `what` was lost; else log it as a warning with what the query
    does instead (`then`, e.g. "skipping them")."""
    if fail_on_data_loss:
        raise DataLossError(
            f"{what}. Some data may have been lost. If this is expected, set "
            "failOnDataLoss=false to skip what is gone and go on"
        )
    log.warning("%s (failOnDataLoss=false: %s)", what, then)


def unread_records(partitions: list[TopicPartition], positions: Positions, seen: Positions) -> str:
    """For a data loss message: the records of `partitions` a stream had seen in the log (`seen`, its previous
    look) but not read (it stood at `positions`)."""
    lost = {tp: seen[tp] - positions[tp] for tp in partitions if seen.get(tp, -1) > positions[tp]}
    if not lost:
        return "; it held no record the query had seen and not read"
    ranges = listing(
        [
            f"{partition_name(t, p)} {positions[(t, p)]}..{positions[(t, p)] + n - 1}"
            for (t, p), n in sorted(lost.items())
        ]
    )
    total = sum(lost.values())
    return f"; at least {total} record{'' if total == 1 else 's'} the query had not read are lost ({ranges})"
