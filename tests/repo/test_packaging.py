"""What a release is made of, checked without building one (scripts/wheels.py builds the wheels, minutes per
architecture, outside CI): one version everywhere, the licence files in the sdist and the wheels' metadata,
and the message of an import where no pyspark is."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from kafkasource import __version__
from kafkasource.runtime import native_extension
from kafkasource.runtime.pyspark_check import version_tuple

REPO = Path(__file__).resolve().parents[2]
RELEASE_FILES = ["LICENSE", "NOTICE", "CHANGELOG.md", "licenses/README.md", "licenses/rdkafka-LICENSES.txt",
                 "licenses/openssl-LICENSE.txt", "licenses/libz-LICENSE", "licenses/zstd-LICENSE",
                 "licenses/curl-COPYING", "licenses/crates/pyo3-0.25.1/LICENSE-APACHE",
                 "native/Cargo.toml", "native/Cargo.lock", "native/src/lib.rs"]


def test_the_version_is_one_in_the_package_the_wheel_and_the_extension():
    cargo = tomllib.loads((REPO / "native" / "Cargo.toml").read_text())
    lock = tomllib.loads((REPO / "native" / "Cargo.lock").read_text())
    setup = subprocess.run([sys.executable, "setup.py", "--version"], cwd=REPO, capture_output=True, text=True,
                           check=True)

    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    assert setup.stdout.strip().splitlines()[-1] == __version__
    assert cargo["package"]["version"] == __version__
    assert [p["version"] for p in lock["package"] if p["name"] == "kafkasource-native"] == [__version__]
    assert f"## {__version__} " in (REPO / "CHANGELOG.md").read_text()
    # where cargo is on PATH, `pip install` builds the extension
    if native_extension.available() or shutil.which("cargo"):
        from kafkasource import _native
        assert _native.__version__ == __version__


def test_the_sdist_and_the_wheel_metadata_carry_the_licences(tmp_path):
    """setuptools' egg_info writes the sdist's file list (SOURCES.txt) and the License-File entries that
    bdist_wheel copies into the wheel's .dist-info."""
    subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(tmp_path)], cwd=REPO,
                   capture_output=True, check=True, env=dict(os.environ, KAFKASOURCE_NATIVE="0"))
    info, = tmp_path.glob("*.egg-info")
    sources = [name.removeprefix("./") for name in (info / "SOURCES.txt").read_text().splitlines()]
    license_files = re.findall(r"^License-File: (.+)$", (info / "PKG-INFO").read_text(), re.MULTILINE)
    third_party = sorted(str(path.relative_to(REPO)) for path in (REPO / "licenses").rglob("*") if path.is_file())

    assert [name for name in RELEASE_FILES if name not in sources] == []
    assert "kafkasource/_version.py" in sources and "kafkasource/reading/native.py" in sources
    assert "kafkasource/py.typed" in sources and "kafkasource/_native.pyi" in sources  # the type hints, shipped
    assert len(third_party) > 20 and [name for name in third_party if name not in sources] == []
    assert sorted(license_files) == sorted(["LICENSE", "NOTICE"] + third_party)
    listed = re.findall(r"\| ([^|]+) \|$", (REPO / "licenses" / "README.md").read_text(), re.MULTILINE)[2:]
    assert [f for row in listed for f in row.split(", ") if not (REPO / "licenses" / f).is_file()] == []
    assert "Apache License" in (REPO / "LICENSE").read_text() and "END OF TERMS AND CONDITIONS" in \
        (REPO / "LICENSE").read_text()


def run_python(code: str, extra_path: Path | None = None) -> subprocess.CompletedProcess:
    """This Python with only the checkout (and extra_path) on sys.path: -I ignores PYTHONPATH and the user's
    site, -S leaves out site-packages, where the tests' pyspark is."""
    paths = [str(REPO)] + ([str(extra_path)] if extra_path else [])
    return subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path[:0] = {paths!r}; {code}"],
                          capture_output=True, text=True, timeout=60)


def test_importing_without_pyspark_says_what_to_install():
    without = run_python("import kafkasource")
    with_site = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); "
                                "import kafkasource, pyspark; print(kafkasource.__version__, pyspark.__version__)"],
                               capture_output=True, text=True, timeout=60)

    assert without.returncode == 1
    assert without.stderr.strip().splitlines()[-1] == (
        f"ImportError: kafkasource needs PySpark 4.0 or newer, and this Python ({sys.executable}) cannot import "
        "pyspark (No module named 'pyspark'). Install one with `pip install 'kafkasource[spark]'` (or "
        "`pip install 'pyspark>=4.0'`), or run under a Spark 4.0 or newer: spark-submit and the pyspark shell "
        "put its python/ on sys.path.")
    assert with_site.returncode == 0, with_site.stderr  # the same import where site-packages hold a pyspark
    assert with_site.stdout.split()[0] == __version__


def test_an_older_pyspark_is_named_with_its_place(tmp_path):
    (tmp_path / "pyspark").mkdir()
    (tmp_path / "pyspark" / "__init__.py").write_text('__version__ = "3.5.7"\n')

    result = run_python("import kafkasource", extra_path=tmp_path)

    assert result.returncode == 1
    assert ("ImportError: kafkasource needs PySpark 4.0 or newer (Spark's Python Data Source API, which "
            'format("kafkasource") runs on, came with Spark 4.0; no Python data source can run on an older one), '
            f"but this Python imports pyspark 3.5.7 from {tmp_path / 'pyspark' / '__init__.py'}. Install one with"
            ) in result.stderr


def test_pyspark_versions_read_as_major_and_minor():
    assert [version_tuple(v) for v in ["4.3.0", "4.2.0.dev1", "4.2.0-SNAPSHOT", "10.0", "", "unknown"]] == [
        (4, 3), (4, 2), (4, 2), (10, 0), (0, 0), (0, 0)]


def test_every_error_kafkasource_raises_on_purpose_is_exported_and_on_the_api_page():
    """A user catches kafkasource.SignInError, not kafkasource.errors.SignInError: each error class is in __all__,
    and the API page renders each."""
    import inspect

    import kafkasource
    from kafkasource import errors

    classes = {name for name, value in vars(errors).items()
               if inspect.isclass(value) and issubclass(value, errors.KafkaSourceError)}
    assert "SignInError" in classes and "KafkaSourceError" in classes
    assert classes <= set(kafkasource.__all__)
    api = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    members = set(re.search(r"members: \[([^\]]*)\]", api).group(1).replace(" ", "").split(","))
    assert members == classes
