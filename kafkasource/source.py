"""The DataSource: format("kafkasource"), its schema, its readers and its writers."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from kafkasource.formats.decoding import output_schema
from kafkasource.options import SourceOptions, parse_options


class KafkaDataSource(DataSource):
    """spark.readStream / spark.read / df.write / df.writeStream .format("kafkasource")."""

    def __init__(self, options):
        super().__init__(options)
        # whether a read or a write follows is only known when Spark asks for a reader or a writer: a write's options
        # (a topic, no subscription) are no read's, so the read's are parsed on first need, which for a read is its
        # schema() at load(); Spark pickles the source after that, and each reader puts its own defaults into them
        self._read_options: SourceOptions | None = None

    @classmethod
    def name(cls) -> str:
        return "kafkasource"

    def _options(self) -> SourceOptions:
        if self._read_options is None:
            # the parse builds a librdkafka client to check kafka.*
            self._read_options = parse_options(self.options)
        return self._read_options

    def schema(self):
        options = self._options()
        return output_schema(options.decoding, options.include_headers)

    def streamReader(self, schema: StructType):
        from kafkasource.stream import KafkaStreamReader

        return KafkaStreamReader(self._options())

    def reader(self, schema: StructType):
        from kafkasource.batch import KafkaBatchReader

        return KafkaBatchReader(self._options())

    def writer(self, schema: StructType, overwrite: bool):
        from kafkasource.writing.writer import batch_writer

        return batch_writer(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool):
        # overwrite: a stream in complete output mode; every row of each result is written, as the built-in does
        from kafkasource.writing.writer import stream_writer

        return stream_writer(self.options, schema)
