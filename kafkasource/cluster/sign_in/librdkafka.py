"""The librdkafka settings that go with oauthProvider, and the Java client's MSK settings turned into advice.

With a token provider, the clients sign in with SASL OAUTHBEARER over TLS, as every cloud's brokers ask, unless
kafka.security.protocol says otherwise (a broker of one's own on SASL_PLAINTEXT). A second source of tokens
(librdkafka's own OIDC method) or another mechanism would contradict the provider, so either is refused.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafkasource.cluster.sign_in.custom import OPTION
from kafkasource.errors import OptionError

MSK_ADVICE = (
    f"AWS MSK's IAM sign-in is the option {OPTION}=aws_msk_iam here (pip install 'kafkasource[aws]'), with "
    f"{OPTION}.region, {OPTION}.profile or {OPTION}.roleArn as needed; remove the Java client's MSK settings"
)


def java_msk_setting(setting: str, value: str) -> bool:
    """Whether a kafka.* setting is one of the Java client's MSK IAM settings (aws-msk-iam-auth's jar)."""
    if setting in ("sasl.mechanism", "sasl.mechanisms"):
        return value.strip().upper() == "AWS_MSK_IAM"
    if setting in ("sasl.jaas.config", "sasl.client.callback.handler.class", "sasl.login.callback.handler.class"):
        return "software.amazon.msk.auth.iam" in value or "IAMLoginModule" in value
    return False


def with_provider_settings(config: dict[str, str], options: Mapping[str, str]) -> dict[str, str]:
    """`config` (librdkafka settings) as clients signing in with the options' token provider take it."""
    provider = options.get(OPTION.lower())
    if provider is None or not str(provider).strip():
        return config
    mechanism = config.get("sasl.mechanism", config.get("sasl.mechanisms", "OAUTHBEARER"))
    if mechanism.strip().upper() != "OAUTHBEARER":
        raise OptionError(
            f"option {OPTION} signs in with SASL OAUTHBEARER, but kafka.sasl.mechanism is {mechanism!r}: remove "
            f"kafka.sasl.mechanism, or remove {OPTION} to sign in with {mechanism}"
        )
    if config.get("sasl.oauthbearer.method", "default").strip().lower() != "default":
        raise OptionError(
            f"options {OPTION} and kafka.sasl.oauthbearer.method are two sources of tokens: keep {OPTION} (its "
            "provider makes the tokens) or kafka.sasl.oauthbearer.method=oidc (librdkafka fetches them), not both"
        )
    return {"security.protocol": "SASL_SSL", **config, "sasl.mechanism": "OAUTHBEARER"}
