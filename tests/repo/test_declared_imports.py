"""scripts/check_imports.py: every import the package makes at run time is of a distribution that its declared
requirements bring (install_requires, the spark extra, and the extras its module's feature names), so a hidden
dependency such as an undeclared numpy fails here in seconds. Pure: no Spark, no broker; reads the installed
metadata of the test environment (where pandas brings numpy, which no extra users install declares)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import check_imports
from scripts.check_imports import Metadata, Problem, collect_imports, find_problems, installed_metadata


@pytest.fixture(scope="module")
def meta() -> Metadata:
    return installed_metadata()


def write_package(root: Path, files: dict[str, str]) -> Path:
    """A fake package named kafkasource (so EXTRAS' prefixes apply) under root, with the given modules."""
    package = root / "kafkasource"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package


def test_the_package_imports_only_what_its_requirements_bring_and_the_search_sees_its_imports(meta):
    """The real package passes with no problem at all, and that is not because the search came back empty: it
    finds the package's imports of pyarrow and confluent_kafka, and imports made inside functions."""
    imports = collect_imports(check_imports.PACKAGE)
    modules = {imported.module for imported in imports}
    assert {"pyarrow", "confluent_kafka", "fastavro", "prometheus_client"} <= modules
    assert any(imported.in_function and imported.module == "fastavro" for imported in imports)

    assert [str(problem) for problem in find_problems(check_imports.PACKAGE, meta)] == []


def test_an_undeclared_import_inside_a_function_is_reported_with_its_file_and_line(tmp_path, meta):
    """numpy is installed here (pandas, of the test extra, brings it) but nothing users install brings it: an
    `import numpy` inside a function is the one problem, at its file and line; the stdlib, __future__, relative and
    the package's own imports (its compiled extension included) are not."""
    assert check_imports.distributions_of("numpy", meta) == ("numpy",)
    package = write_package(
        tmp_path,
        {
            "__init__.py": "from __future__ import annotations\n\nimport json\n\nimport pyarrow\n",
            "writing/__init__.py": "",
            "writing/digest.py": (
                "from kafkasource import _native\n"
                "from . import other\n"
                "\n"
                "def digest(table):\n"
                "    import numpy as np\n"
                "    return np.asarray(table)\n"
            ),
        },
    )

    problems = find_problems(package, meta)

    assert [(p.imported.path, p.imported.line, p.imported.module) for p in problems] == [
        ("kafkasource/writing/digest.py", 5, "numpy")
    ]
    assert str(problems[0]).startswith(
        "kafkasource/writing/digest.py:5: imports numpy (distribution numpy), which neither install_requires nor "
        "the extra(s) spark bring; declare it in setup.py or "
    )


def test_an_extra_is_allowed_only_under_the_path_the_table_gives_it(tmp_path, meta):
    """fastavro comes with the registry extra (confluent-kafka[avro]): a module under kafkasource/formats/ may
    import it, while the same import in a module outside is reported and names the extras that module has."""
    package = write_package(
        tmp_path,
        {
            "formats/avro/decode.py": "def decode():\n    import fastavro\n",
            "reading/arrow.py": "def decode():\n    import fastavro\n",
        },
    )

    problems = find_problems(package, meta)

    assert [(p.imported.path, p.imported.module, p.extras) for p in problems] == [
        ("kafkasource/reading/arrow.py", "fastavro", ("spark",))
    ]
    assert check_imports.extras_for("kafkasource/formats/avro/decode.py") == ("spark", "registry")


def test_imports_under_type_checking_are_skipped_but_its_else_branch_is_not(tmp_path, meta):
    """Imports under `if TYPE_CHECKING:` never run, so an undeclared one there is no problem; the else branch runs
    and is checked."""
    package = write_package(
        tmp_path,
        {
            "typed.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import numpy\nelse:\n    import pandas\n"
            ),
        },
    )

    assert [(p.imported.line, p.imported.module) for p in find_problems(package, meta)] == [(5, "pandas")]


def test_a_module_no_installed_distribution_holds_is_reported_as_unchecked(tmp_path, meta):
    """An import of something not installed cannot be checked, so it is a problem too, with no distribution."""
    package = write_package(tmp_path, {"mod.py": "import surely_not_installed_anywhere\n"})

    assert find_problems(package, meta) == [
        Problem(check_imports.Import("kafkasource/mod.py", 1, "surely_not_installed_anywhere", False), (), ("spark",))
    ]


def test_extras_are_followed_through_the_requirements_they_bring(meta):
    """What an extra brings is followed with the extras each requirement asks for: the registry extra brings
    confluent-kafka[avro,...]'s fastavro and protobuf, while the spark extra brings pyspark without its Connect
    client's pandas, and install_requires alone brings no pyspark."""
    assert {"pyarrow", "confluent-kafka"} <= check_imports.brought_by((), meta)
    assert "pyspark" not in check_imports.brought_by((), meta)
    assert {"fastavro", "protobuf", "jsonschema"} <= check_imports.brought_by(("registry",), meta)
    spark = check_imports.brought_by(("spark",), meta)
    assert "pyspark" in spark and "pandas" not in spark and "numpy" not in spark
    assert "pandas" in check_imports.brought_by(("test",), meta)


def test_a_namespace_shared_by_several_distributions_maps_to_the_one_holding_the_module(meta):
    """google.protobuf and google.auth share the google folder: each maps to its own distribution, so the gcp
    extra's google-auth does not let a module import google.protobuf."""
    assert check_imports.distributions_of("google.protobuf.descriptor", meta) == ("protobuf",)
    assert check_imports.distributions_of("google.auth.transport.requests", meta) == ("google-auth",)
