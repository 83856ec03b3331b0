"""Secured single-node Kafka brokers on loopback, for the security tests.

- `start_sasl(users)`: clients connect over SASL_PLAINTEXT with SCRAM-SHA-512; the users are created by
  Kafka's own storage tool at format time (--add-scram); Kafka's StandardAuthorizer enforces ACLs, with
  `admin` the only super user. The broker talks to itself and to its controller as admin too (SCRAM on
  the client listener, PLAIN with a static user on the controller listener, since SCRAM credentials
  live in the metadata log the controller serves).
- `start_ssl(certs)`: an SSL listener whose certificate `make_certificates` signs with a fresh CA.

Both reuse dev/broker.py's launch and log handling; nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import secrets
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dev.broker import Broker, BrokerError, cluster_id, format_storage, launch, require, server_properties
from dev.process import free_port

MECHANISM = "SCRAM-SHA-512"
ADMIN = "admin"


@dataclass
class SecureBroker:
    """A running secured broker and the librdkafka settings a client needs to reach it (without credentials)."""

    broker: Broker
    security: dict[str, str]
    admin_password: str = field(default="", repr=False)

    @property
    def bootstrap_servers(self) -> str:
        return self.broker.bootstrap_servers

    def client_config(self, user: str | None = None, password: str | None = None) -> dict[str, str]:
        """librdkafka settings for `user` (the admin by default)."""
        config = {"bootstrap.servers": self.bootstrap_servers, **self.security}
        if self.security.get("security.protocol") == "SASL_PLAINTEXT":
            config.update({"sasl.mechanism": MECHANISM, "sasl.username": user or ADMIN,
                           "sasl.password": password if password is not None else self.admin_password})
        return config

    def grant(self, user: str, resource_type: str, name: str, *operations: str) -> None:
        """Allow `user` the operations (e.g. "READ", "DESCRIBE") on a TOPIC or GROUP, as admin."""
        from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                           ResourcePatternType, ResourceType)

        admin = AdminClient(self.client_config())
        bindings = [AclBinding(ResourceType[resource_type], name, ResourcePatternType.LITERAL, f"User:{user}", "*",
                               AclOperation[op], AclPermissionType.ALLOW) for op in operations]
        for future in admin.create_acls(bindings, request_timeout=30).values():
            future.result(30)

    def stop(self) -> None:
        self.broker.stop()


def _properties(base: str, overrides: dict[str, str]) -> str:
    """dev/broker.py's single-node settings with some of them replaced or added."""
    settings = dict(line.split("=", 1) for line in base.splitlines() if line)
    settings.update(overrides)
    return "".join(f"{k}={v}\n" for k, v in settings.items())


def _jaas(module: str, user: str, password: str, extra: str = "") -> str:
    return f'org.apache.kafka.common.security.{module} required username="{user}" password="{password}"{extra};'


def _start(data_dir: Path, port: int, controller_port: int, overrides: dict[str, str], security: dict[str, str],
           format_args: list[str], admin_password: str = "", timeout: float = 90) -> SecureBroker:
    format_storage(data_dir, _properties(server_properties(port, controller_port, data_dir), overrides), cluster_id(),
                   *format_args)
    process = launch(data_dir)
    secure = SecureBroker(Broker(port, controller_port, data_dir, process.pid, process), security, admin_password)
    _await_secure(secure, timeout)
    return secure


def _await_secure(secure: SecureBroker, timeout: float) -> None:
    """Wait until the broker answers a metadata request from the admin, over the secured listener."""
    from confluent_kafka.admin import AdminClient

    def answers() -> bool:
        admin = AdminClient({**secure.client_config(), "log_level": 2})
        try:
            return bool(admin.list_topics(timeout=2).brokers)
        except Exception:  # not up yet (or still loading the users from the metadata log)
            return False

    secure.broker.await_ready(answers, timeout, "the secured broker", secure.bootstrap_servers,
                              secure.broker.recent_log, BrokerError, interval=0.5)


