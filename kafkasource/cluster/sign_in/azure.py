"""oauthProvider=azure: a Microsoft Entra ID token for Event Hubs' Kafka endpoint, from azure-identity.

Event Hubs takes OAUTHBEARER with an Entra ID access token for the scope https://<namespace>.servicebus.windows.net/
.default, the namespace being the host of the bootstrap server. DefaultAzureCredential finds the credentials where
Azure puts them: environment (a service principal), workload identity, managed identity, the Azure CLI's login.
"""

from __future__ import annotations

import re
import threading

from kafkasource.cluster.sign_in.provider import Token
from kafkasource.errors import SignInError

EVENT_HUBS_HOST = re.compile(
    r"^([a-z0-9][a-z0-9-]*)\.servicebus\.(?:windows\.net|chinacloudapi\.cn|usgovcloudapi\.net)"
)
_credentials: dict[str | None, object] = {}  # one credential per managed identity: it caches its own tokens
_lock = threading.Lock()


def scope_of(bootstrap_servers: str) -> str | None:
    host = bootstrap_servers.split(",")[0].strip().lower().rsplit(":", 1)[0]
    found = EVENT_HUBS_HOST.match(host)
    return f"https://{host}/.default" if found else None


def entra_token(arguments: dict[str, str], bootstrap_servers: str) -> Token:
    from azure.identity import DefaultAzureCredential

    scope = arguments.get("scope") or scope_of(bootstrap_servers)
    if not scope:
        raise SignInError(
            "oauthProvider azure needs the token's scope: set oauthProvider.scope (like "
            "https://<namespace>.servicebus.windows.net/.default); it could not be read from kafka.bootstrap.servers "
            f"({bootstrap_servers}), which is not an Event Hubs namespace"
        )
    client_id = arguments.get("clientid")
    with _lock:
        credential = _credentials.get(client_id)
        if credential is None:
            credential = DefaultAzureCredential(managed_identity_client_id=client_id)
            _credentials[client_id] = credential
    access = credential.get_token(scope)  # type: ignore[attr-defined]
    return Token(access.token, float(access.expires_on), "azure")
