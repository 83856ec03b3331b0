"""Secrets kept out of messages and logs: which setting names hold one (librdkafka's, the schema registry client's,
a token provider's), and text or a configuration with their values masked. A leaf: the clusters' settings, the
registry's and the sink's failures all mask with it.
"""

from __future__ import annotations

from collections.abc import Mapping

# names holding secrets: librdkafka's, and the schema registry client's (basic.auth.user.info is user:password)
SECRET_MARKERS = ("password", "passphrase", "secret", "jaas", "key.pem", "token", "user.info")


def is_secret(name: str) -> bool:
    return any(marker in name.lower() for marker in SECRET_MARKERS)


def masked(text: str, config: Mapping[str, object], also: tuple[str, ...] | list[str] = ()) -> str:
    """`text` with the value of every secret setting (and `also`) hidden, longest first: librdkafka's messages
    quote values, and others' answers it passes on (an identity provider's) may quote them too."""
    hidden = [str(v) for n, v in config.items() if v and is_secret(n)] + [v for v in also if v]
    for value in sorted(hidden, key=len, reverse=True):
        text = text.replace(value, "*****")
    return text


def redact(config: Mapping[str, object]) -> dict[str, object]:
    """The config with secret values hidden, for messages and logs."""
    return {k: ("*****" if is_secret(k) else v) for k, v in config.items()}
