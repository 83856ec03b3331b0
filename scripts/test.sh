#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs the package with its test extras,
# fetches the Kafka broker jars and builds the schema registry (both from Maven Central, cached in
# .cache/), builds Prometheus for the scrape test (go install, once: the binary is kept in .cache/, Go's
# caches where Go keeps them), builds the docs site with `mkdocs build --strict` (a broken link, anchor or API
# name fails the run; the site goes to the git-ignored .cache/site), checks native/ with rustfmt and clippy, all the
# repository's Python with ruff (kafkasource/ and kafkasource_pyspark_zip.py also with ruff format and mypy), then runs pytest. The tests start their own Kafka broker and registry on 127.0.0.1; nothing needs to run beforehand.
# Where cargo is on PATH, pip builds the native extension; with CI=true (or KAFKASOURCE_REQUIRE_NATIVE=1) pytest
# refuses to start without it rather than leave the native read tests out (tests/support/native_coverage.py).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -c constraints.txt -e ".[test]"
# the .pth the wheel puts in site-packages (setup.py, kafkasource_pyspark_zip.py): an editable install cannot carry it,
# so it goes there by hand, and Spark's Python processes in the suite start as they do under a user's install
cp kafkasource_pyspark_zip.pth "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
python3 -m dev.broker fetch > /dev/null
python3 -m dev.prometheus build > /dev/null
python3 -m dev.registry build > /dev/null
# quiet unless it fails (mkdocs' own --quiet would hide the warnings that --strict fails on, and pass)
if ! docs=$(NO_MKDOCS_2_WARNING=1 python3 -m mkdocs build --strict --site-dir .cache/site 2>&1); then
    echo "$docs" >&2
    exit 1
fi
(cd native && { rustup -q component add clippy rustfmt || true; } && cargo fmt --check && PYO3_PYTHON="${PYO3_PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}" cargo clippy -q --release --all-targets -- -D warnings)  # PYO3_PYTHON as setuptools-rust sets it: clippy reuses the build above in native/target
# the lint of all the repository's Python (the package, tests, bench, scripts, dev, jobs, examples, setup.py), the
# package's format and types (configured in pyproject.toml). After the suite, the compatibility and plain-install runs.
python3 -m ruff check --quiet . && python3 -m ruff format --check --quiet kafkasource kafkasource_pyspark_zip.py && python3 -m mypy
# every import the package makes is of a distribution its requirements bring, by extra (seconds; the plain-install
# run below proves it in virtualenvs without the test extra)
python3 -m scripts.check_imports
status=0
# one process: `-n 2 --dist loadfile` among the arguments runs the suite in two pytest-xdist workers, each with a
# broker and a Spark of its own, in about two thirds of the time, but under the second worker's load the cluster
# copy test (tests/system/test_sink_cluster.py) has failed where one process passes it (bench/SUITE.md)
python3 -m pytest "$@" || status=$?  # every tier: tests/unit, repo, integration and system (pytest.ini)
# the compatibility run (scripts/compat.py): a small selection again on the newest pyspark 4.1, Spark Connect
# included, in a virtualenv of its own kept in .cache/compat; the plain-install run (scripts/plain_install.py): the
# package's wheel in virtualenvs holding only pyspark 4.0 (Python 3.12) or 4.3 (Python 3.13) and the test runner,
# kept in .cache/plain; both with the whole suite (no arguments), or KAFKASOURCE_COMPAT=1. They run side by side,
# since each spends most of its time waiting on virtualenvs, JVM starts and brokers; the compatibility run's output
# goes to a log, printed when both are done.
if { [ $# -eq 0 ] && [ "${KAFKASOURCE_COMPAT:-}" != 0 ]; } || [ "${KAFKASOURCE_COMPAT:-}" = 1 ]; then
    mkdir -p .cache
    python3 -m scripts.compat > .cache/compat.log 2>&1 &
    compat=$!
    python3 -m scripts.plain_install || status=$?
    wait $compat || status=$?
    cat .cache/compat.log
fi
exit $status
