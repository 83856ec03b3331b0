"""The tests' own layout: every test module lies in the folder of its tier, tests/support/ holds no tests, no test
module imports another, and the markers of what a test costs follow from its folder and fixtures
(tests/support/tiers.py). Pure: no broker, no Spark."""

from __future__ import annotations

import ast

from dev.process import REPO_ROOT
from tests.support import tiers

TESTS = REPO_ROOT / "tests"


def test_every_test_module_is_in_a_tier_folder_and_support_holds_none():
    outside = [str(path.relative_to(TESTS)) for path in sorted(TESTS.rglob("test_*.py"))
               if tiers.tier(path, TESTS) is None]
    assert outside == []
    assert sorted(p.name for p in TESTS.iterdir() if p.suffix == ".py") == ["__init__.py", "conftest.py"]
    folders = sorted(p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted([*tiers.TIERS, "support"])
    assert [name for name in folders if not (TESTS / name / "__init__.py").is_file()] == []  # imported as packages
    assert any(tiers.tier(path, TESTS) == "unit" for path in TESTS.rglob("test_*.py"))  # the search finds them


def test_test_modules_import_only_the_support_code_never_each_other():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(REPO_ROOT)} imports {name}" for name in names
                      if name.split(".")[:2] in ([["tests", tier] for tier in tiers.TIERS])]
    assert found == []


def test_markers_follow_the_folder_and_the_fixtures_and_a_unit_test_asking_for_a_server_is_refused():
    assert tiers.tier(TESTS / "unit" / "test_options.py", TESTS) == "unit"
    assert tiers.tier(TESTS / "support" / "kafka_helpers.py", TESTS) is None
    assert tiers.cost_markers("unit", {"tmp_path", "read_path"}) == []
    assert tiers.cost_markers("integration", {"kafka", "kafka_broker", "spark"}) == ["broker", "spark"]
    assert tiers.cost_markers("integration", {"schema_registry"}) == ["broker"]
    assert tiers.cost_markers("system", {"sasl"}) == ["broker", "system"]
    assert tiers.misplaced("integration", {"kafka_broker", "spark"}) is None
    assert tiers.misplaced("repo", {"tmp_path"}) is None
    assert tiers.misplaced("unit", {"kafka", "kafka_broker", "spark"}) == (
        "asks for kafka_broker, spark, which start a server or Spark, and tests/unit/ starts nothing (move it to "
        "tests/integration/ or tests/system/)")


def test_the_scripts_tests_start_in_processes_of_their_own_are_support_modules_named_by_their_new_place():
    """`python -m tests.support.<name>`, a spark-submit of its path, or the oauthProvider the tests' Spark allows:
    each names a module of tests/support/, and none is named by its place before the tiers."""
    launched = {"sink_cluster_job", "sink_fault_query", "sink_fresh_process", "sink_reference_job",
                "query_process", "token_provider"}
    text = "\n".join(path.read_text(encoding="utf-8") for path in TESTS.rglob("*.py"))
    assert sorted(name for name in launched if not (TESTS / "support" / f"{name}.py").is_file()) == []
    named = {name for name in launched if f"tests.support.{name}" in text or f'"support" / "{name}.py"' in text}
    assert named == launched
    assert [name for name in launched if f'"tests.{name}' in text or f'"tests" / "{name}.py"' in text] == []
