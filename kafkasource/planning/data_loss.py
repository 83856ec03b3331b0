"""The one way kafkasource reports records it cannot read (data loss), on the driver and on executors."""

from __future__ import annotations

import logging

from kafkasource.errors import DataLossError

log = logging.getLogger(__name__)


def report_data_loss(what: str, fail_on_data_loss: bool, then: str) -> None:
    """Under failOnDataLoss=true raise, saying `what` was lost; else log it as a warning with what the query
    does instead (`then`, e.g. "skipping them")."""
    if fail_on_data_loss:
        raise DataLossError(f"{what}. Some data may have been lost. If this is expected, set "
                            "failOnDataLoss=false to skip what is gone and go on")
    log.warning("%s (failOnDataLoss=false: %s)", what, then)
