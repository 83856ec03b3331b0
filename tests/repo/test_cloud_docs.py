"""Every option set the cloud sign-in pages show (docs/cloud/*.md) is one kafkasource and librdkafka take: read
as the source's options where it subscribes, as the sink's where it names a topic, with each page's provider
library installed (the test extras install all three)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kafkasource.options import parse_options
from kafkasource.options.sink import parse_sink_options

PAGES = sorted((Path(__file__).resolve().parents[2] / "docs" / "cloud").glob("*.md"))
BLOCK = re.compile(r"```python\n(\w+) = (\{.*?\})\n```", re.S)
EXAMPLES = [(page.name, name, ast.literal_eval(body))
            for page in PAGES for name, body in BLOCK.findall(page.read_text())]


def test_the_pages_show_options_for_every_cloud_and_way_of_signing_in():
    shown = {(page, name) for page, name, _options in EXAMPLES}
    assert shown == {
        ("aws-msk.md", "read_options"), ("aws-msk.md", "write_options"),
        ("azure-event-hubs.md", "read_options"), ("azure-event-hubs.md", "write_options"),
        ("azure-event-hubs.md", "imds_options"), ("azure-event-hubs.md", "connection_string_options"),
        ("google-cloud.md", "read_options"), ("google-cloud.md", "write_options"),
        ("confluent-cloud.md", "api_key_options"), ("confluent-cloud.md", "oauth_options"),
    }


@pytest.mark.parametrize("page,name,options", EXAMPLES, ids=[f"{page}:{name}" for page, name, _ in EXAMPLES])
def test_a_shown_option_set_is_taken_as_written(page, name, options):
    parsed = parse_options(options, streaming=True) if "subscribe" in options else parse_sink_options(options, True)
    config = parsed.kafka_config
    provider = options.get("oauthProvider")
    assert (parsed.token_provider.name if parsed.token_provider else None) == provider
    # a provider signs in with OAUTHBEARER over TLS; the others say how themselves
    assert config["security.protocol"] == "SASL_SSL"
    assert config["sasl.mechanism"] == ("OAUTHBEARER" if provider else options["kafka.sasl.mechanism"])
