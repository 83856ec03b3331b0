"""replay: a bounded backfill of a topic into Parquet, as a batch read. It never commits.

    spark-submit jobs/replay.py --config conf/replay.example.toml --from FROM --to TO [--output PATH]
                                [--mode errorifexists|append|overwrite] [--dry-run]

FROM and TO are each `earliest`, `latest`, offsets as JSON ({"orders": {"0": 1200, "1": -2}}, -2 earliest,
-1 latest), a time (2026-11-01T00:00:00Z, a naive time is UTC) or epoch milliseconds. A time starts at
(or ends before) the first record at or after it in each partition.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace
from datetime import UTC, datetime

from kafkasource.jobs import plan
from kafkasource.jobs.cli import add_common_arguments, load_config, run_main, session, setup_logging
from kafkasource.jobs.config import ConfigError, JobConfig
from kafkasource.jobs.decode import decode
from kafkasource.planning.partitions import partition_name

log = logging.getLogger("kafkasource.jobs.replay")

RANGE_OPTIONS = (
    "startingOffsets",
    "startingTimestamp",
    "startingOffsetsByTimestamp",
    "endingOffsets",
    "endingTimestamp",
    "endingOffsetsByTimestamp",
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="replay", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_common_arguments(p, "conf/replay.example.toml")
    p.add_argument("--from", dest="start", required=True, help="where to start: earliest, offsets JSON, a time")
    p.add_argument("--to", dest="end", required=True, help="where to stop (exclusive): latest, offsets JSON, a time")
    p.add_argument("--output", help="the Parquet path to write; overrides [sink] path")
    p.add_argument(
        "--mode",
        default="errorifexists",
        choices=("errorifexists", "append", "overwrite"),
        help="when the output exists: fail (default), add to it, or replace it",
    )
    p.add_argument("--dry-run", action="store_true", help="print the ranges to read per partition and exit")
    return p


def range_option(flag: str, text: str, prefix: str) -> dict[str, str]:
    """--from/--to as the source's startingX/endingX option."""
    text = text.strip()
    if text in ("earliest", "latest") or text.startswith("{"):
        return {f"{prefix}Offsets": text}
    if text.lstrip("-").isdigit():
        return {f"{prefix}Timestamp": text}
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f'{flag} {text!r} is not earliest, latest, offsets JSON like {{"orders": {{"0": 42}}}}, '
            f"a time like 2026-11-01T00:00:00Z, or epoch milliseconds"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return {f"{prefix}Timestamp": str(int(when.timestamp() * 1000))}


def with_range(config: JobConfig, start: str, end: str) -> dict[str, str]:
    options = {k: v for k, v in config.source_options.items() if k not in RANGE_OPTIONS}
    return {**options, **range_option("--from", start, "starting"), **range_option("--to", end, "ending")}


def replay(args) -> int:
    config, spark = load_config(args.config, getattr(args, "remote", None), required=() if args.output else ("path",))
    try:
        return _replay(args, config, spark)
    except BaseException:
        if spark is not None:
            spark.stop()
        raise


def _replay(args, config: JobConfig, spark) -> int:
    config = replace(config, source_options=with_range(config, args.start, args.end))
    options = config.parsed_options(streaming=False)  # checked before Spark starts
    if config.destination.format != "parquet" and not args.output:
        raise ConfigError(
            f"{config.path}: [sink] is a {config.destination.describe()}; replay writes Parquet files "
            "only: give it a folder with --output"
        )
    output = args.output or config.destination.path
    assert output is not None  # without --output, the config's [sink] path is required
    ranges = plan.positions(options, resolve=True)
    planned = sum(s.to_read() for s in ranges)
    described = f"{options.subscription.describe()} from {options.starting} to {options.ending}"
    if args.dry_run:
        print(f"replay plan for {config.path} (dry run: nothing read, nothing written)")
        print(f"  source: {plan.describe_source(options)}")
        print(f"  range:  {described}; never commits")
        print(f"  sink:   Parquet at {output} (mode {args.mode})")
        print(
            plan.table(
                ["PARTITION", "FROM", "TO", "RECORDS"],
                [[partition_name(t, p), s.start, s.end, s.to_read()] for s in ranges for t, p in [s.partition]],
            )
        )
        if spark is not None:
            spark.stop()
        return 0
    spark = spark or session(config.app_name, getattr(args, "remote", None))
    try:
        rows = decode(
            spark.read.format("kafkasource").options(**config.source_options).load(),
            config.decoding,
            config.partition_by_date,
        )
        writer = rows.write.mode(args.mode)
        if config.partition_by_date:
            writer = writer.partitionBy("date")
        log.info("replaying %s into %s", described, output)
        writer.parquet(output)
    finally:
        spark.stop()
    print(f"replay: offsets of {described} ({planned:,} records at most) written to {output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def work() -> int:
        setup_logging(args.log_level, args.log_config)
        return replay(args)

    return run_main("replay", work)


if __name__ == "__main__":
    sys.exit(main())
