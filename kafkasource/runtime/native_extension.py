"""The compiled extension (kafkasource._native, Rust over librdkafka), loaded once per process, and the one way the
package reaches it: the native consumer (reading/native.py), producer (writing/native_producer.py) and Avro
decoder and encoder (formats/avro/decode.py, formats/avro/native_encode.py) all ask `extension()`, check a
feature with `has`, and give librdkafka properties as `librdkafka_property` spells them. Its signatures are in
kafkasource/_native.pyi; runtime/native_results.py names the tuples it returns.

setup.py builds it when a Rust toolchain is present; without it the pure-Python paths serve. An extension that
is there but fails to load (a library it links missing on this node, a glibc too old, built for another Python)
is a broken install, which readPath=auto reports once rather than silently reading slower.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkasource import _native

log = logging.getLogger(__name__)


def load_extension(import_module: Callable = importlib.import_module) -> tuple[ModuleType | None, str | None]:
    """The extension module, or None and why it could not be loaded when it is there but broken; (None, None)
    when it is not built."""
    try:
        return import_module("kafkasource._native"), None
    except ModuleNotFoundError as exc:
        if exc.name == "kafkasource._native":
            return None, None  # not built: no Rust toolchain when it was installed
        return None, str(exc)
    except ImportError as exc:
        return None, str(exc)


EXTENSION, LOAD_ERROR = load_extension()
_warned: set[str] = set()  # the options (readPath, writePath) whose fallback was told
_announced: set[str] = set()  # the kinds of work (reading, writing) whose extension was told

# The parts an extension may be built without (an older build, a trimmed one), by the attribute that has them.
FEATURES = {"avro_decoder": "AvroDecoder", "avro_encoder": "encode_avro", "json_decoder": "JsonDecoder"}


def available() -> bool:
    return EXTENSION is not None


def has(feature: str) -> bool:
    """Whether the loaded extension has `feature` (a key of FEATURES)."""
    return EXTENSION is not None and getattr(EXTENSION, FEATURES[feature], None) is not None


def avro_decoder_available() -> bool:
    """The native Avro decoder: part of the extension, absent from one built without it."""
    return has("avro_decoder")


def extension(remedy: str = "") -> ModuleType:
    """The loaded extension; RuntimeError saying why it is not, followed by `remedy` (": set writePath to ...").
    Callers ask available() or has() first: this is the error for a caller that did not. What it holds is typed
    where it is kept (a `_native.Consumer` attribute): a module has no type to name its contents by."""
    if EXTENSION is None:
        raise RuntimeError(f"kafkasource's native extension {why_unavailable()}{remedy}")
    return EXTENSION


def announce(doing: str, logger: logging.Logger) -> None:
    """One INFO line per process and kind of work (reading, writing) done natively: which extension file and
    librdkafka, so a log shows what a node ran. On the caller's logger, which names the path that runs."""
    if doing not in _announced:
        _announced.add(doing)
        logger.info(
            "%s with the native extension %s (librdkafka %s)", doing, extension().__file__, librdkafka_version()
        )


def librdkafka_property(value: object) -> str:
    """A configuration value as librdkafka reads it: booleans as "true" and "false", the rest as str() gives it."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def client_arguments(config: Mapping[str, object]) -> tuple[list[tuple[str, str]], _native.TokenProvider | None]:
    """A client's config as the extension's Consumer and Producer take it: the librdkafka properties, and the token
    provider apart (oauth_cb, librdkafka's refresh callback, which the extension calls itself)."""
    properties = [(name, librdkafka_property(value)) for name, value in config.items() if name != "oauth_cb"]
    return properties, config.get("oauth_cb")  # type: ignore[return-value]  # sign_in.TokenProvider, or None


def why_unavailable() -> str:
    """The reason, for a message that starts "kafkasource's native extension ..." ."""
    return f"could not be loaded here: {LOAD_ERROR}" if LOAD_ERROR else "is not built here"


def warn_if_broken(option: str = "readPath", doing: str = "reading") -> None:
    """`option`=auto (readPath, writePath) falls back to the Python path where the extension is missing; where it is
    there but fails to load, say so, once per process and option, naming why."""
    if LOAD_ERROR and option not in _warned:
        _warned.add(option)
        log.warning(
            "%s=auto: kafkasource's native extension could not be loaded (%s); %s with the slower Python path",
            option,
            LOAD_ERROR,
            doing,
        )


def runs_native(path: str, option: str, doing: str) -> bool:
    """Whether `path`, the value of `option` (readPath, writePath: auto, native or python), means `doing` (reading,
    writing) with the extension here: native, or auto where it loads (auto tells a broken install, warn_if_broken)."""
    if path == "auto":
        warn_if_broken(option, doing)
    return path == "native" or (path == "auto" and available())


def librdkafka_version() -> str | None:
    return EXTENSION.librdkafka_version() if EXTENSION is not None else None
