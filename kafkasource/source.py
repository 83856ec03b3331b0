"""The DataSource: format("kafkasource"), its schema, and its readers."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from kafkasource.formats.decoding import output_schema
from kafkasource.options import parse_options


class KafkaDataSource(DataSource):
    """spark.readStream.format("kafkasource") / spark.read.format("kafkasource")."""

    def __init__(self, options):
        super().__init__(options)
        # validated once, at load(); whether a stream or a batch read follows is only known later, and each reader
        # puts its own defaults into these same options (the parse builds a librdkafka client to check kafka.*)
        self._options = parse_options(options)

    @classmethod
    def name(cls) -> str:
        return "kafkasource"

    def schema(self):
        return output_schema(self._options.decoding, self._options.include_headers)

    def streamReader(self, schema: StructType):
        from kafkasource.stream import KafkaStreamReader

        return KafkaStreamReader(self._options)

    def reader(self, schema: StructType):
        from kafkasource.batch import KafkaBatchReader

        return KafkaBatchReader(self._options)
