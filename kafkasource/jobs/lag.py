"""lag: the consumer group's lag per partition (committed offset vs log end), as a table.

    spark-submit jobs/lag.py --config conf/ingest.example.toml [--max-lag N]
    python3 jobs/lag.py ...            (it needs no Spark: only the brokers)

Exit code 0, or 3 when the total lag is above --max-lag, for a cron job or a health probe. A
partition without a committed offset counts its whole log as lag.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from kafkasource.commit.metadata import CommitAuthor
from kafkasource.jobs import plan
from kafkasource.jobs.cli import add_common_arguments, load_config, run_main, setup_logging
from kafkasource.jobs.config import ConfigError

EXIT_LAG_ABOVE_MAX = 3


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lag", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(p, "conf/lag.example.toml, or any ingest config")
    p.add_argument("--max-lag", type=int, help="exit with 3 when the total lag is above this many records")
    return p


def report(config_path: str, max_lag: int | None) -> int:
    config, spark = load_config(config_path, None)
    if spark is not None:  # started only to read a config on a cluster's file system
        spark.stop()
    options = config.parsed_options(streaming=True)
    if not options.group_id:
        raise ConfigError(f"{config.path}: [kafka] group.id is required: the group whose lag to show")
    found = plan.positions(options)
    rows = [
        [options.group_id, t, p, s.committed, s.log_end, s.lag, *committed_by(s.committer)]
        for s in found
        for t, p in [s.partition]
    ]
    print(
        plan.table(["GROUP", "TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG", "COMMITTED-AT", "COMMITTED-BY"], rows)
        if rows
        else f"no partition matches {options.subscription.describe()}"
    )
    total = sum(s.lag for s in found)
    print(f"total lag: {total:,} records over {len(found)} partitions")
    if max_lag is not None and total > max_lag:
        print(f"lag {total:,} is above --max-lag {max_lag:,}", file=sys.stderr)
        return EXIT_LAG_ABOVE_MAX
    return 0


def committed_by(who: CommitAuthor | None) -> list[str | None]:
    """(when, who) of a partition's last commit, as far as its metadata tells: kafkasource's names the application
    and the time; commits by older kafkasource versions say "kafkasource", other clients' their own metadata."""
    if who is None:
        return [None, None]
    at = datetime.fromtimestamp(who.at_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if who.at_ms is not None else None
    return [at, who.describe()]


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def work() -> int:
        setup_logging(args.log_level, args.log_config)
        return report(args.config, args.max_lag)

    return run_main("lag", work)


if __name__ == "__main__":
    sys.exit(main())
