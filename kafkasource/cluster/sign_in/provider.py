"""The option oauthProvider: which token provider signs every Kafka client of a query in, and how.

A Spark option is a string, so no one can hand a data source a Python callable. oauthProvider names a provider
instead (aws_msk_iam, azure, gcp, or module:function), its arguments are the options oauthProvider.<name> beside
it, and the `TokenProvider` made of them is a small frozen value that Spark ships to executors with the rest of
the options. Each process makes its tokens itself: librdkafka asks for one when a client starts and again before
the last one expires (at 80% of its lifetime), through confluent-kafka's oauth_cb or the native extension's
refresh callback; both call the `TokenProvider`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kafkasource.cluster.settings import one_line
from kafkasource.cluster.sign_in import custom
from kafkasource.errors import OptionError, SignInError
from kafkasource.runtime.secrets import masked

log = logging.getLogger(__name__)

OPTION = custom.OPTION
PREFIX = "oauthprovider."  # the provider's arguments, as Spark's case-insensitive option map names them
_SALT = secrets.token_bytes(16)


@dataclass(frozen=True)
class Token:
    value: str = field(repr=False)
    expires_at: float  # seconds since the epoch
    principal: str


@dataclass(frozen=True)
class Builtin:
    """A provider kafkasource ships: the arguments it takes, and the extra that installs its library."""

    arguments: tuple[str, ...]
    extra: str
    module: str  # what the extra installs: its absence is told before any data moves
    make: str  # the function of this package that makes its tokens, as module:function


BUILTINS = {
    "aws_msk_iam": Builtin(
        ("region", "profile", "roleArn", "roleSessionName"),
        "aws",
        "aws_msk_iam_sasl_signer",
        "kafkasource.cluster.sign_in.aws:msk_iam_token",
    ),
    "azure": Builtin(("scope", "clientId"), "azure", "azure.identity", "kafkasource.cluster.sign_in.azure:entra_token"),
    "gcp": Builtin(("scopes",), "gcp", "google.auth", "kafkasource.cluster.sign_in.gcp:google_token"),
}
# a cached token is handed out again while more than this share of its lifetime is left: librdkafka asks for a new
# one at 80% of a token's lifetime, and a process's many clients then share one token rather than each ask anew
REUSE_WHILE_LEFT = 0.25
# argument names that hold secrets (kafka.* settings have their own list, which the registry's client shares)
SECRET_ARGUMENTS = ("password", "secret", "token", "key", "credential")


@dataclass(frozen=True)
class TokenProvider:
    """oauthProvider and its arguments: what makes this query's tokens. Calling it is librdkafka's token refresh
    callback (confluent-kafka's oauth_cb, or the native extension's): it returns (token, expiry in seconds since
    the epoch, principal, extensions)."""

    name: str  # aws_msk_iam, azure, gcp, or module:function
    arguments: tuple[tuple[str, str], ...] = field(repr=False)  # may hold secrets: never print
    bootstrap_servers: str

    def __str__(self) -> str:
        # clients are pooled by their settings as text, so two providers that differ only in arguments must differ;
        # salted per process, so the text tells nothing of a secret argument to whoever sees it
        keyed = hashlib.sha256(_SALT + repr((self.arguments, self.bootstrap_servers)).encode()).hexdigest()[:16]
        return f"oauthProvider={self.name} ({keyed})"

    def __call__(self, oauthbearer_config: object = None) -> tuple[str, float, str, dict[str, str]]:
        try:
            token = self.token()
        except SignInError as exc:
            # librdkafka only learns that the refresh failed; the reason goes to the log, and to the error that
            # the next client made here raises (it asks first, see `ready`)
            log.warning("%s", exc)
            raise
        return token.value, token.expires_at, token.principal, {}

    def token(self) -> Token:
        """A token of this provider, this process's cached one while enough of its lifetime is left."""
        with _CACHE_LOCK:
            cached = _CACHE.get(self)
            if cached is not None and _fresh(cached[0], cached[1]):
                return cached[0]
        made_at = time.time()
        token = self._make()
        with _CACHE_LOCK:
            _CACHE[self] = (token, made_at)
        return token

    def arguments_map(self) -> dict[str, str]:
        return dict(self.arguments)

    def _make(self) -> Token:
        function = _function(self.name)
        try:
            made = function(self.arguments_map(), self.bootstrap_servers)
        except SignInError:
            raise
        except Exception as exc:  # the provider's library names what failed: no credentials, a refused role
            raise SignInError(
                f"oauthProvider {self.name} could not make a token: {_reason(exc, self.arguments)}"
            ) from None
        return _checked(self.name, made)


