"""oauthProvider's token providers make real tokens with their real libraries, from local stand-ins of the credential
sources those libraries read (dev/cloud_credentials.py on 127.0.0.1): no Spark, no broker, no other network.

- aws_msk_iam: aws-msk-iam-sasl-signer-python signs a kafka-cluster:Connect URL with credentials from the
  environment, a profile, or a role assumed at the STS stand-in (AWS_ENDPOINT_URL_STS);
- azure: azure-identity's DefaultAzureCredential, answered by the App Service managed identity stand-in
  (IDENTITY_ENDPOINT, IDENTITY_HEADER), or by the IMDS stand-in (AZURE_POD_IDENTITY_AUTHORITY_HOST);
- gcp: google-auth's application default credentials, a service account key file whose token_uri is the stand-in;
- module:function providers of this module, allowed through KAFKASOURCE_OAUTH_PROVIDERS;
- the options around oauthProvider, and the per-process token cache.

Each test sets the environment the library reads (monkeypatch) so that the machine's own credentials never count.
"""

from __future__ import annotations

import base64
import calendar
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, parse_qsl, quote, urlsplit

import pytest

from dev.cloud_credentials import ACCOUNT, GOOGLE_AUDIENCE, CloudCredentials
from kafkasource.cluster.sign_in import azure as azure_provider
from kafkasource.cluster.sign_in import gcp as gcp_provider
from kafkasource.cluster.sign_in import provider
from kafkasource.errors import OptionError, SignInError
from kafkasource.options import parse_options
from kafkasource.options.sink import parse_sink_options

REPO = Path(__file__).resolve().parents[2]
MSK_BOOTSTRAP = "b-1.orders.abc123.c2.kafka.eu-west-1.amazonaws.com:9098,b-2.orders.abc123.c2.kafka.eu-west-1." \
    "amazonaws.com:9098"
SERVERLESS_BOOTSTRAP = "boot-abcd1234.c1.kafka-serverless.ap-southeast-2.amazonaws.com:9098"
EVENT_HUBS_BOOTSTRAP = "orders-ns.servicebus.windows.net:9093"
PLAIN_BOOTSTRAP = "broker.internal:9093"
ACCESS_KEY_ID = "AKIAKAFKASOURCETEST1"
SECRET_ACCESS_KEY = "environment-secret-access-key-0123456789"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
SERVICE_ACCOUNT = "kafka-reader@kafkasource-test.iam.gserviceaccount.com"
THIS_MODULE = "tests.unit.test_sign_in_providers"


# --- fixtures --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stand_ins():
    stand_in = CloudCredentials()
    yield stand_in
    stand_in.stop()


@pytest.fixture
def stand_in(stand_ins, monkeypatch):
    """The module's stand-ins with nothing remembered, granting, and proxies out of the way of 127.0.0.1."""
    stand_ins.requests.clear()
    for service in ("sts", "app_service", "imds", "google"):
        stand_ins.fail(service, None)
    stand_ins.lifetime_s = 3600
    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    return stand_ins


@pytest.fixture(autouse=True)
def fresh_caches(monkeypatch):
    """No test sees another's tokens or credential objects: kafkasource's token cache, azure.py's and gcp.py's
    credentials, and boto3's default session (which keeps the credentials and config it read first)."""
    import boto3

    provider._CACHE.clear()
    azure_provider._credentials.clear()
    gcp_provider._credentials.clear()
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    yield
    provider._CACHE.clear()
    azure_provider._credentials.clear()
    gcp_provider._credentials.clear()


@pytest.fixture
def aws_env(monkeypatch, tmp_path):
    """AWS's chain sees only what a test gives it: the environment's keys, empty config and credentials files,
    no instance metadata. Returns the credentials file, for a test to write profiles into."""
    for variable in list(os.environ):
        if variable.startswith("AWS_"):
            monkeypatch.delenv(variable)
    config, credentials = tmp_path / "aws-config", tmp_path / "aws-credentials"
    config.write_text("")
    credentials.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_ACCESS_KEY)
    return credentials


@pytest.fixture
def azure_env(monkeypatch, tmp_path, stand_in):
    """DefaultAzureCredential's chain sees the App Service managed identity stand-in and nothing else: no AZURE_*
    service principal or workload identity, no az/pwsh/azd on PATH, an empty home; IMDS, should anything ask it,
    is the stand-in too (AZURE_POD_IDENTITY_AUTHORITY_HOST), where the test sees the ask."""
    for variable in list(os.environ):
        if variable.startswith(("AZURE_", "IDENTITY_", "MSI_")) or variable == "IMDS_ENDPOINT":
            monkeypatch.delenv(variable)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("HOME", str(empty))
    monkeypatch.setenv("IDENTITY_ENDPOINT", stand_in.identity_endpoint)
    monkeypatch.setenv("IDENTITY_HEADER", stand_in.identity_header)
    monkeypatch.setenv("AZURE_POD_IDENTITY_AUTHORITY_HOST", stand_in.url)
    return stand_in


