"""The floor of bench/latency.py: a Python streaming source and sink that do no I/O to speak of, so that a
record's latency through a query between them is what Spark's micro-batch machinery adds by itself.

The source is a clock: tick i of `count` is "sent" at `start + i / rate`, and `latestOffset` reports at once
every tick whose time has come. The start time is not known when the query starts: the driver writes it to
the file `startFile` names once the query's first trigger completed (as the Kafka rows start their producer
only then), and until that file exists the source has no ticks. Each row's value is its tick's time; the sink
appends `arrival - value` (seconds) for each row it is handed to the file `latenciesFile` names.

    spark.dataSource.register(FloorSource); spark.dataSource.register(FloorSink)
    spark.readStream.format("latency_floor_source").option("startFile", F).option("rate", "10")
        .option("count", "250").load().writeStream.format("latency_floor_sink").option("latenciesFile", G)
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    WriterCommitMessage,
)


class TickRange(InputPartition):
    """Ticks [first, end) of a clock that started at `start` and ticks `rate` times a second. It carries the
    start and rate because read() runs in an executor's Python worker, which has none of the driver-side
    reader's state."""

    def __init__(self, first: int, end: int, start: float, rate: float) -> None:
        super().__init__((first, end))
        self.first, self.end, self.start, self.rate = first, end, start, rate


class ClockReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.start_file = Path(options["startFile"])
        self.rate = float(options["rate"])
        self.count = int(options["count"])
        self.start: float | None = None  # read from start_file once it exists; the reader lives as long as the query

    def _start(self) -> float | None:
        if self.start is None and self.start_file.exists():  # the driver renames it into place: whole or absent
            self.start = float(self.start_file.read_text())
        return self.start

    def initialOffset(self) -> dict:
        return {"tick": 0}

    # Two parameters make pyspark 4.2+ call it with (start, limit) (admission control, always ReadAllAvailable
    # here, since this source sets no limit); pyspark 4.0 and 4.1 call it with none. A clock has nothing to
    # limit, so both get the same answer.
    def latestOffset(self, start: dict | None = None, limit: object = None) -> dict:
        began = self._start()
        if began is None or time.time() < began:
            return {"tick": 0}
        return {"tick": min(self.count, math.floor((time.time() - began) * self.rate) + 1)}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        began = self._start()
        if end["tick"] <= start["tick"] or began is None:
            return []
        return [TickRange(start["tick"], end["tick"], began, self.rate)]  # one partition, as a trickle needs

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        assert isinstance(partition, TickRange)
        for tick in range(partition.first, partition.end):
            yield (partition.start + tick / partition.rate,)


class FloorSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "latency_floor_source"

    def schema(self) -> str:
        return "value double"

    def streamReader(self, schema) -> DataSourceStreamReader:
        return ClockReader(self.options)


class LatencyWriter(DataSourceStreamWriter):
    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, iterator) -> WriterCommitMessage:
        lines = [f"{time.time() - row.value!r}\n" for row in iterator]  # each row's arrival as the task takes it
        if lines:
            # one append per task (O_APPEND): the driver counts whole lines while tasks write
            with open(self.path, "a") as out:
                out.write("".join(lines))
        return WriterCommitMessage()

    def commit(self, messages, batchId: int) -> None:
        pass  # the rows are in the file already: nothing to make visible

    def abort(self, messages, batchId: int) -> None:
        pass


class FloorSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return "latency_floor_sink"

    def streamWriter(self, schema, overwrite: bool) -> DataSourceStreamWriter:
        return LatencyWriter(self.options["latenciesFile"])
