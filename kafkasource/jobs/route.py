"""route: Kafka -> decode -> SQL -> Kafka, exactly once, committing the source group's offsets as batches complete.

    spark-submit jobs/route.py --config conf/route.example.toml [--trigger availableNow|processingTime=30s]
                               [--remote sc://host:port]

The records of [source], decoded as [decode] says (the columns the ingest job writes, without date), are the view
`records`; [transform] sql selects from it the columns kafkasource's sink writes: value (required), key, headers,
partition and topic. [sink] names the topic and the delivery guarantee, exactly-once unless it says otherwise:
each task of a batch writes in one Kafka transaction that commits, with its records, a marker of the batch, so a
batch replayed after a crash writes nothing twice (docs/sink.md says what this assumes: the SQL must give a
replayed batch the same rows, so no rand() or current_timestamp() in it).
"""

from __future__ import annotations

import argparse
import logging
import sys

from pyspark.sql import DataFrame

from kafkasource.jobs import files
from kafkasource.jobs.cli import add_common_arguments, load_config, one_line, run_main, session, setup_logging
from kafkasource.jobs.config import ConfigError, JobConfig
from kafkasource.jobs.streaming import decoded_records, run_stream, with_trigger
from kafkasource.jobs.takeover import unfinished_batch
from kafkasource.metrics.writes import observe_writes
from kafkasource.options.sink import parse_sink_options

log = logging.getLogger("kafkasource.jobs")

RECORDS_VIEW = "records"
# the columns kafkasource's sink reads, as Spark's built-in Kafka sink does
SINK_COLUMNS = ("key", "value", "headers", "partition", "topic")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="route", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(p, "conf/route.example.toml")
    p.add_argument(
        "--trigger",
        help="availableNow (read what is there, then stop) or processingTime=<interval>; overrides [job] trigger",
    )
    p.add_argument("--remote", help="run on a Spark Connect server, like sc://127.0.0.1:15002")
    return p


def transformed(config: JobConfig, records: DataFrame) -> DataFrame:
    """[transform] sql over the view `records`, its columns checked against what the sink writes."""
    records.createOrReplaceTempView(RECORDS_VIEW)
    assert config.transform_sql is not None  # the route job's config requires it
    try:
        rows = records.sparkSession.sql(config.transform_sql)
        columns = rows.columns  # analyses the query: an unknown column or function fails here, before any batch
    except Exception as exc:
        raise ConfigError(
            f"{config.path}: [transform] sql does not run over the view records: {one_line(exc)}"
        ) from None
    if "value" not in columns:
        raise ConfigError(
            f"{config.path}: [transform] sql must select a value column (string or binary), the record's value; "
            f"it selects {', '.join(columns)}"
        )
    unknown = [c for c in columns if c not in SINK_COLUMNS]
    if unknown:
        raise ConfigError(
            f"{config.path}: [transform] sql selects {unknown[0]!r}, a column the sink does not write; select "
            f"only {', '.join(SINK_COLUMNS)} (pack other fields into the value, e.g. to_json(struct(...)) AS value)"
        )
    return rows


def route(config: JobConfig, spark) -> int:
    assert config.sink_options is not None and config.checkpoint is not None  # the route job's config requires them
    sink_options = config.sink_options
    warn_if_rewriting(config, spark)

    def start():
        rows = transformed(config, decoded_records(config, spark, partition_by_date=False))
        if config.metrics is not None:
            rows = observe_writes(rows)
        writer = (
            rows.writeStream.format("kafkasource")
            .options(**sink_options)
            .option("checkpointLocation", config.checkpoint)
        )
        return with_trigger(writer, config.trigger).start()

    return run_stream("route", config, spark, start, f"the topic {sink_options['topic']}")


def warn_if_rewriting(config: JobConfig, spark) -> None:
    """A new checkpoint after a query that left a batch unfinished writes that batch again (jobs/takeover.py): say
    so before the run starts. Resuming from the checkpoint is the job's way, which the markers keep exactly once."""
    assert config.sink_options is not None and config.checkpoint is not None
    sink = parse_sink_options(config.sink_options, streaming=True)
    if sink.guarantee != "exactly-once" or files.exists(spark, config.checkpoint.rstrip("/") + "/offsets"):
        return
    try:
        warning = unfinished_batch(config.parsed_options(streaming=True), sink)
    except Exception as exc:  # a check before the run: the run itself says what is wrong with the brokers
        log.info("could not compare the sink's markers with the source group's commits: %s", one_line(exc))
        return
    if warning is not None:
        log.warning("%s", warning)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def work() -> int:
        setup_logging(args.log_level, args.log_config)
        config, spark = load_config(
            args.config, args.remote, required=("checkpoint",), trigger_override=args.trigger, writes_topic=True
        )
        if spark is None:
            config.parsed_options(streaming=True)  # every option checked before Spark starts
            spark = session(config.app_name, args.remote)
        return route(config, spark)

    return run_main("route", work)


if __name__ == "__main__":
    sys.exit(main())
