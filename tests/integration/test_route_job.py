"""The route job's transform checked in the spark fixture's session: SQL whose result the sink cannot write is refused
before the query starts, naming what to change."""

from __future__ import annotations

import pytest

from kafkasource.jobs.config import ConfigError, JobConfig, Trigger, ValueDecoding
from kafkasource.jobs.destination import Destination
from kafkasource.jobs.route import transformed


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT CAST(id AS STRING) AS payload FROM records",
     "[transform] sql must select a value column (string or binary), the record's value; it selects payload"),
    ("SELECT to_json(struct(id)) AS value, id FROM records",
     "[transform] sql selects 'id', a column the sink does not write; select only key, value, headers, partition, "
     "topic (pack other fields into the value, e.g. to_json(struct(...)) AS value)"),
    ("SELECT amount AS value FROM records",
     "[transform] sql does not run over the view records: [UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, "
     "or function parameter with name `amount` cannot be resolved."),
])
def test_a_transform_the_sink_cannot_write_is_refused_before_the_query_starts(spark, sql, expected):
    records = spark.createDataFrame([(b"k", 1, None)], "key BINARY, id BIGINT, _corrupt BINARY")
    config = JobConfig(path="route.toml", source_options={}, decoding=ValueDecoding("json", "id BIGINT"),
                       destination=Destination(), checkpoint="/ck", partition_by_date=False, trigger=Trigger(True),
                       app_name="route", transform_sql=sql)

    with pytest.raises(ConfigError) as raised:
        transformed(config, records)

    assert str(raised.value).startswith(f"route.toml: {expected}")
