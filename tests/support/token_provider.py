"""A token provider of the tests' own, for oauthProvider=tests.support.token_provider:client_credentials: it asks the
identity provider the tests start (dev/oidc.py) for a token by the client credentials grant, as a user's provider
would ask theirs. Spark's Python workers call it, on the driver and on executors; the tests' Spark session lists it
in KAFKASOURCE_OAUTH_PROVIDERS (tests/conftest.py), as a cluster's owner would.

Its arguments: tokenUrl, clientId, clientSecret; `fail`, when set, is raised as the reason no token could be made.
"""

from __future__ import annotations

import json
import time
import urllib.request
from urllib.parse import urlencode

NAME = "tests.support.token_provider:client_credentials"


def client_credentials(arguments: dict[str, str]) -> tuple[str, float, str]:
    if arguments.get("fail"):
        raise RuntimeError(arguments["fail"])
    form = {"grant_type": "client_credentials", "client_id": arguments["clientid"],
            "client_secret": arguments["clientsecret"], "scope": "kafka"}
    with urllib.request.urlopen(arguments["tokenurl"], urlencode(form).encode(), timeout=30) as answer:
        granted = json.load(answer)
    # the token is good for expires_in; librdkafka is told half that, so it asks for the next one (at 80% of what
    # it was told) well before a broker that enforces the token's expiry wants the connection signed in again (at
    # 90% of the token's own lifetime), even on a busy machine where the identity provider answers slowly
    return granted["access_token"], time.time() + granted["expires_in"] / 2, arguments["clientid"]
