"""The transport ceiling: a Python streaming source that reads nothing and hands Spark ready Arrow batches.

Same schema, partitioning and batch sizes as kafkasource's native path, and rows that carry the drained
topic's name (so a row has as many bytes as one read from Kafka), with no Kafka behind it: each task yields
one prebuilt batch over and over. What Spark itself costs to take Arrow batches from a Python data
source and turn them into rows is what this drains at; no Python source can read faster through Spark.

    format("kafkasource-bench-ceiling").option("partitions", 4).option("recordsPerPartition", 300000)
                                       .option("valueBytes", 1000).option("topic", "orders")
"""

from __future__ import annotations

import os

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from kafkasource.reading.settings import BATCH_BYTES, BATCH_ROWS
from kafkasource.records.schema import arrow_schema, schema_ddl
from kafkasource.runtime.spark_api import SupportsTriggerAvailableNow  # a stand-in before pyspark 4.2

NAME = "kafkasource-bench-ceiling"
VALUE_POOL = 4096  # distinct random values, as in the Kafka data sets


class CeilingSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return schema_ddl(include_headers=False)

    def streamReader(self, schema):
        return CeilingReader(int(self.options["partitions"]), int(self.options["recordsPerPartition"]),
                             int(self.options["valueBytes"]), self.options.get("topic", NAME))


class CeilingReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, partitions: int, records: int, value_bytes: int, topic: str):
        self.partitions_count, self.records, self.value_bytes, self.topic = partitions, records, value_bytes, topic

    def initialOffset(self) -> dict:
        return {"offset": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        pass

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:  # pyspark 4.0/4.1 pass neither
        return {"offset": self.records}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return [InputPartition(end["offset"] - start["offset"]) for _ in range(self.partitions_count)]

    def read(self, partition: InputPartition):
        rows = max(1, min(BATCH_ROWS, BATCH_BYTES // self.value_bytes, partition.value))
        batch = _batch(rows, self.value_bytes, self.topic)
        left = partition.value
        while left > 0:
            yield batch if left >= rows else batch.slice(0, left)
            left -= rows

    def commit(self, end: dict) -> None:
        pass


_values: dict[int, list[bytes]] = {}  # value size -> random values, made once per worker process


def _batch(rows: int, value_bytes: int, topic: str):
    import pyarrow as pa

    values = _values.setdefault(value_bytes, [os.urandom(value_bytes) for _ in range(VALUE_POOL)])
    schema = arrow_schema(include_headers=False)
    columns = {"key": pa.nulls(rows, pa.binary()),
               "value": pa.array([values[i % VALUE_POOL] for i in range(rows)], pa.binary()),
               "topic": pa.array([topic] * rows), "partition": pa.array([0] * rows, pa.int32()),
               "offset": pa.array(range(rows), pa.int64()),
               "timestamp": pa.array([0] * rows, schema.field("timestamp").type),
               "timestampType": pa.array([0] * rows, pa.int32())}
    return pa.RecordBatch.from_pydict(columns, schema=schema)
