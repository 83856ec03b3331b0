"""What of Spark's Python Data Source API the installed pyspark offers, found by looking (not by version strings),
and stand-ins where an older pyspark lacks a piece. Every module that needs one of these imports it from here.

- Admission control for Python stream readers (`pyspark.sql.streaming.datasource`: `ReadLimit` and its kinds,
  `SupportsTriggerAvailableNow`) comes with pyspark 4.2. On 4.0 and 4.1 Spark calls `latestOffset()` with no
  argument, never asks for a read limit and wraps the source for Trigger.AvailableNow itself (one batch, up to
  the one `latestOffset()` it asks at the start). The stand-ins below let the reader keep one code path: it
  builds its own limit from its options and keeps its own place (kafkasource/stream.py).
- `DataSourceStreamArrowWriter` comes with pyspark 4.1. pyspark 4.0's write worker hands Arrow record batches to
  any writer that is an instance of `DataSourceArrowWriter`, stream writers included (it tests that class
  before it converts to rows), so on 4.0 the sink's stream writer is a stream writer and an Arrow writer at once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamWriter

if TYPE_CHECKING:  # the checks run against the pyspark of constraints.txt, which has every piece
    from pyspark.sql.datasource import DataSourceStreamArrowWriter
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        ReadMinRows,
        SupportsTriggerAvailableNow,
    )

    ADMISSION_CONTROL = True
else:
    try:
        from pyspark.sql.streaming.datasource import (
            ReadAllAvailable,
            ReadLimit,
            ReadMaxRows,
            ReadMinRows,
            SupportsTriggerAvailableNow,
        )

        ADMISSION_CONTROL = True
    except ImportError:  # pyspark 4.0, 4.1
        ADMISSION_CONTROL = False

        class ReadLimit:
            """The reader's own read limit, built from its options (Spark never hands one over here)."""

        @dataclass
        class ReadAllAvailable(ReadLimit):
            pass

        @dataclass
        class ReadMinRows(ReadLimit):
            min_rows: int

        @dataclass
        class ReadMaxRows(ReadLimit):
            max_rows: int

        class SupportsTriggerAvailableNow(ABC):
            """Not Spark's interface (there is none): Spark never calls prepareForTriggerAvailableNow here."""

            @abstractmethod
            def prepareForTriggerAvailableNow(self) -> None: ...

    try:
        from pyspark.sql.datasource import DataSourceStreamArrowWriter
    except ImportError:  # pyspark 4.0: its write worker feeds Arrow to any DataSourceArrowWriter

        class DataSourceStreamArrowWriter(DataSourceStreamWriter, DataSourceArrowWriter):
            """A stream writer that pyspark 4.0's write worker hands Arrow record batches. DataSourceStreamWriter
            comes first, so commit and abort are the stream's, with the batch id."""


__all__ = [
    "ADMISSION_CONTROL",
    "DataSourceStreamArrowWriter",
    "ReadAllAvailable",
    "ReadLimit",
    "ReadMaxRows",
    "ReadMinRows",
    "SupportsTriggerAvailableNow",
]