Config = TypeVar("Config", bound=Mapping[str, Any])  # a client's configuration, of whichever type its client takes
_CACHE: dict[TokenProvider, tuple[Token, float]] = {}
_CACHE_LOCK = threading.Lock()


def _fresh(token: Token, made_at: float) -> bool:
    lifetime = token.expires_at - made_at
    return token.expires_at - time.time() > max(lifetime * REUSE_WHILE_LEFT, 1.0)


def callback_setting(provider: TokenProvider | None) -> dict[str, object]:
    """The provider as a client's setting: librdkafka's refresh callback, oauth_cb (none without a provider)."""
    return {"oauth_cb": provider} if provider else {}


def ready(config: Config) -> Config:
    """`config` for a new client, once its token provider (if any) made a token: a provider that fails fails here
    with its own reason, where confluent-kafka would wait ten seconds for a token and only say it was not set."""
    provider = config.get("oauth_cb")
    if isinstance(provider, TokenProvider):
        provider.token()
    return config


def read_token_provider(options: Mapping[str, str], bootstrap_servers: str) -> TokenProvider | None:
    """The provider the lower-cased option map names, checked as far as can be without asking for a token: its
    arguments, its library (the extra that installs it), and for module:function that this cluster allows it."""
    raw = options.get(OPTION.lower())
    arguments = {n[len(PREFIX) :]: str(v) for n, v in options.items() if n.startswith(PREFIX)}
    if raw is None or not str(raw).strip():
        if arguments:
            first = sorted(arguments)[0]
            raise OptionError(f"option {OPTION}.{first} is set but {OPTION} is not: name the token provider it is for")
        return None
    name = str(raw).strip()
    builtin = BUILTINS.get(name.lower())
    if builtin is not None:
        name = name.lower()
        _check_arguments(name, builtin, arguments)
        if not _importable(builtin.module):
            raise OptionError(
                f"option {OPTION}={name} needs the {builtin.module} library, which is not installed: install "
                f"kafkasource[{builtin.extra}] (pip install 'kafkasource[{builtin.extra}]') on the driver and executors"
            )
    elif ":" in name:
        custom.check_allowed(name)
    else:
        raise OptionError(
            f"option {OPTION} must be one of {', '.join(BUILTINS)} or module:function (a provider of your own); "
            f"got {name[:80]!r}"
        )
    return TokenProvider(name, tuple(sorted(arguments.items())), bootstrap_servers)


def _check_arguments(name: str, builtin: Builtin, arguments: Mapping[str, str]) -> None:
    known = {a.lower(): a for a in builtin.arguments}
    for given in arguments:
        if given not in known:
            takes = ", ".join(f"{OPTION}.{a}" for a in builtin.arguments)
            raise OptionError(f"option {OPTION}.{given} means nothing to {OPTION}={name}, which takes {takes}")


def _importable(module: str) -> bool:
    """Whether `module` can be imported here, without importing it (find_spec imports only its parents)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


def _function(name: str) -> Callable[[dict[str, str], str], object]:
    builtin = BUILTINS.get(name)
    return custom.import_function(builtin.make) if builtin else custom.load(name)


def _checked(name: str, made: object) -> Token:
    """A provider's answer as a Token: (token, expiry in seconds since the epoch), optionally with a principal."""
    if isinstance(made, Token):
        return made
    if isinstance(made, tuple) and len(made) in (2, 3):
        value, expires_at, *principal = made
        if (
            isinstance(value, str)
            and value
            and isinstance(expires_at, int | float)
            and not isinstance(expires_at, bool)
            and (not principal or isinstance(principal[0], str))
        ):
            if expires_at <= time.time():
                raise SignInError(
                    f"oauthProvider {name} made a token that expired already (at {expires_at:.0f}, seconds since "
                    "the epoch): it must return a token valid for a while, with its expiry"
                )
            return Token(value, float(expires_at), principal[0] if principal else "kafkasource")
    shown = type(made).__name__ if not isinstance(made, tuple) else f"a tuple of {len(made)}"
    raise SignInError(
        f"oauthProvider {name} returned {shown}: it must return (token, expiry in seconds since the epoch) or "
        "(token, expiry, principal), the token a non-empty string"
    )


def _reason(exc: BaseException, arguments: tuple[tuple[str, str], ...]) -> str:
    """The provider's exception as one line, with the value of every argument that may hold a secret hidden."""
    hidden = [value for name, value in arguments if any(m in name for m in SECRET_ARGUMENTS)]
    # 2000 characters: DefaultAzureCredential lists every credential it tried, its managed identity's at ~700
    return masked(one_line(f"{type(exc).__name__}: {exc}"), {}, also=hidden)[:2000]
