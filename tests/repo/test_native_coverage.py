"""The native half of the read tests never disappears without a trace (tests/support/native_coverage.py): a run that
requires it refuses to start where the extension cannot be imported, a run that may leave it out says so in
its summary, and a run that has it says how many tests ran on it. The runs are pytest processes of their own on
a small selection (no broker, no Spark), the extension hidden with the switch native_coverage honours; which
environments require the native half is checked in this process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from kafkasource.runtime import native_extension
from tests.support import native_coverage
from tests.support.job_helpers import REPO_ROOT

AVRO_TEST = "tests/unit/test_avro_decode.py::test_primitives"
READ_TEST = ("tests/unit/test_executor_failures.py::"
             "test_a_closed_port_is_retried_until_the_poll_timeout_and_the_stall_names_the_last_error")
SWITCHES = ("CI", native_coverage.REQUIRE, native_coverage.HIDE)
NOT_BUILT = "kafkasource's native extension (kafkasource._native) is not built here"
HOW_TO_BUILD = ("build it: install Rust (cargo), cmake, gcc and OpenSSL's headers (libssl-dev), then run "
                "`python3 -m pip install -e '.[test]'`, which builds native/ with setuptools-rust into "
                "kafkasource/_native.abi3.so (its output says why a build failed)")


def run_pytest(*args: str, **env: str) -> subprocess.CompletedProcess:
    """pytest on `args` from the repository, with this environment's switches replaced by `env`."""
    base = {k: v for k, v in os.environ.items() if k not in SWITCHES and not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "-v", *args], cwd=REPO_ROOT,
                          env={**base, **env}, capture_output=True, text=True, timeout=300)


def test_a_run_on_ci_refuses_to_start_without_the_extension_saying_what_failed_to_import_and_how_to_build_it():
    run = run_pytest(AVRO_TEST, CI="true", **{native_coverage.HIDE: "1"})

    assert run.returncode == pytest.ExitCode.USAGE_ERROR, (run.stdout[-2000:], run.stderr[-2000:])
    assert run.stderr.strip() == f"ERROR: the native read tests are required here (CI=true), but {NOT_BUILT}: " \
                                 f"{HOW_TO_BUILD}", run.stderr[-2000:]
    # nothing ran: the same search finds the test in the next run, which starts
    assert "test_primitives" not in run.stdout, run.stdout[-2000:]


def test_a_run_that_may_leave_the_native_half_out_runs_the_python_half_and_says_what_it_left_out():
    run = run_pytest(AVRO_TEST, **{native_coverage.REQUIRE: "0", native_coverage.HIDE: "1"})

    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-2000:])
    assert re.findall(r"test_primitives\[\w+\] PASSED", run.stdout) == ["test_primitives[python] PASSED"], run.stdout
    assert [line for line in run.stdout.splitlines() if "native" in line and "test_primitives" not in line] == [
        f"native read path and native Avro decoder not tested: {NOT_BUILT}"], run.stdout


def test_a_run_with_the_extension_says_how_many_tests_ran_on_the_native_half():
    """On CI (the extension required, so built) the line counts the native tests of the selection; where this
    install has no extension, the same run is refused, as above."""
    run = run_pytest(AVRO_TEST, READ_TEST, "-k", "native", CI="true")

    if native_coverage.left_out() is None:
        assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-2000:])
        assert re.findall(r"::(test_\w+\[native\]) PASSED", run.stdout) == [
            "test_primitives[native]",
            "test_a_closed_port_is_retried_until_the_poll_timeout_and_the_stall_names_the_last_error[native]"]
        assert [line for line in run.stdout.splitlines() if line.startswith("native ")] == [
            f"native read path and native Avro decoder built ({native_extension.EXTENSION.__file__}): 1 tests ran with "
            "readPath=native, 1 with the native Avro decoder"], run.stdout
    else:
        assert run.returncode == pytest.ExitCode.USAGE_ERROR, (run.stdout[-3000:], run.stderr[-2000:])
        assert run.stderr.startswith("ERROR: the native read tests are required here (CI=true), but "), run.stderr


@pytest.fixture
def cargo_dir(tmp_path):
    """A directory holding an executable named cargo, for a PATH where cargo is found."""
    (tmp_path / "cargo").write_text("#!/bin/sh\n")
    (tmp_path / "cargo").chmod(0o755)
    return str(tmp_path)


def test_which_environments_require_the_native_half(cargo_dir):
    switch = native_coverage.REQUIRE
    found = "cargo is on PATH, so `pip install -e .` builds the extension (or set KAFKASOURCE_REQUIRE_NATIVE=0)"
    cases = {"CI": ({"CI": "true", "PATH": ""}, "CI=true"),
             "CI, switch 0": ({"CI": "true", switch: "0", "PATH": ""}, "CI=true"),  # on CI the switch cannot opt out
             "switch 1": ({switch: "1", "PATH": ""}, f"{switch}=1"),
             "cargo": ({"PATH": cargo_dir}, found),
             "cargo, switch 0": ({switch: "0", "PATH": cargo_dir}, None),
             "CI=false": ({"CI": "false", "PATH": ""}, None),
             "nothing": ({"PATH": ""}, None)}

    assert {name: native_coverage.required_by(environ) for name, (environ, _) in cases.items()} == {
        name: because for name, (_, because) in cases.items()}
    with pytest.raises(ValueError, match=r"^KAFKASOURCE_REQUIRE_NATIVE='yes': write 1 \(the native read tests must "
                                         r"run\) or 0 \(they may be left out where cargo is on PATH\)$"):
        native_coverage.required_by({switch: "yes"})


def test_what_a_refusal_says_when_the_extension_or_its_avro_decoder_is_missing(monkeypatch):
    required = {"CI": "true", "PATH": ""}
    monkeypatch.setattr(native_extension, "EXTENSION", None)
    monkeypatch.setattr(native_extension, "LOAD_ERROR", "libssl.so.3: cannot open shared object file")
    assert native_coverage.refusal(required) == (
        "the native read tests are required here (CI=true), but kafkasource's native extension (kafkasource._native) "
        f"could not be loaded here: libssl.so.3: cannot open shared object file: {HOW_TO_BUILD}")
    assert native_coverage.refusal({"PATH": ""}) is None  # not required: the summary says it instead
    assert native_coverage.left_out() == (
        "native read path and native Avro decoder not tested: kafkasource's native extension (kafkasource._native) "
        "could not be loaded here: libssl.so.3: cannot open shared object file")

    monkeypatch.setattr(native_extension, "EXTENSION", SimpleNamespace(__file__="/site/kafkasource/_native.abi3.so"))
    assert native_coverage.refusal(required) == (
        "the native read tests are required here (CI=true), but kafkasource's native extension "
        f"/site/kafkasource/_native.abi3.so has no AvroDecoder (built from older sources): {HOW_TO_BUILD}")
    assert native_coverage.left_out() == ("native Avro decoder not tested: kafkasource's native extension "
                                          "/site/kafkasource/_native.abi3.so has no AvroDecoder "
                                          "(built from older sources)")
