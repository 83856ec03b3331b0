"""A job's TOML file, table by table: typed reads whose errors name the file, the table and the key, and the
environment references (`${env:NAME}`, `${env:NAME:-default}`) expanded in every string."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from typing import Any, overload

ENV_REFERENCE = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(Exception):
    """The job's configuration is wrong; the message names the file, the key and the fix."""


class Section:
    """One [table] of the file: typed reads that name the key on error, unknown keys refused."""

    def __init__(self, path: str, name: str, data: Any, known: tuple[str, ...] | None):
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: [{name}] must be a table of keys, got {type(data).__name__}")
        self.path, self.name, self.data = path, name, data
        if known is not None:
            for key in data:
                if key not in known:
                    raise ConfigError(
                        f"{path}: unknown key {key!r} in [{name}]{did_you_mean(key, known)}; "
                        f"known keys: {', '.join(known)}"
                    )

    def where(self, key: str) -> str:
        return f"{self.path}: [{self.name}] {key}"

    @overload
    def text(self, key: str, default: str, required: bool = False) -> str: ...

    @overload
    def text(self, key: str, default: None = None, required: bool = False) -> str | None: ...

    def text(self, key: str, default: str | None = None, required: bool = False) -> str | None:
        if key not in self.data:
            if required:
                raise ConfigError(f"{self.where(key)} is required")
            return default
        value = self.data[key]
        if not isinstance(value, str):
            raise ConfigError(f"{self.where(key)} must be a string (in quotes), got {value!r}")
        return expand_env(value, self.where(key))

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise ConfigError(f"{self.where(key)} must be true or false, got {value!r}")
        return value

    def options(self, prefix: str = "") -> dict[str, str]:
        """The whole table as Spark option strings: strings, numbers and booleans only."""
        out = {}
        for key, value in self.data.items():
            if isinstance(value, bool):
                out[prefix + key] = "true" if value else "false"
            elif isinstance(value, (int, float)):
                out[prefix + key] = str(value)
            elif isinstance(value, str):
                out[prefix + key] = expand_env(value, self.where(key))
            else:
                raise ConfigError(f"{self.where(key)} must be a string, number or boolean, got {value!r}")
        return out


def did_you_mean(key: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def expand_env(value: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    environ = os.environ if environ is None else environ

    def substitute(match: re.Match) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise ConfigError(
            f"{where} reads the environment variable {name}, which is not set; "
            f"export {name}=... before starting the job"
        )

    return ENV_REFERENCE.sub(substitute, value)
