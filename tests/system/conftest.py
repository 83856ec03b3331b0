"""The system tier's own fixtures: the secured brokers (SASL, SSL) and the certificates they present, started once for
every module whose tests use them."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from dev import secure_broker
from tests.support.security_helpers import PASSWORDS


@pytest.fixture(scope="session")
def sasl():
    broker = secure_broker.start_sasl(PASSWORDS)
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def certificates():
    return secure_broker.make_certificates(Path(tempfile.mkdtemp(prefix="kafkasource-certs-")))


@pytest.fixture(scope="session")
def ssl(certificates):
    broker = secure_broker.start_ssl(certificates)
    yield broker
    broker.stop()
