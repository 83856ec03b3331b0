"""The schema registry as the source and the sink see it: its client settings (the schema.registry.* options), the
reader schema chosen when a query is defined, writer schemas fetched by id, kept once per process, and the sink's
writer schema (fetched, or registered with auto.register.schemas).

Any registry speaking Confluent's REST API works (confluent-kafka's SchemaRegistryClient talks to it). The
client retries a registry that does not answer (max.retries times, 3 unless set, with a growing wait); after
that a RegistryUnavailableError names the URL without credentials. A schema id the registry does not know is no
outage: it is an answer about that record (UnknownSchemaId).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kafkasource.errors import KafkaSourceError, OptionError
from kafkasource.runtime.secrets import masked

PREFIX = "schema.registry."
# what the client takes as numbers; options arrive as text
NUMERIC_SETTINGS = {
    "timeout",
    "cache.capacity",
    "cache.latest.ttl.sec",
    "max.retries",
    "retries.wait.ms",
    "retries.max.wait.ms",
}
DEFAULTS = {"timeout": 10}  # seconds per request: httpx's 5 s is short for a registry under load


class RegistryUnavailableError(KafkaSourceError):
    """The schema registry did not answer, or answered with an error that is not about a schema."""


class UnknownSchemaId(Exception):
    """The registry does not know this writer schema id."""


def registry_config(options: Mapping[str, str]) -> dict[str, object]:
    """The schema.registry.* options (names in lower case) as SchemaRegistryClient settings, prefix stripped."""
    config: dict[str, object] = dict(DEFAULTS)
    for name, value in options.items():
        if not name.startswith(PREFIX):
            continue
        setting = name[len(PREFIX) :]
        value = str(value).strip()
        if setting in NUMERIC_SETTINGS:
            try:
                config[setting] = float(value) if "." in value else int(value)
            except ValueError:
                raise OptionError(f"option {name} must be a number, got {value[:40]!r}") from None
        else:
            config[setting] = value
    return config


def url_without_credentials(url: str) -> str:
    """The registry URL(s) for messages: user:password@ taken out."""
    shown = []
    for one in str(url).split(","):
        parts = urlsplit(one.strip())
        host = parts.hostname or ""
        netloc = host + (f":{parts.port}" if parts.port else "") if "@" in parts.netloc else parts.netloc
        shown.append(urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)))
    return ",".join(shown)


def secret_values(config: Mapping[str, object]) -> list[str]:
    """What a message about the registry must never show: passwords in the URL (masked() hides the settings)."""
    found = []
    for one in str(config.get("url", "")).split(","):
        parts = urlsplit(one.strip())
        found += [
            v for v in (parts.password, parts.username and parts.password and f"{parts.username}:{parts.password}") if v
        ]
    return found


def hide(text: str, config: Mapping[str, object]) -> str:
    text = masked(text, {f"schema.registry.{k}": v for k, v in config.items()}, also=secret_values(config))
    return text


def new_client(config: Mapping[str, object]):
    """confluent-kafka's SchemaRegistryClient; its own complaint about a setting becomes an OptionError."""
    try:
        from confluent_kafka.schema_registry import SchemaRegistryClient
    except ImportError as exc:
        raise OptionError(
            "valueFormat/keyFormat avro, protobuf and json-schema need confluent-kafka's schema-registry "
            f"extras ({exc}): pip install 'kafkasource[registry]'"
        ) from None
    if not config.get("url"):
        raise OptionError(
            "option schema.registry.url is required with valueFormat or keyFormat avro, protobuf or "
            "json-schema: the schema registry's address, like http://registry:8081"
        )
    try:
        return SchemaRegistryClient(dict(config))
    except (ValueError, TypeError, OSError) as exc:
        raise OptionError(f"the schema.registry.* options were refused: {hide(str(exc), config)}") from None


@dataclass(frozen=True)
class RegistrySchema:
    """A schema as the registry holds it: its id, type (AVRO, PROTOBUF, JSON) and text, and the schemas it
    references (a Protobuf file's imports of other registered files, the Avro named types it uses from other
    subjects, the JSON Schemas its $refs name), directly or through one another: each as (the name it is
    referenced by, its text in the same form), after those it references itself."""

    schema_id: int
    schema_type: str
    text: str
    references: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SchemaChoice:
    """Which schema of the registry a column's options name: an id alone, or a subject's version (None: the
    latest); the subject may be None beside an id."""

    subject: str | None
    version: int | None
    schema_id: int | None


class MissingReference(Exception):
    """A schema references a subject version the registry does not have (deleted since)."""


def _registry_schema(client, schema_id: int, schema, form: str | None) -> RegistrySchema:
    """confluent-kafka's Schema as a RegistrySchema, with the texts of all it references fetched."""
    return RegistrySchema(
        schema_id,
        schema.schema_type or "AVRO",
        schema.schema_str,
        tuple(_referenced(client, schema.references, form, set())),
    )


def _referenced(client, references, form: str | None, seen: set[str]) -> list[tuple[str, str]]:
    found = []
    for reference in references or ():
        if reference.name in seen:
            continue
        seen.add(reference.name)
        try:
            registered = client.get_version(reference.subject, reference.version, fmt=form)
        except Exception as exc:
            if _is_not_found(exc):
                raise MissingReference(
                    f"it references {reference.name} as subject {reference.subject!r} version "
                    f"{reference.version}, which the registry does not have"
                ) from None
            raise
        found += _referenced(client, registered.schema.references, form, seen)
        found.append((reference.name, registered.schema.schema_str))  # after those it references
    return found


