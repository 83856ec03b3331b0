"""One option's text read into a value, each refusal naming the option, what was wrong and what to write: the
helpers every option parser of kafkasource shares (the source's, the sink's)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Literal, TypeVar

from kafkasource.errors import OptionError
from kafkasource.runtime import native_extension

# Kafka's limits: topic names (Topic.java), partition numbers (int32), offsets and timestamps (int64)
TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
MAX_PARTITION = 2**31 - 1
MAX_LONG = 2**63 - 1
MAX_TIMEOUT_MS = 2**31 - 1  # about 24.8 days: what librdkafka's int timeouts hold
# readPath and writePath: native moves the records with the compiled extension's consumer or producer, python with
# confluent-kafka's, auto natively where the extension loads (runtime/native_extension.runs_native decides it)
PathChoice = Literal["auto", "native", "python"]
PATH_CHOICES: tuple[PathChoice, ...] = ("auto", "native", "python")


def option_text(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name.lower())
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def shown_value(raw: str, limit: int = 80) -> str:
    """A value for an error message: quoted, and cut short if huge."""
    return repr(raw if len(raw) <= limit else raw[:limit] + "...")


def _whole_number(name: str, raw: str, low: int, high: int, meaning: str = "a whole number") -> int:
    """`raw` as an int within [low, high], or an error naming the option and the range."""
    try:
        value = int(raw) if re.fullmatch(r"\s*[-+]?\d{1,30}\s*", raw) else None
    except ValueError:
        value = None
    if value is None:
        raise OptionError(f"option {name} must be {meaning}, got {shown_value(raw)}")
    if value < low:
        raise OptionError(
            f"option {name} must be {'a positive number' if low == 1 else f'at least {low}'}, got {raw.strip()}"
        )
    if value > high:
        raise OptionError(f"option {name} must be at most {high}, got {raw.strip()}")
    return value


def _positive_int(options: Mapping[str, str], name: str, high: int = MAX_LONG) -> int | None:
    raw = option_text(options, name)
    return None if raw is None else _whole_number(name, raw, 1, high)


def _positive_int_or(options: Mapping[str, str], name: str, default: int, high: int = MAX_LONG) -> int:
    found = _positive_int(options, name, high)
    return default if found is None else found


def _whole_number_option(options: Mapping[str, str], name: str, default: int) -> int:
    raw = option_text(options, name)
    return default if raw is None else _whole_number(name, raw, 0, MAX_TIMEOUT_MS)


def read_bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = option_text(options, name)
    if raw is None:
        return default
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    raise OptionError(f"option {name} must be true or false, got {shown_value(raw)}")


Choice = TypeVar("Choice", bound=str)


def read_choice(options: Mapping[str, str], name: str, choices: tuple[Choice, ...], default: Choice) -> Choice:
    raw = option_text(options, name)
    if raw is None:
        return default
    if raw.lower() not in choices:
        raise OptionError(f"option {name} must be one of {', '.join(choices)}, got {shown_value(raw)}")
    return next(choice for choice in choices if choice == raw.lower())


def read_path_choice(options: Mapping[str, str], name: str) -> PathChoice:
    """readPath or writePath (`name`), native refused here, on the driver, where the extension does not load."""
    path = read_choice(options, name, PATH_CHOICES, "auto")
    if path == "native" and not native_extension.available():
        raise OptionError(
            f"option {name} is native, but kafkasource's native extension {native_extension.why_unavailable()}: "
            "install kafkasource where a Rust toolchain is present (pip install builds it), "
            f"or set {name} to auto (native when built) or python"
        )
    return path


_DURATION_UNITS = {
    "ms": 1,
    "s": 1000,
    "sec": 1000,
    "second": 1000,
    "seconds": 1000,
    "m": 60_000,
    "min": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
}


def parse_duration_ms(name: str, raw: str) -> int:
    """'15m', '30s', '500ms', '2 minutes', or a bare number of milliseconds."""
    match = re.fullmatch(r"\s*(\d{1,15})\s*([a-zA-Z]*)\s*", raw)
    if match is None or (match.group(2) and match.group(2).lower() not in _DURATION_UNITS):
        raise OptionError(f"option {name} must be a duration such as 500ms, 30s, 15m or 1h, got {shown_value(raw)}")
    return int(match.group(1)) * _DURATION_UNITS[match.group(2).lower() or "ms"]


def _json_object(name: str, raw: str) -> dict:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise OptionError(
            f"option {name} is not valid JSON ({exc.msg} at position {exc.pos}): {shown_value(raw)}"
        ) from None
    except RecursionError:
        raise OptionError(
            f"option {name} is nested too deeply to be offsets or partitions: {shown_value(raw)}"
        ) from None
    if not isinstance(value, dict):
        raise OptionError(f'option {name} must be a JSON object like {{"topic": {{"0": 42}}}}, got {shown_value(raw)}')
    for topic in value:
        check_topic_name(name, topic)
    return value


def check_topic_name(name: str, topic: str) -> None:
    if not TOPIC_NAME.fullmatch(topic) or topic in (".", ".."):
        raise OptionError(
            f"option {name}: {shown_value(topic)} is not a Kafka topic name "
            "(1 to 249 of the characters a-z A-Z 0-9 . _ -)"
        )


def read_bootstrap_servers(options: Mapping[str, str]) -> str:
    """kafka.bootstrap.servers, which every read and write needs."""
    bootstrap = option_text(options, "kafka.bootstrap.servers")
    if bootstrap is None:
        raise OptionError(
            "option kafka.bootstrap.servers is required: the brokers to connect to, like host1:9092,host2:9092"
        )
    if "\x00" in bootstrap:  # librdkafka's C strings would silently end there
        raise OptionError("option kafka.bootstrap.servers holds a NUL character (\\x00); remove it")
    return bootstrap
