"""The ingest job's metrics textfile after an AvailableNow run under spark-submit: every figure against the broker's
truth, the file written whole."""

from __future__ import annotations

import re

from tests.support.job_helpers import run_job, write_config
from tests.support.metrics_helpers import by_partition, parse


def test_ingest_job_writes_the_textfile_of_an_available_now_run(kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("textfile"), partitions=3)
    group = kafka.unique_name("textfile-group")
    kafka.produce_values(topic, 30, partitions=3)
    textfile = tmp_path / "kafkasource.prom"
    config = write_config(tmp_path / "ingest.toml", kafka.bootstrap_servers, topic, group, tmp_path,
                          extra_source="maxOffsetsPerTrigger = 12")
    with open(config, "a") as f:
        f.write(f'[metrics]\ntextfile = "{textfile}"\n')

    done = run_job("ingest", "--config", str(config))

    assert done.returncode == 0, done.stdout[-3000:]
    found = parse(textfile.read_text())
    assert by_partition(found["kafkasource_partition_offset"]) == {0: 10, 1: 10, 2: 10}
    assert by_partition(found["kafkasource_partition_lag_records"]) == {0: 0, 1: 0, 2: 0}
    assert by_partition(found["kafkasource_group_committed_offset"]) == {0: 10, 1: 10, 2: 10}
    assert by_partition(found["kafkasource_group_lag_records"]) == {0: 0, 1: 0, 2: 0}
    assert list(found["kafkasource_query_input_rows_total"].values()) == [30]
    assert list(found["kafkasource_query_batches_total"].values()) == [3]
    assert list(found["kafkasource_query_active"].values()) == [0]
    assert list(found["kafkasource_commits_total"].values())[0] >= 3
    # written whole, by a rename (prometheus_client's temporary file: the textfile's name and .pid.thread)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("kafkasource.prom.")] == []
    rates = [float(m.group(1).replace(",", "")) for m in re.finditer(r"rows, ([\d.,]+) rows/s", done.stdout)]
    assert len(rates) == 3 and all(r > 0 for r in rates), done.stdout[-2000:]
