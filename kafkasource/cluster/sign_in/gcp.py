"""oauthProvider=gcp: Google Cloud Managed Service for Apache Kafka, with application default credentials.

Google's brokers take OAUTHBEARER where the token is shaped as a JWT that carries a Google access token: a header
{"typ": "JWT", "alg": "GOOG_OAUTH2_TOKEN"}, claims naming the principal (the service account) and the expiry,
and the access token itself in the place of the signature, each part base64url-encoded without padding.
google-auth finds the credentials (GOOGLE_APPLICATION_CREDENTIALS, the metadata server, gcloud's login).
"""

from __future__ import annotations

import base64
import datetime
import json
import threading
import time

from kafkasource.cluster.sign_in.provider import Token

DEFAULT_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
_credentials: dict[tuple[str, ...], object] = {}
_lock = threading.Lock()


def _part(data: str) -> str:
    return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")


def google_token(arguments: dict[str, str], _bootstrap_servers: str) -> Token:
    import google.auth
    from google.auth.transport.requests import Request

    scopes = tuple(s.strip() for s in arguments.get("scopes", "").split(",") if s.strip()) or DEFAULT_SCOPES
    with _lock:
        credentials = _credentials.get(scopes)
        if credentials is None:
            credentials, _project = google.auth.default(scopes=list(scopes))
            _credentials[scopes] = credentials
        if not credentials.valid:  # type: ignore[attr-defined]
            credentials.refresh(Request())  # type: ignore[attr-defined]
    expiry = credentials.expiry  # type: ignore[attr-defined]  # naive UTC, as google-auth keeps it
    expires_at = expiry.replace(tzinfo=datetime.UTC).timestamp()
    principal = getattr(credentials, "service_account_email", None) or "gcp"
    claims = {"exp": int(expires_at), "iat": int(time.time()), "iss": "Google", "scope": "kafka", "sub": principal}
    header = json.dumps({"typ": "JWT", "alg": "GOOG_OAUTH2_TOKEN"})
    token = ".".join((_part(header), _part(json.dumps(claims)), _part(credentials.token)))  # type: ignore[attr-defined]
    return Token(token, expires_at, principal)
