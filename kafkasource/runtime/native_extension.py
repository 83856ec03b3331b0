"""The compiled extension (kafkasource._native, Rust over librdkafka), loaded once per process: the native read
path (reading/native.py) and the native Avro decoder (formats/avro.py) both come from it.

setup.py builds it when a Rust toolchain is present; without it the pure-Python paths serve. An extension that
is there but fails to load (a library it links missing on this node, a glibc too old, built for another Python)
is a broken install, which readPath=auto reports once rather than silently reading slower.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from types import ModuleType

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


def available() -> bool:
    return EXTENSION is not None


def avro_decoder_available() -> bool:
    """The native Avro decoder: part of the extension, absent from one built without it."""
    return EXTENSION is not None and hasattr(EXTENSION, "AvroDecoder")


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


def librdkafka_version() -> str | None:
    return EXTENSION.librdkafka_version() if EXTENSION is not None else None