def start_sasl(users: dict[str, str], timeout: float = 90) -> SecureBroker:
    """SASL_PLAINTEXT/SCRAM-SHA-512 with ACLs; `users` maps names to passwords and should include admin."""
    port, controller_port = free_port(), free_port()
    admin_password = users.get(ADMIN) or secrets.token_hex(8)
    users = {**users, ADMIN: admin_password}
    data_dir = Path(tempfile.mkdtemp(prefix="kafkasource-sasl-broker-"))
    overrides = {
        "listeners": f"CLIENT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"CLIENT://127.0.0.1:{port}",
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "inter.broker.listener.name": "CLIENT",
        "sasl.mechanism.inter.broker.protocol": MECHANISM,
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.client.sasl.enabled.mechanisms": MECHANISM,
        "listener.name.client.scram-sha-512.sasl.jaas.config": _jaas("scram.ScramLoginModule", ADMIN, admin_password),
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": _jaas(
            "plain.PlainLoginModule", ADMIN, admin_password, f' user_{ADMIN}="{admin_password}"'),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{ADMIN}",
    }
    scram = [arg for name, password in users.items()
             for arg in ("--add-scram", f"{MECHANISM}=[name={name},password={password}]")]
    return _start(data_dir, port, controller_port, overrides, {"security.protocol": "SASL_PLAINTEXT"}, scram,
                  admin_password, timeout)


@dataclass(frozen=True)
class Certificates:
    """A CA (PEM, for clients) and the broker's PKCS12 keystore and truststore it signed."""

    ca_pem: Path
    keystore: Path
    truststore: Path
    password: str = field(repr=False)


def _run(*cmd: str) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise BrokerError(f"{' '.join(cmd[:2])} failed:\n{result.stdout}{result.stderr}")


def make_ca(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed CA: (certificate PEM, key PEM)."""
    openssl = require("openssl", "make test certificates")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    _run(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
         "-keyout", str(key), "-out", str(cert))
    return cert, key


def make_certificates(directory: Path) -> Certificates:
    """A CA, and a broker certificate for 127.0.0.1 (subjectAltName, which clients verify) signed by it."""
    openssl = require("openssl", "make test certificates")
    keytool = require("keytool", "make the broker's truststore")
    ca_pem, ca_key = make_ca(directory, "test-ca")
    password = secrets.token_hex(8)
    key, csr, cert = directory / "broker.key", directory / "broker.csr", directory / "broker.pem"
    extensions = directory / "broker.ext"
    extensions.write_text("subjectAltName=IP:127.0.0.1\n")
    _run(openssl, "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", str(key),
         "-out", str(csr))
    _run(openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca_pem), "-CAkey", str(ca_key), "-CAcreateserial",
         "-days", "2", "-extfile", str(extensions), "-out", str(cert))
    keystore, truststore = directory / "broker.keystore.p12", directory / "broker.truststore.p12"
    _run(openssl, "pkcs12", "-export", "-in", str(cert), "-inkey", str(key), "-certfile", str(ca_pem),
         "-name", "broker", "-out", str(keystore), "-passout", f"pass:{password}")
    # keytool marks the CA as a trusted entry, which Java's PKCS12 truststores need
    _run(keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", str(ca_pem), "-keystore", str(truststore),
         "-storetype", "PKCS12", "-storepass", password)
    return Certificates(ca_pem, keystore, truststore, password)


def start_ssl(certs: Certificates, timeout: float = 90) -> SecureBroker:
    """A broker whose only client listener is SSL (server authentication only, no client certificates)."""
    port, controller_port = free_port(), free_port()
    data_dir = Path(tempfile.mkdtemp(prefix="kafkasource-ssl-broker-"))
    overrides = {
        "listeners": f"SSL://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"SSL://127.0.0.1:{port}",
        "listener.security.protocol.map": "SSL:SSL,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "SSL",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(certs.keystore),
        "ssl.keystore.password": certs.password,
        "ssl.key.password": certs.password,
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(certs.truststore),
        "ssl.truststore.password": certs.password,
        "ssl.client.auth": "none",
    }
    security = {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca_pem)}
    return _start(data_dir, port, controller_port, overrides, security, [], timeout=timeout)