def _failure(config: Mapping[str, object], what: str, exc: Exception) -> RegistryUnavailableError:
    retries = config.get("max.retries", 3)
    return RegistryUnavailableError(
        f"the schema registry at {url_without_credentials(str(config.get('url')))} could not {what} "
        f"(after {retries} retries, schema.registry.max.retries): {hide(f'{type(exc).__name__}: {exc}', config)}"
    )


def _is_not_found(exc: Exception) -> bool:
    return getattr(exc, "http_status_code", None) == 404


@contextmanager
def _asking(config: Mapping[str, object], column: str, role: str, which: str, not_found: str) -> Iterator[Any]:
    """A registry client for the questions about `column`'s `role` ("reader", "writer") schema, `which` as its
    options name it, closed after; the registry's answers turned into our errors: a schema it does not have is the
    options' mistake (`not_found` says what to do), one it cannot give is an outage."""
    client = new_client(config)
    try:
        yield client
    except MissingReference as exc:
        raise OptionError(f"the {column} column's {role} schema cannot be read: {exc}") from None
    except KafkaSourceError:
        raise
    except Exception as exc:
        if _is_not_found(exc):
            raise OptionError(
                f"the schema registry at {url_without_credentials(str(config['url']))} has no {which} for the "
                f"{column} column ({hide(str(exc), config)}){not_found}, or name another with {column}Subject, "
                f"{column}SchemaVersion or {column}SchemaId"
            ) from None
        raise _failure(config, f"give the {column} column's {role} schema", exc) from None
    finally:
        close = getattr(client, "close", None)
        if close is not None:
            close()


def reader_schema(
    config: Mapping[str, object],
    column: str,
    subject: str | None,
    version: int | None,
    schema_id: int | None,
    form: str | None = None,
) -> RegistrySchema:
    """The schema a query reads `column` as: by id, or a subject's version (the latest when None); `form` is the
    registry's `format` parameter (Protobuf's "serialized")."""
    which = _which(schema_id, subject, version)
    with _asking(config, column, "reader", which, "; register the schema") as client:
        if schema_id is not None:
            return _registry_schema(client, schema_id, client.get_schema(schema_id, fmt=form), form)
        registered = (
            client.get_latest_version(subject, fmt=form)
            if version is None
            else client.get_version(subject, version, fmt=form)
        )
        return _registry_schema(client, registered.schema_id, registered.schema, form)


def _which(schema_id: int | None, subject: str | None, version: int | None) -> str:
    """A schema as its options name it, for messages."""
    if schema_id is not None:
        return f"schema id {schema_id}"
    return f"subject {subject!r}" + (f" version {version}" if version is not None else "")


def sink_schema(
    config: Mapping[str, object],
    column: str,
    subject: str | None,
    version: int | None,
    schema_id: int | None,
    form: str | None,
    schema_type: str,
    derive=None,
) -> RegistrySchema:
    """The schema the sink writes `column` with: by id, or a subject's version (the latest when None). A subject
    with no schema gets the one `derive()` gives registered under it, when `derive` is given (auto.register.schemas),
    else an OptionError says to register one or set auto.register.schemas."""
    which = _which(schema_id, subject, version)
    register = (
        ": register the schema to write with under it, or set auto.register.schemas=true to register one derived "
        "from the column's type"
        if schema_id is None and version is None
        else ": register it"
    )
    with _asking(config, column, "writer", which, register) as client:
        if schema_id is not None:
            return _registry_schema(client, schema_id, client.get_schema(schema_id, fmt=form), form)
        try:
            registered = (
                client.get_latest_version(subject, fmt=form)
                if version is None
                else client.get_version(subject, version, fmt=form)
            )
        except Exception as exc:
            if not _is_not_found(exc) or derive is None:
                raise
            from confluent_kafka.schema_registry import Schema

            text = derive()
            new_id = client.register_schema(subject, Schema(text, schema_type))
            return RegistrySchema(new_id, schema_type, text)
        return _registry_schema(client, registered.schema_id, registered.schema, form)


@dataclass
class WriterSchemas:
    """Writer schemas by id, fetched once per process and registry: a record's id never changes its schema."""

    _clients: dict = field(default_factory=dict)
    _schemas: dict = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, config: Mapping[str, object], schema_id: int, form: str | None = None) -> RegistrySchema:
        """The schema with this id (in the registry's `format` `form`); UnknownSchemaId if the registry has none,
        RegistryUnavailableError if it cannot be asked."""
        key = tuple(sorted((k, str(v)) for k, v in config.items()))
        with self._lock:
            found = self._schemas.get((key, schema_id, form))
            if found is not None:
                return found
            client = self._clients.get(key) or self._clients.setdefault(key, new_client(config))
        try:
            schema = client.get_schema(schema_id, fmt=form)
        except Exception as exc:
            if _is_not_found(exc):
                raise UnknownSchemaId(schema_id) from None
            raise _failure(config, f"give writer schema {schema_id}", exc) from None
        try:
            found = _registry_schema(client, schema_id, schema, form)
        except MissingReference as exc:
            raise KafkaSourceError(f"writer schema {schema_id} cannot be read: {exc}") from None
        except Exception as exc:
            raise _failure(config, f"give the schemas writer schema {schema_id} references", exc) from None
        with self._lock:
            self._schemas[(key, schema_id, form)] = found
        return found


WRITER_SCHEMAS = WriterSchemas()  # this Python worker's: Spark reuses workers across tasks and micro-batches
