"""Where the ingest job lands its records: Parquet files, a Delta Lake table or an Apache Iceberg table.

Each is written by Spark's own streaming sink for the format, with the job's checkpoint, so a batch that ran again
after a crash lands once: the file sink keeps a log of the files each batch committed, Delta's sink records the
query's id and batch id in the table's transaction (a batch already there is skipped), and Iceberg's records them in
the snapshot's summary (likewise). The source commits the group only after Spark has recorded the batch as complete,
which is after the sink committed it, so the group's offsets never run ahead of what the table holds.

The formats' jars come with the Spark session (`spark-submit --packages`, or the cluster's own), as do their
catalogs (`spark.sql.catalog.<name>`): the job only names the format and where to write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql.streaming import DataStreamWriter

from kafkasource.jobs.tables import ConfigError, Section

FORMATS = ("parquet", "delta", "iceberg")
DESTINATION_KEYS = ("format", "path", "table", "options", "table_properties")
_TITLES = {"parquet": "Parquet", "delta": "Delta table", "iceberg": "Iceberg table"}

# Iceberg's writer expects each task's rows grouped by table partition and fails on a row of a partition it closed
# already; a Kafka partition's timestamps are not ordered (producers set them), so the date column can go back and
# forth within a task. Fan-out keeps a file open per date instead.
_ICEBERG_DEFAULTS = {"fanout-enabled": "true"}


@dataclass(frozen=True)
class Destination:
    """The job's [sink] for records: the format, a folder (path) or a table by name, the format's writer options
    and the table properties the job sets."""

    format: str = "parquet"
    path: str | None = None
    table: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    table_properties: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{_TITLES[self.format]} {self.table}" if self.table else f"{_TITLES[self.format]} at {self.path}"

    @property
    def target(self) -> str:
        """The table's name or its folder, as the job's summary names it."""
        return self.table or self.path or ""

    def identifier(self) -> str:
        """How Spark SQL names the table: its name, or Delta's `delta.`<path>``."""
        if self.table:
            return self.table
        return "delta.`" + (self.path or "").replace("`", "``") + "`"


def parse_destination(sink: Section, path_required: bool) -> Destination:
    """[sink] format, path, table, options and table_properties, checked: which of path and table each format
    takes, and a message naming the key and what to write instead."""
    fmt = sink.text("format", default="parquet")
    if fmt not in FORMATS:
        raise ConfigError(f"{sink.where('format')} must be one of {', '.join(FORMATS)}, got {fmt!r}")
    path, table = sink.text("path"), sink.text("table")
    if fmt == "parquet" and table is not None:
        raise ConfigError(
            f'{sink.where("table")}: Parquet is written to a folder; set path, or format = "delta" or "iceberg" '
            "to write a table by name"
        )
    if fmt == "iceberg" and path is not None:
        raise ConfigError(
            f"{sink.where('path')}: Iceberg tables are written by name in a catalog; set table = "
            '"<catalog>.<namespace>.<table>" and configure the catalog (spark.sql.catalog.<catalog>)'
        )
    if path is not None and table is not None:
        raise ConfigError(f"{sink.where('table')}: set path or table, not both")
    if path is None and table is None:
        if fmt == "delta":
            raise ConfigError(f'{sink.path}: [sink] needs path (a folder) or table (a name) with format = "delta"')
        if fmt == "iceberg":
            raise ConfigError(f'{sink.where("table")} is required with format = "iceberg": a name in a catalog')
        if path_required:
            raise ConfigError(f"{sink.where('path')} is required")
    options = _string_table(sink, "options")
    properties = _string_table(sink, "table_properties")
    if properties and fmt == "parquet":
        raise ConfigError(
            f"{sink.where('table_properties')}: Parquet files have no table properties; remove them, or set "
            'format = "delta" or "iceberg"'
        )
    defaults = _ICEBERG_DEFAULTS if fmt == "iceberg" else {}
    return Destination(fmt, path, table, {**defaults, **options}, properties)


def _string_table(sink: Section, key: str) -> dict[str, str]:
    data = sink.data.get(key, {})
    return Section(sink.path, f"sink.{key}", data, None).options()


def writer(records: DataFrame, destination: Destination, checkpoint: str, partition_by_date: bool) -> DataStreamWriter:
    """The stream's writer for the destination, before its trigger and start."""
    out = records.writeStream.format(destination.format).option("checkpointLocation", checkpoint)
    for key, value in destination.options.items():
        out = out.option(key, value)
    if partition_by_date:
        out = out.partitionBy("date")
    return out


def start(out: DataStreamWriter, destination: Destination):
    """Start the query into the destination's folder or table (a table by name is created when absent)."""
    if destination.table:
        return out.toTable(destination.table)
    return out.start(destination.path)


def prepare_table(spark, destination: Destination, records: DataFrame, partition_by_date: bool) -> None:
    """With table properties and no table yet: create it (empty, of the records' schema, partitioned as the stream
    writes it) with them. A table that exists keeps its own (ALTER TABLE changes them); without any, the stream's
    own sink creates the table."""
    if not destination.table_properties or _table_exists(spark, destination):
        return
    from pyspark.sql import functions as F

    create = spark.createDataFrame([], records.schema).writeTo(destination.identifier()).using(destination.format)
    if partition_by_date:
        create = create.partitionedBy(F.col("date"))
    for key, value in destination.table_properties.items():
        create = create.tableProperty(key, value)
    create.create()


def _table_exists(spark, destination: Destination) -> bool:
    if destination.table:
        return bool(spark.catalog.tableExists(destination.table))
    from kafkasource.jobs import files

    return files.exists(spark, (destination.path or "").rstrip("/") + "/_delta_log")
