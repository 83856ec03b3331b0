"""oauthProvider=module:function: a token provider of the user's own, run only where the cluster's owner allows it.

Running code that an option names is a decision for whoever runs the cluster, not for whoever writes a query. A
Python data source runs in Spark's Python workers, on the driver (planning) and on executors (reading, writing),
and those workers see the environment of the JVM that started them, which only the cluster's owner sets
(spark-env.sh, the cluster manager's environment, or spark.executorEnv.* and spark.yarn.appMasterEnv.*, which are
fixed when the application starts: a Spark Connect client or a query cannot change them). So the allowed
providers are the environment variable KAFKASOURCE_OAUTH_PROVIDERS: module:function entries separated by commas,
none by default. The check runs wherever a provider is loaded, driver and executors alike.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable

from kafkasource.errors import OptionError, SignInError

OPTION = "oauthProvider"
ALLOWED_PROVIDERS_VARIABLE = "KAFKASOURCE_OAUTH_PROVIDERS"
NAME = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def allowed() -> set[str]:
    return {entry.strip() for entry in os.environ.get(ALLOWED_PROVIDERS_VARIABLE, "").split(",") if entry.strip()}


def check_allowed(name: str) -> None:
    if not NAME.fullmatch(name):
        raise OptionError(
            f"option {OPTION} must name a provider of your own as module:function (like mycompany.kafka:token); "
            f"got {name[:80]!r}"
        )
    if name not in allowed():
        raise OptionError(
            f"option {OPTION}={name} names code to run, which this cluster does not allow: whoever runs the cluster "
            f"lists the providers it allows, as module:function separated by commas, in the environment variable "
            f"{ALLOWED_PROVIDERS_VARIABLE} of the driver and the executors (spark-env.sh, or spark.executorEnv."
            f"{ALLOWED_PROVIDERS_VARIABLE} when the application starts)"
        )


def load(name: str) -> Callable[[dict[str, str], str], object]:
    """The user's provider `name`, once this cluster allows it, called as kafkasource's own providers are: with the
    arguments (oauthProvider.<name> options, names in lower case) and the bootstrap servers, which it does not take."""
    check_allowed(name)
    function = import_function(name)
    return lambda arguments, _bootstrap_servers: function(arguments)


def import_function(name: str) -> Callable:
    """The function `name` (module:function), imported here: on the driver or on an executor."""
    module_name, function_name = name.split(":", 1)
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as exc:
        raise SignInError(
            f"oauthProvider {name} could not be loaded here: {type(exc).__name__}: {exc}. The module must be "
            "importable on the driver and on every executor (installed there, or shipped with --py-files)"
        ) from None
    if not callable(function):
        raise SignInError(f"oauthProvider {name} is not a function")
    return function
