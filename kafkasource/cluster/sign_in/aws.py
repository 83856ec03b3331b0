"""oauthProvider=aws_msk_iam: AWS MSK's IAM sign-in, with AWS's own signer (aws-msk-iam-sasl-signer-python).

MSK's IAM listener takes OAUTHBEARER where the token is a SigV4-presigned request for the action
kafka-cluster:Connect, signed with credentials from AWS's chain (environment, profile, container or instance
role, web identity), valid 15 minutes. The signer makes it locally; only assuming a role asks AWS (STS).
"""

from __future__ import annotations

import re

from kafkasource.cluster.sign_in.provider import Token
from kafkasource.errors import SignInError

# b-1.orders.abc123.c2.kafka.us-east-1.amazonaws.com, boot-abc.c1.kafka-serverless.eu-west-1.amazonaws.com
MSK_HOST = re.compile(r"\.kafka(?:-serverless)?\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(?:\.cn)?(?::\d+)?$")


def region_of(bootstrap_servers: str) -> str | None:
    for server in bootstrap_servers.split(","):
        found = MSK_HOST.search(server.strip().lower())
        if found:
            return found.group(1)
    return None


def msk_iam_token(arguments: dict[str, str], bootstrap_servers: str) -> Token:
    from aws_msk_iam_sasl_signer import MSKAuthTokenProvider

    region = arguments.get("region") or region_of(bootstrap_servers)
    if not region:
        raise SignInError(
            "oauthProvider aws_msk_iam needs the cluster's AWS region: set oauthProvider.region (like us-east-1); "
            f"it could not be read from kafka.bootstrap.servers ({bootstrap_servers})"
        )
    if arguments.get("rolearn"):
        session = arguments.get("rolesessionname") or "kafkasource"
        token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_role_arn(region, arguments["rolearn"], session)
    elif arguments.get("profile"):
        token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_profile(region, arguments["profile"])
    else:
        token, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
    return Token(token, expiry_ms / 1000, "aws_msk_iam")
