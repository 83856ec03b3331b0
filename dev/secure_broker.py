"""Secured single-node Kafka brokers on loopback, for the security tests.

- `start_sasl(users)`: clients connect over SASL_PLAINTEXT with SCRAM-SHA-512; the users are created by
  Kafka's own storage tool at format time (--add-scram); Kafka's StandardAuthorizer enforces ACLs, with
  `admin` the only super user. The broker talks to itself and to its controller as admin too (SCRAM on
  the client listener, PLAIN with a static user on the controller listener, since SCRAM credentials
  live in the metadata log the controller serves). With `certs`, the same over TLS (SASL_SSL); with
  `oauth`, the client listener also takes OAUTHBEARER tokens, which Kafka's own validator checks against
  the identity provider's JWKS (the principal is the token's subject).
- `start_ssl(certs)`: an SSL listener whose certificate `make_certificates` signs with a fresh CA; with
  `client`, mutual TLS: the broker requires a client certificate its truststore's CA signed.

All reuse dev/broker.py's launch and log handling; nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import secrets
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from dev.broker import Broker, BrokerError, cluster_id, format_storage, launch, require, server_properties
from dev.oidc import IdentityProvider
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
        if self.security["security.protocol"].startswith("SASL_"):
            config.update({"sasl.mechanism": MECHANISM, "sasl.username": user or ADMIN,
                           "sasl.password": password if password is not None else self.admin_password})
        return config

    def grant(self, user: str, resource_type: str, name: str, *operations: str) -> None:
        """Allow `user` the operations (e.g. "READ", "DESCRIBE") on a TOPIC or GROUP, as admin."""
        from confluent_kafka.admin import (
            AclBinding,
            AclOperation,
            AclPermissionType,
            AdminClient,
            ResourcePatternType,
            ResourceType,
        )

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
           format_args: list[str], admin_password: str = "", timeout: float = 90,
           system_properties: dict[str, str] | None = None) -> SecureBroker:
    format_storage(data_dir, _properties(server_properties(port, controller_port, data_dir), overrides), cluster_id(),
                   *format_args)
    process = launch(data_dir, system_properties)
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


def start_sasl(users: dict[str, str], certs: Certificates | None = None, oauth: IdentityProvider | None = None,
               timeout: float = 90) -> SecureBroker:
    """SCRAM-SHA-512 with ACLs, over SASL_PLAINTEXT, or SASL_SSL with `certs`; `users` maps names to passwords and
    should include admin. With `oauth`, OAUTHBEARER too, its tokens checked against `oauth`'s JWKS and audience
    (start the identity provider first: the broker fetches the JWKS as it starts)."""
    port, controller_port = free_port(), free_port()
    admin_password = users.get(ADMIN) or secrets.token_hex(8)
    users = {**users, ADMIN: admin_password}
    data_dir = Path(tempfile.mkdtemp(prefix="kafkasource-sasl-broker-"))
    protocol = "SASL_SSL" if certs else "SASL_PLAINTEXT"
    overrides = {
        "listeners": f"CLIENT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"CLIENT://127.0.0.1:{port}",
        "listener.security.protocol.map": f"CLIENT:{protocol},CONTROLLER:SASL_PLAINTEXT",
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
    security = {"security.protocol": protocol}
    if certs:
        overrides.update(_tls_listener(certs, client_auth="none"))
        security["ssl.ca.location"] = str(certs.ca_pem)
    system_properties = None
    if oauth:
        overrides.update(_oauthbearer_listener(oauth))
        # Kafka 4 calls no identity provider URL the JVM does not list
        system_properties = {"org.apache.kafka.sasl.oauthbearer.allowed.urls": oauth.jwks_url}
    scram = [arg for name, password in users.items()
             for arg in ("--add-scram", f"{MECHANISM}=[name={name},password={password}]")]
    return _start(data_dir, port, controller_port, overrides, security, scram, admin_password, timeout,
                  system_properties)


def _oauthbearer_listener(oauth: IdentityProvider) -> dict[str, str]:
    """The client listener takes OAUTHBEARER besides SCRAM (which the broker and the tests' admin keep using):
    Kafka's own validator checks each token's RS256 signature against the JWKS, its issuer, audience and expiry."""
    return {
        "listener.name.client.sasl.enabled.mechanisms": f"{MECHANISM},OAUTHBEARER",
        # no options: this login only serves the listener (it never connects out with a token)
        "listener.name.client.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;",
        "listener.name.client.oauthbearer.sasl.server.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        "sasl.oauthbearer.jwks.endpoint.url": oauth.jwks_url,
        "sasl.oauthbearer.expected.audience": oauth.audience,
        "sasl.oauthbearer.expected.issuer": oauth.issuer,
        # a token is good until its expiry, not 30 s past it (Kafka's default allowance for clock skew), and a
        # connection signed in with one is closed when it expires unless the client signs in again with a newer
        # one (KIP-368): the test of a token refreshed mid-query needs both to fail without the refresh
        "sasl.oauthbearer.clock.skew.seconds": "1",
        "listener.name.client.oauthbearer.connections.max.reauth.ms": "3600000",
    }


@dataclass(frozen=True)
class Certificates:
    """A CA (PEM, for clients; its key, to sign client certificates) and the broker's PKCS12 keystore and
    truststore it signed."""

    ca_pem: Path
    ca_key: Path
    keystore: Path
    truststore: Path
    password: str = field(repr=False)

    @property
    def ca(self) -> tuple[Path, Path]:
        return self.ca_pem, self.ca_key


@dataclass(frozen=True)
class ClientCertificate:
    """A client's certificate and key (PEM), the key encrypted when it has a password."""

    certificate: Path
    key: Path
    key_password: str | None = field(default=None, repr=False)

    def settings(self) -> dict[str, str]:
        """The librdkafka settings that present it."""
        settings = {"ssl.certificate.location": str(self.certificate), "ssl.key.location": str(self.key)}
        if self.key_password is not None:
            settings["ssl.key.password"] = self.key_password
        return settings


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


def _signed(directory: Path, name: str, subject: str, ca: tuple[Path, Path], extensions: str = "",
            key_password: str | None = None) -> tuple[Path, Path]:
    """A new key and a certificate for `subject` that `ca` (certificate, key) signed: (certificate PEM, key PEM)."""
    openssl = require("openssl", "make test certificates")
    directory.mkdir(parents=True, exist_ok=True)
    key, csr, cert = directory / f"{name}.key", directory / f"{name}.csr", directory / f"{name}.pem"
    protect = ["-passout", f"pass:{key_password}"] if key_password is not None else ["-nodes"]
    _run(openssl, "req", "-new", "-newkey", "rsa:2048", *protect, "-subj", subject, "-keyout", str(key),
         "-out", str(csr))
    extension_args = []
    if extensions:
        extension_file = directory / f"{name}.ext"
        extension_file.write_text(extensions)
        extension_args = ["-extfile", str(extension_file)]
    _run(openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey", str(ca[1]), "-CAcreateserial",
         "-days", "2", *extension_args, "-out", str(cert))
    return cert, key


def make_certificates(directory: Path) -> Certificates:
    """A CA, and a broker certificate for 127.0.0.1 (subjectAltName, which clients verify) signed by it."""
    keytool = require("keytool", "make the broker's truststore")
    ca = make_ca(directory, "test-ca")
    password = secrets.token_hex(8)
    cert, key = _signed(directory, "broker", "/CN=127.0.0.1", ca, "subjectAltName=IP:127.0.0.1\n")
    keystore, truststore = directory / "broker.keystore.p12", directory / "broker.truststore.p12"
    _run(require("openssl", "make test certificates"), "pkcs12", "-export", "-in", str(cert), "-inkey", str(key),
         "-certfile", str(ca[0]), "-name", "broker", "-out", str(keystore), "-passout", f"pass:{password}")
    # keytool marks the CA as a trusted entry, which Java's PKCS12 truststores need
    _run(keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", str(ca[0]), "-keystore", str(truststore),
         "-storetype", "PKCS12", "-storepass", password)
    return Certificates(ca[0], ca[1], keystore, truststore, password)


def make_client_certificate(directory: Path, name: str, ca: tuple[Path, Path],
                            key_password: str | None = None) -> ClientCertificate:
    """A client certificate with subject CN=`name` that `ca` (certificate, key) signed; its key encrypted with
    `key_password` if given."""
    cert, key = _signed(directory, name, f"/CN={name}", ca, key_password=key_password)
    return ClientCertificate(cert, key, key_password)


def _tls_listener(certs: Certificates, client_auth: str) -> dict[str, str]:
    """Broker settings for its TLS listeners: its keystore, the truststore of client certificates it accepts."""
    return {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(certs.keystore),
        "ssl.keystore.password": certs.password,
        "ssl.key.password": certs.password,
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(certs.truststore),
        "ssl.truststore.password": certs.password,
        "ssl.client.auth": client_auth,
    }


def start_ssl(certs: Certificates, client: ClientCertificate | None = None, timeout: float = 90) -> SecureBroker:
    """A broker whose only client listener is SSL: server authentication only, or with `client` (a certificate
    the same CA signed, which the broker itself and the tests' admin present) mutual TLS, every client required
    to present a certificate that CA signed."""
    port, controller_port = free_port(), free_port()
    data_dir = Path(tempfile.mkdtemp(prefix="kafkasource-ssl-broker-"))
    overrides = {
        "listeners": f"SSL://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"SSL://127.0.0.1:{port}",
        "listener.security.protocol.map": "SSL:SSL,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "SSL",
        **_tls_listener(certs, "required" if client else "none"),
    }
    security = {"security.protocol": "SSL", "ssl.ca.location": str(certs.ca_pem),
                **(client.settings() if client else {})}
    return _start(data_dir, port, controller_port, overrides, security, [], timeout=timeout)
