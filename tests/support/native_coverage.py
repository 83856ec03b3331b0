"""Whether this test run covers the native half of the read tests (readPath=native, the native Avro decoder),
in one place: the read tests' parameters (conftest.READ_PATHS, AVRO_READ_PATHS) come from here, conftest
refuses to start a session that requires the native half where it cannot be imported, and the run's summary
says in one line what ran or what was left out, so a broken native build never shows as a smaller green run.

The native half is required:
- on CI (CI=true, which CI services set), whatever else is set;
- with KAFKASOURCE_REQUIRE_NATIVE=1;
- where cargo is on PATH (`pip install -e .` builds the extension there, so its absence is a failed build),
  unless KAFKASOURCE_REQUIRE_NATIVE=0.
Elsewhere (a machine without Rust) the Python half runs alone.

KAFKASOURCE_TESTS_HIDE_NATIVE=1 makes kafkasource._native unimportable in this process, as on a machine where
it was never built: for the tests of this very behaviour (tests/repo/test_native_coverage.py).
"""

from __future__ import annotations

import os
import shutil
import sys

REQUIRE = "KAFKASOURCE_REQUIRE_NATIVE"
HIDE = "KAFKASOURCE_TESTS_HIDE_NATIVE"

if os.environ.get(HIDE) == "1":
    # before kafkasource.runtime.native_extension tries the import (it does so once, when first imported): a name
    # that maps to None in sys.modules fails to import as a module that is not there
    sys.modules["kafkasource._native"] = None

from kafkasource.runtime import native_extension  # noqa: E402  (after the hiding above)

BUILD_HINT = ("build it: install Rust (cargo), cmake, gcc and OpenSSL's headers (libssl-dev), then run "
              "`python3 -m pip install -e '.[test]'`, which builds native/ with setuptools-rust into "
              "kafkasource/_native.abi3.so (its output says why a build failed)")


def left_out() -> str | None:
    """The summary line saying which native half this install cannot test and why, or None: both can run."""
    if native_extension.EXTENSION is None:
        return ("native read path and native Avro decoder not tested: kafkasource's native extension "
                f"(kafkasource._native) {native_extension.why_unavailable()}")
    if not native_extension.avro_decoder_available():
        return (f"native Avro decoder not tested: kafkasource's native extension {native_extension.EXTENSION.__file__} "
                "has no AvroDecoder (built from older sources)")
    return None


READ_PATHS = ["python", "native"] if native_extension.available() else ["python"]
# the sink's tests that check exact records and errors run on both write paths likewise (writePath)
WRITE_PATHS = ["python", "native"] if native_extension.available() else ["python"]
# the Avro decoder follows the read path: Python's where readPath=python, the native one where it is built
AVRO_READ_PATHS = ["python", "native"] if native_extension.avro_decoder_available() else ["python"]
# the fixtures (conftest's, test_registry_avro's) whose "native" parameter runs the native read path, resp.
# the native Avro decoder
READ_PATH_FIXTURES = ("read_path",)
AVRO_FIXTURES = ("avro_path", "decoder")


def required_by(environ=os.environ) -> str | None:
    """What requires the native half in this run (for the message), or None. ValueError for a switch that is
    neither 0 nor 1."""
    switch = environ.get(REQUIRE, "")
    if switch not in ("", "0", "1"):
        raise ValueError(f"{REQUIRE}={switch!r}: write 1 (the native read tests must run) or 0 (they may be left "
                         "out where cargo is on PATH)")
    if environ.get("CI", "").lower() == "true":
        return "CI=true"
    if switch == "1":
        return f"{REQUIRE}=1"
    if switch != "0" and shutil.which("cargo", path=environ.get("PATH")):
        return f"cargo is on PATH, so `pip install -e .` builds the extension (or set {REQUIRE}=0)"
    return None


def refusal(environ=os.environ) -> str | None:
    """Why the session must not start, or None."""
    try:
        why = required_by(environ)
    except ValueError as exc:
        return str(exc)
    missing = left_out()
    if why is None or missing is None:
        return None
    return f"the native read tests are required here ({why}), but {missing.split(': ', 1)[1]}: {BUILD_HINT}"


def ran_line(read_path_tests: int, avro_tests: int) -> str:
    """The summary line of a run where both native halves could run: how many tests did."""
    return (f"native read path and native Avro decoder built ({native_extension.EXTENSION.__file__}): "
            f"{read_path_tests} tests "
            f"ran with readPath=native, {avro_tests} with the native Avro decoder")
