"""A security mode librdkafka does not have: Kerberos (GSSAPI) is refused when the options are read, naming the
mechanisms it has, by confluent-kafka's client and the native consumer alike. The modes it has, against brokers of
their own: tests/system/test_security_modes.py."""

from __future__ import annotations

import pytest

from kafkasource.errors import OptionError
from kafkasource.options import parse_options
from kafkasource.reading import native
from kafkasource.runtime import native_extension


def test_kerberos_is_refused_at_load_naming_the_mechanisms_librdkafka_has():
    """Neither librdkafka (confluent-kafka's wheel, the native extension's) is built with GSSAPI."""
    options = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "kafka.security.protocol": "SASL_SSL",
               "kafka.sasl.mechanism": "GSSAPI"}

    with pytest.raises(OptionError) as raised:
        parse_options(options)

    assert "No provider for SASL mechanism GSSAPI" in str(raised.value)
    assert "Current build options: PLAIN SASL_SCRAM OAUTHBEARER" in str(raised.value)
    if native_extension.available():  # the native consumer (which readPath=auto would fall back from) has none either
        with pytest.raises(ValueError, match="No provider for SASL mechanism GSSAPI"):
            native.NativeConsumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g",
                                   "security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"})
