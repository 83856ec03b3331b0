"""The local schema registry (dev/registry.py): built from Maven Central, it serves what confluent-kafka's
schema-registry client and serializers use, on loopback only."""

import json
import urllib.request

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

ORDER_V1 = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]})
ORDER_V2 = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": "string", "default": ""}]})


def test_registry_serves_register_fetch_by_id_and_latest_version(schema_registry):
    client = SchemaRegistryClient({"url": schema_registry})
    subject = "registry-server-test-value"
    first = client.register_schema(subject, Schema(ORDER_V1, "AVRO"))
    second = client.register_schema(subject, Schema(ORDER_V2, "AVRO"))
    assert first != second
    assert json.loads(client.get_schema(first).schema_str) == json.loads(ORDER_V1)
    latest = client.get_latest_version(subject)
    assert (latest.schema_id, latest.version) == (second, 2)
    assert client.get_version(subject, 1).schema_id == first
    with pytest.raises(SchemaRegistryError) as unknown:
        client.get_schema(987654)
    assert unknown.value.http_status_code == 404


def test_registry_listens_on_loopback_and_lists_its_dynamic_settings(schema_registry):
    """The address is 127.0.0.1; the admin API lists the registry's dynamic settings, which the build step
    standing in for the extension Maven Central lacks (dev/apicurio/config-index-deployment) collects."""
    assert schema_registry.startswith("http://127.0.0.1:")
    address = schema_registry.removesuffix("/apis/ccompat/v7")
    with urllib.request.urlopen(f"{address}/apis/registry/v2/admin/config/properties", timeout=10) as response:
        properties = {p["name"]: p for p in json.load(response)}
    assert sorted(properties) == ["registry.ccompat.legacy-id-mode.enabled", "registry.download.href.ttl",
                                  "registry.rest.artifact.deletion.enabled", "registry.ui.features.readOnly"]
    legacy_ids = properties["registry.ccompat.legacy-id-mode.enabled"]
    assert (legacy_ids["type"], legacy_ids["value"], legacy_ids["label"]) == (
        "java.lang.Boolean", "false", "Legacy ID mode (compatibility API)")

