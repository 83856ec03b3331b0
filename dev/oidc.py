"""A small OAuth 2.0 identity provider on 127.0.0.1, for the OAUTHBEARER tests.

- `POST /token`: the client_credentials grant. The client authenticates with HTTP Basic (what librdkafka's
  `sasl.oauthbearer.method=oidc` sends) or with form fields; a known client id with its secret gets an RS256 JWT
  (sub = the client id, aud, iss, iat, exp, scope), anything else 401 `invalid_client`.
- `GET /jwks`: the public key the tokens are signed with, which the broker verifies them against.

The signing key is made at start with openssl, which also signs each token (no Python crypto library needed).
Every token request is remembered as (client id, granted), never with its secret.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import subprocess
import tempfile
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs

from dev.broker import BrokerError, require
from dev.local_http import LocalHttpServer


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _openssl(*args: str, stdin: bytes = b"") -> bytes:
    result = subprocess.run([require("openssl", "sign test tokens"), *args], input=stdin, capture_output=True,
                            timeout=60)
    if result.returncode != 0:
        raise BrokerError(f"openssl {args[0]} failed: {result.stderr.decode(errors='replace')}")
    return result.stdout


class IdentityProvider:
    """The token endpoint and JWKS, served by a thread of this process until `stop()`."""

    def __init__(self, clients: dict[str, str], audience: str, lifetime_s: int = 3600):
        self._clients = dict(clients)  # client id -> secret
        self.audience = audience
        self.lifetime_s = lifetime_s
        self.key_id = f"test-key-{secrets.token_hex(4)}"
        self._key = Path(tempfile.mkdtemp(prefix="kafkasource-oidc-")) / "signing.key"
        _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(self._key))
        modulus = _openssl("rsa", "-in", str(self._key), "-noout", "-modulus").decode().strip().split("=", 1)[1]
        self._jwks = {"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.key_id,
                                "n": _b64url(binascii.unhexlify(modulus)), "e": _b64url((65537).to_bytes(3, "big"))}]}
        self.requests: list[tuple[str | None, bool]] = []  # (client id, granted) of every token request
        self._server = LocalHttpServer(self._handler(), "oidc-provider")

    @property
    def issuer(self) -> str:
        return self._server.url

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    def stop(self) -> None:
        self._server.stop()

    def token(self, client_id: str, scope: str | None = None) -> str:
        """A signed JWT for `client_id`."""
        now = int(time.time())
        header = {"alg": "RS256", "typ": "JWT", "kid": self.key_id}
        claims = {"iss": self.issuer, "sub": client_id, "aud": self.audience, "iat": now,
                  "exp": now + self.lifetime_s, "scope": scope or "kafka"}
        signing_input = ".".join(_b64url(json.dumps(part).encode()) for part in (header, claims))
        signature = _openssl("dgst", "-sha256", "-sign", str(self._key), stdin=signing_input.encode())
        return f"{signing_input}.{_b64url(signature)}"

    def _grant(self, headers, body: bytes) -> tuple[int, dict]:
        form = {name: values[0] for name, values in parse_qs(body.decode(errors="replace")).items()}
        client_id, secret = form.get("client_id"), form.get("client_secret")
        authorization = headers.get("Authorization", "")
        if authorization.startswith("Basic "):
            try:
                client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                client_id = secret = None
        if form.get("grant_type") != "client_credentials":
            return 400, {"error": "unsupported_grant_type"}
        granted = client_id in self._clients and secrets.compare_digest(self._clients[client_id], secret or "")
        self.requests.append((client_id, granted))
        if not granted:
            return 401, {"error": "invalid_client", "error_description": "unknown client or wrong secret"}
        return 200, {"access_token": self.token(client_id, form.get("scope")), "token_type": "Bearer",
                     "expires_in": self.lifetime_s}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/jwks":
                    self._answer(200, provider._jwks)
                else:
                    self._answer(404, {"error": "not_found"})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/token":
                    self._answer(*provider._grant(self.headers, body))
                else:
                    self._answer(404, {"error": "not_found"})

            def _answer(self, status: int, document: dict) -> None:
                payload = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args) -> None:  # requests are kept in `requests`, not printed
                pass

        return Handler