@pytest.fixture(scope="module")
def key_file(stand_ins, tmp_path_factory):
    """A service account key file whose token_uri is the stand-in (its RSA key made once for the module)."""
    path = tmp_path_factory.mktemp("gcp") / "service-account.json"
    path.write_text(json.dumps(stand_ins.service_account(SERVICE_ACCOUNT)))
    return path


@pytest.fixture
def gcp_env(monkeypatch, tmp_path, stand_in, key_file):
    """google-auth's application default credentials are the key file; gcloud's config is an empty directory, and
    the metadata server, should anything ask it, is the stand-in (GCE_METADATA_IP), where the test sees the ask."""
    for variable in ("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "GOOGLE_CLOUD_QUOTA_PROJECT",
                     "GOOGLE_SDK_EXPERIMENTAL_PYTHON_REGIONAL_ACCESS_BOUNDARY_LOOKUP_ENABLED"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setenv("GCE_METADATA_IP", stand_in.host)
    return stand_in


# --- helpers ---------------------------------------------------------------------------------------------------


def source_provider(bootstrap: str, options: dict[str, str]) -> provider.TokenProvider:
    parsed = parse_options({"kafka.bootstrap.servers": bootstrap, "subscribe": "orders", **options})
    assert parsed.token_provider is not None
    return parsed.token_provider


def sink_provider(bootstrap: str, options: dict[str, str]) -> provider.TokenProvider:
    parsed = parse_sink_options({"kafka.bootstrap.servers": bootstrap, "topic": "orders", **options}, streaming=False)
    assert parsed.token_provider is not None
    return parsed.token_provider


def b64url_decode(part: str) -> bytes:
    assert "=" not in part, "base64url without padding"
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def presigned_url(token: str) -> tuple[str, dict[str, str]]:
    url = b64url_decode(token).decode()
    return url, {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


def sigv4_signature(url: str, secret_access_key: str) -> str:
    """The SigV4 query signature of `url` as AWS computes it, written out here from the SigV4 specification (GET,
    path /, only the host header signed, empty payload): a signature the signer made with another key differs."""
    parts = urlsplit(url)
    params = [(n, v) for n, v in parse_qsl(parts.query, keep_blank_values=True)
              if n not in ("X-Amz-Signature", "User-Agent")]  # the signer appends User-Agent after signing
    canonical_query = "&".join(f"{quote(n, safe='-_.~')}={quote(v, safe='-_.~')}" for n, v in sorted(params))
    canonical = "\n".join(("GET", parts.path or "/", canonical_query, f"host:{parts.hostname}", "", "host",
                           EMPTY_SHA256))
    fields = dict(params)
    scope = fields["X-Amz-Credential"].split("/", 1)[1]
    date, region, service, terminator = scope.split("/")
    to_sign = "\n".join(("AWS4-HMAC-SHA256", fields["X-Amz-Date"], scope,
                         hashlib.sha256(canonical.encode()).hexdigest()))
    key = f"AWS4{secret_access_key}".encode()
    for part in (date, region, service, terminator):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def signed_at(fields: dict[str, str]) -> float:
    return calendar.timegm(time.strptime(fields["X-Amz-Date"], "%Y%m%dT%H%M%SZ"))


def assert_msk_token(token: provider.Token, region: str, access_key_id: str, secret_access_key: str,
                     before: float, after: float) -> dict[str, str]:
    """`token` is a presigned kafka-cluster:Connect URL for `region`, signed with these credentials, valid 900 s
    from when it was made; returns the URL's query parameters."""
    url, fields = presigned_url(token.value)
    parts = urlsplit(url)
    assert (parts.scheme, parts.hostname, parts.path) == ("https", f"kafka.{region}.amazonaws.com", "/")
    assert fields["Action"] == "kafka-cluster:Connect"
    assert fields["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    credential = fields["X-Amz-Credential"].split("/")
    assert credential[0] == access_key_id
    assert credential[2:] == [region, "kafka-cluster", "aws4_request"]
    assert credential[1] == fields["X-Amz-Date"][:8]
    assert fields["X-Amz-Expires"] == "900"
    assert fields["X-Amz-SignedHeaders"] == "host"
    assert fields["X-Amz-Signature"] == sigv4_signature(url, secret_access_key)
    assert fields["User-Agent"].startswith("aws-msk-iam-sasl-signer-python/")
    assert token.expires_at == signed_at(fields) + 900
    assert int(before) + 900 <= token.expires_at <= after + 900
    assert token.principal == "aws_msk_iam"
    return fields


# --- aws_msk_iam -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("session_token", [None, "environment-session-token"])
def test_aws_token_from_environment_credentials_is_a_presigned_connect_url_for_the_msk_region(
    aws_env, monkeypatch, session_token
):
    """The region comes from the MSK bootstrap host; the URL is signed (verified here) with the environment's
    keys, carries their session token when there is one, and the token lasts 900 s."""
    if session_token:
        monkeypatch.setenv("AWS_SESSION_TOKEN", session_token)
    token_provider = source_provider(MSK_BOOTSTRAP, {"oauthProvider": "aws_msk_iam"})

    before = time.time()
    token = token_provider.token()
    after = time.time()

    fields = assert_msk_token(token, "eu-west-1", ACCESS_KEY_ID, SECRET_ACCESS_KEY, before, after)
    assert fields.get("X-Amz-Security-Token") == session_token
    assert "=" not in token.value and "+" not in token.value and "/" not in token.value


@pytest.mark.parametrize(
    ("bootstrap", "region_option", "region"),
    [
        (SERVERLESS_BOOTSTRAP, None, "ap-southeast-2"),
        (MSK_BOOTSTRAP, "us-east-1", "us-east-1"),
        (PLAIN_BOOTSTRAP, "eu-central-1", "eu-central-1"),
    ],
    ids=["serverless-host", "region-option-over-msk-host", "region-option-for-other-host"],
)
def test_aws_region_from_serverless_host_or_from_the_region_option(aws_env, bootstrap, region_option, region):
    """MSK Serverless hosts name their region too; oauthProvider.region wins over the host's."""
    options = {"oauthProvider": "aws_msk_iam"} | ({"oauthProvider.region": region_option} if region_option else {})
    before = time.time()
    token = source_provider(bootstrap, options).token()
    assert_msk_token(token, region, ACCESS_KEY_ID, SECRET_ACCESS_KEY, before, time.time())


def test_aws_without_a_region_is_refused_naming_the_region_option(aws_env):
    """A host that is not MSK's names no region, and the error says which option gives it."""
    with pytest.raises(SignInError) as refused:
        source_provider(PLAIN_BOOTSTRAP, {"oauthProvider": "aws_msk_iam"}).token()
    assert str(refused.value) == (
        "oauthProvider aws_msk_iam needs the cluster's AWS region: set oauthProvider.region (like us-east-1); "
        f"it could not be read from kafka.bootstrap.servers ({PLAIN_BOOTSTRAP})"
    )


def test_aws_profile_option_signs_with_that_profiles_keys_not_the_environments(aws_env):
    """oauthProvider.profile picks a profile of the credentials file; the environment's keys (also set) and the
    default profile do not sign."""
    aws_env.write_text(
        "[default]\naws_access_key_id = AKIADEFAULTPROFILE01\naws_secret_access_key = default-profile-secret\n\n"
        "[kafka-reader]\naws_access_key_id = AKIAKAFKAREADER00001\naws_secret_access_key = reader-profile-secret\n"
        "aws_session_token = reader-session-token\n"
    )
    before = time.time()
    made = source_provider(MSK_BOOTSTRAP, {"oauthProvider": "aws_msk_iam", "oauthProvider.profile": "kafka-reader"}
                           ).token()

    fields = assert_msk_token(made, "eu-west-1", "AKIAKAFKAREADER00001", "reader-profile-secret", before, time.time())
    assert fields["X-Amz-Security-Token"] == "reader-session-token"


def test_aws_unknown_profile_is_a_sign_in_error_naming_it(aws_env):
    with pytest.raises(SignInError) as refused:
        source_provider(MSK_BOOTSTRAP, {"oauthProvider": "aws_msk_iam", "oauthProvider.profile": "nowhere"}).token()
    assert str(refused.value) == (
        "oauthProvider aws_msk_iam could not make a token: ProfileNotFound: The config profile (nowhere) could not "
        "be found"
    )


@pytest.mark.parametrize("session_name", [None, "orders-reader"])
def test_aws_role_arn_assumes_the_role_at_sts_and_signs_with_its_temporary_credentials(
    aws_env, monkeypatch, stand_in, session_name
):
    """The signer asks STS (the stand-in, AWS_ENDPOINT_URL_STS) with the environment's keys for the role, session
    name kafkasource unless oauthProvider.roleSessionName says otherwise, and signs with what STS answered."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", stand_in.url)
    # with an endpoint URL, botocore signs the STS call for the client's region, and the client has none otherwise
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    role = f"arn:aws:iam::{ACCOUNT}:role/kafka-reader"
    options = {"oauthProvider": "aws_msk_iam", "oauthProvider.roleArn": role}
    if session_name:
        options["oauthProvider.roleSessionName"] = session_name

    before = time.time()
    token = source_provider(MSK_BOOTSTRAP, options).token()

    [asked] = stand_in.of("sts")
    assert asked.params == {"Action": "AssumeRole", "Version": "2011-06-15", "RoleArn": role,
                            "RoleSessionName": session_name or "kafkasource"}
    assert asked.signed_by == ACCESS_KEY_ID
    assert asked.answer["AccessKeyId"].startswith("ASIA")
    fields = assert_msk_token(token, "eu-west-1", asked.answer["AccessKeyId"], asked.answer["SecretAccessKey"],
                              before, time.time())
    assert fields["X-Amz-Security-Token"] == asked.answer["SessionToken"]


def test_aws_role_refused_by_sts_is_a_sign_in_error_with_aws_reason_and_no_secret(aws_env, monkeypatch, stand_in):
    """STS's AccessDenied reaches the user in AWS's words; the environment's secret key shows nowhere in it."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", stand_in.url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    stand_in.fail("sts", 403)
    role = f"arn:aws:iam::{ACCOUNT}:role/kafka-admin"

    with pytest.raises(SignInError) as refused:
        source_provider(MSK_BOOTSTRAP, {"oauthProvider": "aws_msk_iam", "oauthProvider.roleArn": role}).token()

    message = str(refused.value)
    assert message == (
        "oauthProvider aws_msk_iam could not make a token: ClientError: An error occurred (AccessDenied) when "
        f"calling the AssumeRole operation: User: arn:aws:iam::{ACCOUNT}:user/kafkasource-test is not authorized "
        f"to perform: sts:AssumeRole on resource: {role}"
    )
    assert role in message and SECRET_ACCESS_KEY not in message
    assert [r.status for r in stand_in.of("sts")] == [403]


# --- azure -----------------------------------------------------------------------------------------------------


def test_azure_token_from_app_service_managed_identity_for_the_event_hubs_namespace(azure_env):
    """The scope comes from the Event Hubs host; the managed identity endpoint gets it as the resource (without
    /.default), with its identity header; the token and expiry are what it answered; nothing asks IMDS."""
    before = time.time()
    token = source_provider(EVENT_HUBS_BOOTSTRAP, {"oauthProvider": "azure"}).token()

    [asked] = azure_env.of("app_service")
    assert asked.params == {"api-version": "2019-08-01", "resource": "https://orders-ns.servicebus.windows.net"}
    assert asked.signed_by == "right header"
    assert token.value == asked.answer["access_token"]
    # msal turns expires_on into expires_in and azure-identity back, each with its own int(time.time())
    assert token.expires_at - int(asked.answer["expires_on"]) in (0, 1)
    assert int(before) + 3600 <= int(asked.answer["expires_on"]) <= time.time() + 3600
    assert token.principal == "azure"
    assert [r.service for r in azure_env.requests] == ["app_service"]


def test_azure_scope_option_and_client_id_reach_the_managed_identity_endpoint(azure_env):
    """oauthProvider.scope wins over the host's (and serves a host that is not Event Hubs); oauthProvider.clientId
    is sent as the user-assigned identity's client_id."""
    token = source_provider(PLAIN_BOOTSTRAP, {
        "oauthProvider": "azure",
        "oauthProvider.scope": "https://other-ns.servicebus.windows.net/.default",
        "oauthProvider.clientId": "3b1a5c1e-0000-4000-8000-00000000c11d",
    }).token()

    [asked] = azure_env.of("app_service")
    assert asked.params == {"api-version": "2019-08-01", "resource": "https://other-ns.servicebus.windows.net",
                            "client_id": "3b1a5c1e-0000-4000-8000-00000000c11d"}
    assert token.value == asked.answer["access_token"]


def test_azure_without_a_scope_is_refused_naming_the_scope_option(azure_env):
    with pytest.raises(SignInError) as refused:
        source_provider(PLAIN_BOOTSTRAP, {"oauthProvider": "azure"}).token()
    assert str(refused.value) == (
        "oauthProvider azure needs the token's scope: set oauthProvider.scope (like "
        "https://<namespace>.servicebus.windows.net/.default); it could not be read from kafka.bootstrap.servers "
        f"({PLAIN_BOOTSTRAP}), which is not an Event Hubs namespace"
    )
    assert azure_env.requests == []


@pytest.mark.parametrize("status", [400, 500])
def test_azure_managed_identity_refusal_is_a_sign_in_error_naming_the_provider_and_the_identitys_reason(
    azure_env, status
):
    """DefaultAzureCredential's message lists every credential it tried, the managed identity's reason (the one
    that counts here) among the last: the error keeps it. The other credentials fail without leaving the process."""
    azure_env.fail("app_service", status)
    with pytest.raises(SignInError) as refused:
        source_provider(EVENT_HUBS_BOOTSTRAP, {"oauthProvider": "azure"}).token()
    message = str(refused.value)
    assert message.startswith(
        "oauthProvider azure could not make a token: ClientAuthenticationError: DefaultAzureCredential failed to "
        "retrieve a token from the included credentials."
    ), message
    assert (
        "ManagedIdentityCredential: App Service managed identity configuration not found in environment. Token "
        f"request error: (invalid_scope) {status}, the stand-in refused ({status})"
    ) in message, message
    assert "AzureCliCredential: Azure CLI not found on path" in message
    assert "\n" not in message and "\\n" in message  # one line: the library's line breaks shown escaped
    assert {r.status for r in azure_env.of("app_service")} == {status}
    assert {r.service for r in azure_env.requests} == {"app_service"}


def test_azure_without_app_service_asks_imds_which_the_stand_in_answers(azure_env, monkeypatch):
    """Without IDENTITY_ENDPOINT, the managed identity is IMDS's (the stand-in here): this is the ask the App
    Service tests show does not happen."""
    monkeypatch.delenv("IDENTITY_ENDPOINT")
    monkeypatch.delenv("IDENTITY_HEADER")
    before = time.time()
    token = source_provider(EVENT_HUBS_BOOTSTRAP, {"oauthProvider": "azure"}).token()
    [asked] = azure_env.requests
    assert (asked.service, asked.params) == (
        "imds", {"api-version": "2018-02-01", "resource": "https://orders-ns.servicebus.windows.net"}
    )
    assert token.value == asked.answer["access_token"]
    assert int(before) + 3600 <= token.expires_at <= time.time() + 3600


# --- gcp -------------------------------------------------------------------------------------------------------


def gcp_token_parts(token: provider.Token) -> tuple[dict, dict, str]:
    header, claims, access_token = token.value.split(".")
    return json.loads(b64url_decode(header)), json.loads(b64url_decode(claims)), b64url_decode(access_token).decode()


def test_gcp_token_is_googles_jwt_shape_around_the_access_token_of_the_service_account(gcp_env):
    """The key file's service account gets an access token by the JWT-bearer grant (default scope cloud-platform);
    the token wraps it as Google's brokers take it, its exp the access token's expiry; no metadata server asked."""
    before = time.time()
    token = source_provider("bootstrap.orders.europe-west1.managedkafka.kafkasource-test.cloud.goog:9092",
                            {"oauthProvider": "gcp"}).token()
    after = time.time()

    [asked] = gcp_env.of("google")
    header, claims, access_token = gcp_token_parts(token)
    assert header == {"typ": "JWT", "alg": "GOOG_OAUTH2_TOKEN"}
    assert access_token == asked.answer["access_token"]
    assert claims["sub"] == SERVICE_ACCOUNT and token.principal == SERVICE_ACCOUNT
    assert (claims["iss"], claims["scope"]) == ("Google", "kafka")
    assert claims["exp"] == int(token.expires_at)
    assert int(before) <= claims["iat"] <= after
    assert before + 3600 - 1 <= token.expires_at <= after + 3600
    assert asked.params["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert (asked.params["iss"], asked.params["aud"]) == (SERVICE_ACCOUNT, GOOGLE_AUDIENCE)
    assert asked.params["scope"] == "https://www.googleapis.com/auth/cloud-platform"
    assert [r.service for r in gcp_env.requests] == ["google"]


def test_gcp_scopes_option_is_the_grants_scope(gcp_env):
    source_provider(PLAIN_BOOTSTRAP, {
        "oauthProvider": "gcp",
        "oauthProvider.scopes": "https://www.googleapis.com/auth/userinfo.email, https://www.googleapis.com/auth/pubsub",
    }).token()
    [asked] = gcp_env.of("google")
    assert asked.params["scope"] == "https://www.googleapis.com/auth/userinfo.email https://www.googleapis.com/auth/pubsub"


def test_gcp_refused_grant_is_a_sign_in_error_naming_the_provider(gcp_env):
    gcp_env.fail("google", 400)
    with pytest.raises(SignInError) as refused:
        source_provider(PLAIN_BOOTSTRAP, {"oauthProvider": "gcp"}).token()
    message = str(refused.value)
    assert message.startswith("oauthProvider gcp could not make a token: RefreshError: ('invalid_grant: "), message
    assert "the stand-in refused" in message
    assert [r.status for r in gcp_env.of("google")] == [400]


def test_gcp_without_a_key_file_asks_the_metadata_server_which_the_stand_in_is(gcp_env, monkeypatch):
    """Without GOOGLE_APPLICATION_CREDENTIALS, application default credentials ping the metadata server (the
    stand-in): this is the ask the key file tests show does not happen. The stand-in is no GCE, so no credentials."""
    from google.auth.compute_engine import _metadata

    if _metadata.detect_gce_residency_linux():
        pytest.skip("this machine is a Google Compute Engine VM: google-auth would ask its real metadata server")
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS")
    with pytest.raises(SignInError) as refused:
        source_provider(PLAIN_BOOTSTRAP, {"oauthProvider": "gcp"}).token()
    assert str(refused.value).startswith(
        "oauthProvider gcp could not make a token: DefaultCredentialsError: Your default credentials were not found."
    ), str(refused.value)
    assert [r.service for r in gcp_env.requests] == ["google_metadata"]


# --- module:function providers ---------------------------------------------------------------------------------

CALLS: list[dict[str, str]] = []


def fixed_token(arguments: dict[str, str]) -> tuple[str, float]:
    CALLS.append(arguments)
    return f"custom-token-for-{arguments.get('tenant', 'nobody')}", time.time() + 600


def token_with_principal(arguments: dict[str, str]) -> tuple[str, float, str]:
    return "principal-token", time.time() + 600, "svc-orders"


def not_a_token(arguments: dict[str, str]) -> dict[str, str]:
    return {"token": "a dict is no token"}


def expired_token(arguments: dict[str, str]) -> tuple[str, int]:
    return "stale-token", 1_000_000


def failing_provider(arguments: dict[str, str]) -> tuple[str, float]:
    raise RuntimeError(f"login refused for {arguments['clientid']} with secret {arguments['clientsecret']}")


def allow(monkeypatch, *functions: str) -> None:
    monkeypatch.setenv("KAFKASOURCE_OAUTH_PROVIDERS", ",".join(f"{THIS_MODULE}:{f}" for f in functions))


@pytest.mark.parametrize("allowed", [None, f"{THIS_MODULE}:token_with_principal, other.module:fn"])
def test_custom_provider_not_listed_in_the_environment_is_refused_naming_the_variable(monkeypatch, allowed):
    if allowed is None:
        monkeypatch.delenv("KAFKASOURCE_OAUTH_PROVIDERS", raising=False)
    else:
        monkeypatch.setenv("KAFKASOURCE_OAUTH_PROVIDERS", allowed)
    name = f"{THIS_MODULE}:fixed_token"
    with pytest.raises(OptionError) as refused:
        source_provider(PLAIN_BOOTSTRAP, {"oauthProvider": name})
    assert str(refused.value) == (
        f"option oauthProvider={name} names code to run, which this cluster does not allow: whoever runs the "
        "cluster lists the providers it allows, as module:function separated by commas, in the environment "
        "variable KAFKASOURCE_OAUTH_PROVIDERS of the driver and the executors (spark-env.sh, or "
        "spark.executorEnv.KAFKASOURCE_OAUTH_PROVIDERS when the application starts)"
    )


@pytest.mark.parametrize("name", ["tests.unit.test_sign_in_providers:fixed_token()", "1tests:fn", "module:"])
def test_custom_provider_malformed_name_is_refused(monkeypatch, name):
    monkeypatch.setenv("KAFKASOURCE_OAUTH_PROVIDERS", name)
    with pytest.raises(OptionError) as refused:
        source_provider(PLAIN_BOOTSTRAP, {"oauthProvider": name})
    assert str(refused.value) == (
        "option oauthProvider must name a provider of your own as module:function (like mycompany.kafka:token); "
        f"got {name!r}"
    )


def test_unknown_provider_name_without_a_colon_is_refused_listing_the_builtins():
    with pytest.raises(OptionError) as refused:
        source_provider(PLAIN_BOOTSTRAP, {"oauthProvider": "okta"})
    assert str(refused.value) == (
        "option oauthProvider must be one of aws_msk_iam, azure, gcp or module:function (a provider of your own); "
        "got 'okta'"
    )


def test_custom_provider_listed_is_called_with_its_arguments_lower_cased(monkeypatch):
    """Spark's option names are case-insensitive: the provider gets its arguments by lower-cased names; a
    (token, expiry) answer signs in as principal kafkasource, which librdkafka's callback form returns too."""
    allow(monkeypatch, "fixed_token")
    CALLS.clear()
    token_provider = source_provider(PLAIN_BOOTSTRAP, {
        "oauthProvider": f"{THIS_MODULE}:fixed_token", "oauthProvider.Tenant": "orders", "OAUTHPROVIDER.ClientId": "c1",
    })
    before = time.time()
    value, expires_at, principal, extensions = token_provider(None)
    assert CALLS == [{"tenant": "orders", "clientid": "c1"}]
    assert (value, principal, extensions) == ("custom-token-for-orders", "kafkasource", {})
    assert before + 600 <= expires_at <= time.time() + 600


def test_custom_provider_principal_is_used(monkeypatch):
    allow(monkeypatch, "token_with_principal")
    token = source_provider(PLAIN_BOOTSTRAP, {"oauthProvider": f"{THIS_MODULE}:token_with_principal"}).token()
    assert (token.value, token.principal) == ("principal-token", "svc-orders")


def test_custom_provider_returning_something_else_is_a_sign_in_error_saying_what_to_return(monkeypatch):
    allow(monkeypatch, "not_a_token")
    with pytest.raises(SignInError) as refused:
        source_provider(PLAIN_BOOTSTRAP, {"oauthProvider": f"{THIS_MODULE}:not_a_token"}).token()
    assert str(refused.value) == (
        f"oauthProvider {THIS_MODULE}:not_a_token returned dict: it must return (token, expiry in seconds since the "
        "epoch) or (token, expiry, principal), the token a non-empty string"
    )


def test_custom_provider_expired_token_is_a_sign_in_error(monkeypatch):
    allow(monkeypatch, "expired_token")
    with pytest.raises(SignInError) as refused:
        source_provider(PLAIN_BOOTSTRAP, {"oauthProvider": f"{THIS_MODULE}:expired_token"}).token()
    assert str(refused.value) == (
        f"oauthProvider {THIS_MODULE}:expired_token made a token that expired already (at 1000000, seconds since "
        "the epoch): it must return a token valid for a while, with its expiry"
    )


def test_custom_provider_failure_masks_secret_arguments_and_shows_the_others(monkeypatch):
    allow(monkeypatch, "failing_provider")
    secret = "client-secret-7f3a9"
    with pytest.raises(SignInError) as refused:
        source_provider(PLAIN_BOOTSTRAP, {"oauthProvider": f"{THIS_MODULE}:failing_provider",
                                          "oauthProvider.clientId": "client-7", "oauthProvider.clientSecret": secret},
                        ).token()
    message = str(refused.value)
    assert message == (
        f"oauthProvider {THIS_MODULE}:failing_provider could not make a token: RuntimeError: login refused for "
        "client-7 with secret *****"
    )
    assert "client-7" in message and secret not in message


# --- options ---------------------------------------------------------------------------------------------------

MISSING_EXTRA_SCRIPT = """
import json, sys
from kafkasource.errors import OptionError
from kafkasource.options import parse_options
from kafkasource.options.sink import parse_sink_options

answers = {}
for name, module in (("aws_msk_iam", "aws_msk_iam_sasl_signer"), ("azure", "azure.identity"),
                     ("gcp", "google.auth")):
    sys.modules[module] = None  # as if the extra were not installed: importing it raises ImportError
    for kind, parse in (("source", lambda o: parse_options(dict(o, subscribe="orders"))),
                        ("sink", lambda o: parse_sink_options(dict(o, topic="orders"), streaming=False))):
        try:
            parse({"kafka.bootstrap.servers": "broker.internal:9093", "oauthProvider": name})
            answers[f"{name} {kind}"] = "accepted"
        except OptionError as exc:
            answers[f"{name} {kind}"] = str(exc)
    del sys.modules[module]
print(json.dumps(answers))
"""


def test_missing_extra_is_refused_when_the_options_are_parsed_naming_the_extra():
    """A process without the provider's library (sys.modules[name] = None, which importlib.util.find_spec reports
    as no module) refuses the option at parse time, before any token is asked for, for source and sink alike."""
    result = subprocess.run([sys.executable, "-c", MISSING_EXTRA_SCRIPT], cwd=REPO, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr[-3000:]
    answers = json.loads(result.stdout.strip().splitlines()[-1])
    expected = {}
    for name, module, extra in (("aws_msk_iam", "aws_msk_iam_sasl_signer", "aws"), ("azure", "azure.identity", "azure"),
                                ("gcp", "google.auth", "gcp")):
        message = (f"option oauthProvider={name} needs the {module} library, which is not installed: install "
                   f"kafkasource[{extra}] (pip install 'kafkasource[{extra}]') on the driver and executors")
        expected |= {f"{name} source": message, f"{name} sink": message}
    assert answers == expected


@pytest.mark.parametrize(
    ("name", "argument", "takes"),
    [
        ("gcp", "scope", "oauthProvider.scopes"),
        ("azure", "region", "oauthProvider.scope, oauthProvider.clientId"),
        ("aws_msk_iam", "clientid", "oauthProvider.region, oauthProvider.profile, oauthProvider.roleArn, "
                                    "oauthProvider.roleSessionName"),
    ],
)
@pytest.mark.parametrize("parse", [source_provider, sink_provider], ids=["source", "sink"])
def test_unknown_provider_argument_is_refused_naming_the_ones_it_takes(parse, name, argument, takes):
    with pytest.raises(OptionError) as refused:
        parse(PLAIN_BOOTSTRAP, {"oauthProvider": name, f"oauthProvider.{argument}": "x"})
    assert str(refused.value) == (
        f"option oauthProvider.{argument} means nothing to oauthProvider={name}, which takes {takes}"
    )


@pytest.mark.parametrize("parse", [source_provider, sink_provider], ids=["source", "sink"])
def test_provider_argument_without_oauth_provider_is_refused(parse):
    with pytest.raises(OptionError) as refused:
        parse(PLAIN_BOOTSTRAP, {"oauthProvider.region": "eu-west-1"})
    assert str(refused.value) == (
        "option oauthProvider.region is set but oauthProvider is not: name the token provider it is for"
    )


@pytest.mark.parametrize("parse", [source_provider, sink_provider], ids=["source", "sink"])
def test_other_sasl_mechanism_with_oauth_provider_is_refused(parse):
    with pytest.raises(OptionError) as refused:
        parse(PLAIN_BOOTSTRAP, {"oauthProvider": "gcp", "kafka.sasl.mechanism": "SCRAM-SHA-512"})
    assert str(refused.value) == (
        "option oauthProvider signs in with SASL OAUTHBEARER, but kafka.sasl.mechanism is 'SCRAM-SHA-512': remove "
        "kafka.sasl.mechanism, or remove oauthProvider to sign in with SCRAM-SHA-512"
    )


@pytest.mark.parametrize("parse", [source_provider, sink_provider], ids=["source", "sink"])
def test_librdkafka_oidc_method_with_oauth_provider_is_refused(parse):
    with pytest.raises(OptionError) as refused:
        parse(PLAIN_BOOTSTRAP, {"oauthProvider": "gcp", "kafka.sasl.oauthbearer.method": "oidc"})
    assert str(refused.value) == (
        "options oauthProvider and kafka.sasl.oauthbearer.method are two sources of tokens: keep oauthProvider (its "
        "provider makes the tokens) or kafka.sasl.oauthbearer.method=oidc (librdkafka fetches them), not both"
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}),
        ({"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "oauthbearer"},
         {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"}),
    ],
    ids=["defaults", "explicit-protocol-kept"],
)
def test_oauth_provider_settings_in_the_parsed_kafka_config(given, expected):
    options = {"kafka.bootstrap.servers": PLAIN_BOOTSTRAP, "oauthProvider": "gcp", **given}
    assert parse_options({**options, "subscribe": "orders"}).kafka_config == expected
    assert parse_sink_options({**options, "topic": "orders"}, streaming=False).kafka_config == expected


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("sasl.mechanism", "AWS_MSK_IAM"),
        ("sasl.jaas.config", "software.amazon.msk.auth.iam.IAMLoginModule required;"),
        ("sasl.client.callback.handler.class", "software.amazon.msk.auth.iam.IAMClientCallbackHandler"),
    ],
)
@pytest.mark.parametrize("with_provider", [False, True], ids=["alone", "with-oauthProvider"])
@pytest.mark.parametrize("parse", [source_provider, sink_provider], ids=["source", "sink"])
def test_java_clients_msk_settings_are_refused_with_the_advice_to_use_aws_msk_iam(parse, with_provider, setting,
                                                                                    value):
    options = {f"kafka.{setting}": value} | ({"oauthProvider": "aws_msk_iam"} if with_provider else {})
    with pytest.raises(OptionError) as refused:
        parse(MSK_BOOTSTRAP, options)
    assert str(refused.value) == (
        f"option kafka.{setting} is the Java client's: AWS MSK's IAM sign-in is the option oauthProvider=aws_msk_iam "
        "here (pip install 'kafkasource[aws]'), with oauthProvider.region, oauthProvider.profile or "
        "oauthProvider.roleArn as needed; remove the Java client's MSK settings"
    )


def test_provider_text_never_shows_a_secret_argument_and_differs_by_arguments(monkeypatch):
    """str() pools clients by their settings: two providers differing only in a secret differ, yet neither str()
    nor the options' repr (source or sink) shows the secret, which the provider does hold."""
    allow(monkeypatch, "fixed_token")
    name = f"{THIS_MODULE}:fixed_token"
    options = {"oauthProvider": name, "oauthProvider.clientSecret": "secret-one-1a2b3c", "oauthProvider.tenant": "t"}
    one = source_provider(PLAIN_BOOTSTRAP, options)
    other = source_provider(PLAIN_BOOTSTRAP, {**options, "oauthProvider.clientSecret": "secret-two-4d5e6f"})
    sink = parse_sink_options({"kafka.bootstrap.servers": PLAIN_BOOTSTRAP, "topic": "orders", **options},
                              streaming=False)
    source = parse_options({"kafka.bootstrap.servers": PLAIN_BOOTSTRAP, "subscribe": "orders", **options})

    assert one.arguments_map()["clientsecret"] == "secret-one-1a2b3c"
    assert str(one) != str(other)
    assert str(one).startswith(f"oauthProvider={name} (") and str(other).startswith(f"oauthProvider={name} (")
    shown = [str(one), repr(one), str(other), repr(other), repr(source), repr(sink), str(source), str(sink)]
    assert all(name in text for text in shown)
    assert not [text for text in shown if "secret-one" in text or "secret-two" in text]


# --- the token cache -------------------------------------------------------------------------------------------


def test_two_calls_within_a_tokens_lifetime_make_one_token(aws_env, monkeypatch, stand_in):
    """The role path asks STS for every token it makes: one AssumeRole for two calls is kafkasource's cache."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", stand_in.url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    options = {"oauthProvider": "aws_msk_iam", "oauthProvider.roleArn": f"arn:aws:iam::{ACCOUNT}:role/cached"}
    first = source_provider(MSK_BOOTSTRAP, options).token()
    second = sink_provider(MSK_BOOTSTRAP, options).token()  # an equal provider, as an executor's options make it
    assert second is first
    assert len(stand_in.of("sts")) == 1


def test_a_token_with_less_than_a_quarter_of_its_lifetime_left_is_made_anew(gcp_env):
    """A 6 s token (google-auth refreshes tokens with under 3 min 45 s left, so each token made is a grant) is handed
    out again with 2 s left, and made anew with 1.25 s left: under a quarter of its lifetime, over the 1 s floor."""
    gcp_env.lifetime_s = 6
    token_provider = source_provider(PLAIN_BOOTSTRAP, {"oauthProvider": "gcp"})
    first = token_provider.token()
    assert token_provider.token() is first

    time.sleep(max(0.0, first.expires_at - 2.0 - time.time()))
    assert token_provider.token() is first
    assert len(gcp_env.of("google")) == 1

    time.sleep(max(0.0, first.expires_at - 1.25 - time.time()))
    renewed = token_provider.token()
    assert len(gcp_env.of("google")) == 2
    assert renewed.value != first.value and renewed.expires_at > first.expires_at
    assert gcp_token_parts(renewed)[2] == gcp_env.of("google")[1].answer["access_token"]
