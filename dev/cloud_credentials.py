"""Local stand-ins of the clouds' credential endpoints on 127.0.0.1, for the oauthProvider tests.

One HTTP server, served by a thread of this process until `stop()`, answers what each token provider's own library
asks where the cloud would answer it:

- AWS STS, `POST /` (the query protocol botocore speaks to AWS_ENDPOINT_URL_STS): AssumeRole, answered with
  temporary credentials (AccessKeyId ASIA..., SecretAccessKey, SessionToken, Expiration) in STS's XML, or, after
  `fail("sts", 403)`, AccessDenied as STS words it.
- Azure managed identity, App Service form, `GET /msi/token` (what IDENTITY_ENDPOINT names; the header
  X-IDENTITY-HEADER must be `identity_header`): {"access_token", "expires_on", "resource", "token_type"}; and its VM
  form, IMDS, `GET /metadata/identity/oauth2/token` (where AZURE_POD_IDENTITY_AUTHORITY_HOST points, header
  Metadata: true): {"access_token", "expires_in", "expires_on", "resource", "token_type"}.
- Google's OAuth 2.0 token endpoint, `POST /token` (a service account's token_uri): the JWT-bearer grant, its
  assertion's RS256 signature checked against the key of a service account this stand-in made
  (`service_account`), answered {"access_token", "expires_in", "token_type"}, or {"error": "invalid_grant"}.
- Google's metadata server, `GET /computeMetadata/...` or any GET with the header Metadata-Flavor: Google (the
  ping google-auth sends to GCE_METADATA_IP): 404, remembered, so a test can show whether anyone asked it.

A 5xx answer carries Retry-After-Ms: 10, as Azure's services send it, so that azure-core's retries take
milliseconds rather than its seconds of backoff.

Every request is remembered in `requests` as a `Request`: which service, its parameters (the Google assertion as
its decoded claims), who signed it (STS: the access key id of its Authorization header; Azure: whether its
identity header was right), never a secret it carried. The credentials handed out are made here, fake, and kept
in `Request.answer` so that a test can compare a provider's token with them.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import escape

from dev.local_http import LocalHttpServer

STS_NAMESPACE = "https://sts.amazonaws.com/doc/2011-06-15/"
GOOGLE_AUDIENCE = "https://oauth2.googleapis.com/token"  # the aud google-auth puts in every grant assertion
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ACCOUNT = "123456789012"  # the AWS account of the roles and of the caller STS names in a refusal


@dataclass(frozen=True)
class Request:
    service: str  # sts, app_service, imds, google, google_metadata or unknown
    method: str
    path: str
    params: dict[str, str]  # query or form parameters; for google, the grant's assertion as its claims
    signed_by: str | None  # sts: the Authorization header's access key id; azure: "right header", "wrong header"
    status: int
    answer: dict[str, object] = field(default_factory=dict)  # the credentials handed out, empty on refusal


def _b64url_decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


class CloudCredentials:
    """The stand-ins, served by a thread of this process until `stop()`. `lifetime_s` is how long the credentials
    handed out from now on last (a test may shorten it); `fail(service, status)` makes a service refuse."""

    def __init__(self, lifetime_s: int = 3600):
        self.lifetime_s = lifetime_s
        self.identity_header = f"identity-header-{secrets.token_hex(8)}"  # App Service's IDENTITY_HEADER
        self.requests: list[Request] = []
        self._failures: dict[str, int] = {}
        self._public_keys: dict[str, object] = {}  # service account email -> its RSA public key
        self._issued = 0
        self._lock = threading.Lock()
        self._server = LocalHttpServer(self._handler(), "cloud-credentials", poll_interval=0.05)

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def host(self) -> str:
        """host:port, as GCE_METADATA_HOST takes it."""
        return self._server.host

    @property
    def identity_endpoint(self) -> str:
        """App Service's IDENTITY_ENDPOINT."""
        return f"{self.url}/msi/token"

    @property
    def token_uri(self) -> str:
        """A Google service account's token_uri."""
        return f"{self.url}/token"

    def stop(self) -> None:
        self._server.stop()

    def fail(self, service: str, status: int | None) -> None:
        """From now on `service` (sts, app_service, imds, google) answers `status` with its error; None: it grants."""
        with self._lock:
            if status is None:
                self._failures.pop(service, None)
            else:
                self._failures[service] = status

    def of(self, service: str) -> list[Request]:
        """The requests `service` got, in order."""
        with self._lock:
            return [r for r in self.requests if r.service == service]

    def service_account(self, email: str, project_id: str = "kafkasource-test") -> dict[str, str]:
        """A service account key file's content (GOOGLE_APPLICATION_CREDENTIALS) whose token_uri is this stand-in,
        with a new RSA key whose public half the stand-in checks the grants' assertions against."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        with self._lock:
            self._public_keys[email] = key.public_key()
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        return {
            "type": "service_account",
            "project_id": project_id,
            "private_key_id": secrets.token_hex(20),
            "private_key": pem,
            "client_email": email,
            "client_id": str(secrets.randbelow(10**20)),
            "auth_uri": f"{self.url}/auth",
            "token_uri": self.token_uri,
        }

    # --- the services -------------------------------------------------------------------------------------------

    def _next(self, prefix: str) -> str:
        with self._lock:
            self._issued += 1
            return f"{prefix}{self._issued:04d}{secrets.token_hex(8)}"

    def _failure(self, service: str) -> int | None:
        with self._lock:
            return self._failures.get(service)

    def _sts(self, form: dict[str, str], authorization: str) -> tuple[int, str, dict, bytes]:
        found = re.search(r"Credential=([A-Z0-9]+)/", authorization)
        signed_by = found.group(1) if found else None
        request_id = secrets.token_hex(16)
        status = self._failure("sts")
        if form.get("Action") != "AssumeRole":
            status, code, message = 400, "InvalidAction", f"Could not find operation {form.get('Action')}"
        elif status is not None:
            code, message = "AccessDenied", (
                f"User: arn:aws:iam::{ACCOUNT}:user/kafkasource-test is not authorized to perform: sts:AssumeRole "
                f"on resource: {form.get('RoleArn')}"
            )
        if status is not None:
            body = (
                f'<ErrorResponse xmlns="{STS_NAMESPACE}"><Error><Type>Sender</Type><Code>{code}</Code>'
                f"<Message>{escape(message)}</Message></Error><RequestId>{request_id}</RequestId></ErrorResponse>"
            )
            return status, signed_by, {}, body.encode()
        expiration = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=self.lifetime_s)
        answer = {
            "AccessKeyId": "ASIA" + secrets.token_hex(8).upper(),
            "SecretAccessKey": secrets.token_urlsafe(30),
            "SessionToken": self._next("session-token-"),
            "Expiration": expiration.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        session = form.get("RoleSessionName", "")
        role = form.get("RoleArn", "").rsplit("/", 1)[-1]
        credentials = "".join(f"<{name}>{escape(value)}</{name}>" for name, value in answer.items())
        body = (
            f'<AssumeRoleResponse xmlns="{STS_NAMESPACE}"><AssumeRoleResult>'
            f"<AssumedRoleUser><Arn>arn:aws:sts::{ACCOUNT}:assumed-role/{escape(role)}/{escape(session)}</Arn>"
            f"<AssumedRoleId>AROA{secrets.token_hex(8).upper()}:{escape(session)}</AssumedRoleId></AssumedRoleUser>"
            f"<Credentials>{credentials}</Credentials><PackedPolicySize>6</PackedPolicySize></AssumeRoleResult>"
            f"<ResponseMetadata><RequestId>{request_id}</RequestId></ResponseMetadata></AssumeRoleResponse>"
        )
        return 200, signed_by, answer, body.encode()

    def _app_service(self, params: dict[str, str], header: str | None) -> tuple[int, str, dict, dict]:
        signed_by = None if header is None else (
            "right header" if secrets.compare_digest(header, self.identity_header) else "wrong header"
        )
        status = self._failure("app_service")
        if signed_by != "right header":
            status = 401
        elif params.get("api-version") != "2019-08-01" or not params.get("resource"):
            status = 400
        if status is not None:
            return status, signed_by, {}, {"statusCode": status, "message": f"the stand-in refused ({status})"}
        answer = {
            "access_token": self._next("azure-token-"),
            "expires_on": str(int(time.time()) + self.lifetime_s),  # App Service writes it as a string
            "resource": params["resource"],
            "token_type": "Bearer",
            "client_id": params.get("client_id", "system-assigned"),
        }
        return 200, signed_by, answer, answer

    def _imds(self, params: dict[str, str], metadata: str | None) -> tuple[int, str, dict, dict]:
        status = self._failure("imds")
        if metadata != "true" or not params.get("resource"):
            status = 400
        if status is not None:
            return status, None, {}, {"error": "invalid_request", "error_description": "the stand-in refused"}
        answer = {
            "access_token": self._next("imds-token-"),
            "expires_in": str(self.lifetime_s),
            "expires_on": str(int(time.time()) + self.lifetime_s),
            "resource": params["resource"],
            "token_type": "Bearer",
        }
        return 200, None, answer, answer

    def _google(self, form: dict[str, str]) -> tuple[int, dict, dict, dict]:
        claims, problem = self._assertion(form.get("assertion", ""))
        status = self._failure("google")
        if form.get("grant_type") != JWT_BEARER:
            status, problem = 400, "unsupported grant_type"
        elif problem:
            status = 400
        shown = dict(claims, grant_type=form.get("grant_type", ""))
        if status is not None:
            return status, shown, {}, {"error": "invalid_grant", "error_description": problem or "the stand-in refused"}
        answer = {"access_token": self._next("ya29.stand-in-"), "expires_in": self.lifetime_s, "token_type": "Bearer"}
        return 200, shown, answer, answer

    def _assertion(self, assertion: str) -> tuple[dict[str, str], str | None]:
        """The grant assertion's claims (as text), and what is wrong with it, if anything."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        try:
            header_part, claims_part, signature_part = assertion.split(".")
            header = json.loads(_b64url_decode(header_part))
            claims = json.loads(_b64url_decode(claims_part))
            signature = _b64url_decode(signature_part)
        except (ValueError, binascii.Error):
            return {}, "Invalid JWT: not three base64url parts"
        shown = {name: str(value) for name, value in claims.items()}
        with self._lock:
            key = self._public_keys.get(str(claims.get("iss")))
        if key is None or header.get("alg") != "RS256":
            return shown, "Invalid JWT: unknown issuer or algorithm"
        try:
            key.verify(signature, f"{header_part}.{claims_part}".encode(), padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            return shown, "Invalid JWT Signature."
        if claims.get("aud") != GOOGLE_AUDIENCE or not int(claims.get("iat", 0)) <= time.time() + 60 < int(
            claims.get("exp", 0)
        ) + 60:
            return shown, "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe"
        return shown, None

    def _remember(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                params = {name: values[0] for name, values in parse_qs(url.query).items()}
                if url.path == "/msi/token":
                    status, signed_by, answer, document = stand_in._app_service(
                        params, self.headers.get("X-IDENTITY-HEADER")
                    )
                    self._json("app_service", params, signed_by, status, answer, document)
                elif url.path == "/metadata/identity/oauth2/token":
                    status, signed_by, answer, document = stand_in._imds(params, self.headers.get("Metadata"))
                    self._json("imds", params, signed_by, status, answer, document)
                elif url.path.startswith("/computeMetadata") or self.headers.get("Metadata-Flavor") == "Google":
                    self._json("google_metadata", params, None, 404, {}, {"error": "not_found"})
                else:
                    self._json("unknown", params, None, 404, {}, {"error": "not_found"})

            def do_POST(self) -> None:
                url = urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode(errors="replace")
                form = {name: values[0] for name, values in parse_qs(body).items()}
                if url.path == "/":
                    status, signed_by, answer, payload = stand_in._sts(form, self.headers.get("Authorization", ""))
                    stand_in._remember(Request("sts", "POST", url.path, form, signed_by, status, answer))
                    self._send(status, "text/xml", payload)
                elif url.path == "/token":
                    status, shown, answer, document = stand_in._google(form)
                    self._json("google", shown, None, status, answer, document)
                else:
                    self._json("unknown", {}, None, 404, {}, {"error": "not_found"})

            def _json(self, service, params, signed_by, status, answer, document) -> None:
                stand_in._remember(Request(service, self.command, urlsplit(self.path).path, params, signed_by,
                                           status, answer))
                self._send(status, "application/json", json.dumps(document).encode())

            def _send(self, status: int, content_type: str, payload: bytes) -> None:
                self.send_response(status)
                if status >= 500:  # as Azure's services do: azure-core retries after 10 ms, not its seconds of backoff
                    self.send_header("Retry-After-Ms", "10")
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args) -> None:  # requests are kept in `requests`, not printed
                pass

        return Handler
