"""The package's layout: the import paths users and Spark rely on, and the rules scripts/import_graph.py keeps (no
import circle, every module in the folder of its part, none over 450 lines, the drawn graph up to date). Pure: no
broker, no Spark."""

from __future__ import annotations

import importlib
import inspect

import pytest

from scripts import import_graph

# Every import path the docs give users, and the ones Spark and the jobs' launchers resolve: moving any of them
# breaks someone's code.
PUBLIC = [
    ("pyspark_kafkasource", "DefaultSource"),  # Spark's own scan registers format("kafkasource") from it
    ("kafkasource", "register"),
    ("kafkasource", "KafkaDataSource"),
    ("kafkasource", "__version__"),
    ("kafkasource", "KafkaSourceError"),
    ("kafkasource", "OptionError"),
    ("kafkasource", "BrokerUnavailableError"),
    ("kafkasource", "NoCommittedOffsetError"),
    ("kafkasource", "DataLossError"),
    ("kafkasource", "CommitError"),
    ("kafkasource", "AccessError"),
    ("kafkasource.metrics", "serve"),
    ("kafkasource.metrics", "Exporter"),
    ("kafkasource.metrics", "LagListener"),
    ("kafkasource.metrics", "lag_from_progress"),
    ("kafkasource.metrics.progress", "input_rows"),
    ("kafkasource.jobs.ingest", "main"),  # console scripts kafkasource-ingest, -replay, -lag, -route and jobs/*.py
    ("kafkasource.jobs.replay", "main"),
    ("kafkasource.jobs.lag", "main"),
    ("kafkasource.jobs.route", "main"),
    ("kafkasource.metrics.writes", "observe_writes"),  # docs/monitoring.md: a query's own writes counted
]


@pytest.mark.parametrize(("module", "name"), PUBLIC, ids=[f"{m}.{n}" for m, n in PUBLIC])
def test_every_public_import_path_resolves(module, name):
    assert getattr(importlib.import_module(module), name) is not None


def test_the_format_resolves_to_the_packages_data_source():
    from kafkasource.source import KafkaDataSource
    from pyspark_kafkasource import DefaultSource

    assert DefaultSource is KafkaDataSource
    assert KafkaDataSource.name() == "kafkasource"


def test_the_jobs_launchers_and_console_scripts_name_existing_entry_points():
    from pathlib import Path

    root = Path(import_graph.ROOT)
    setup = (root / "setup.py").read_text(encoding="utf-8")
    for job in ("ingest", "replay", "lag", "route"):
        assert f"kafkasource-{job}=kafkasource.jobs.{job}:main" in setup
        assert f"from kafkasource.jobs.{job} import main" in (root / "jobs" / f"{job}.py").read_text(encoding="utf-8")
        assert inspect.isfunction(importlib.import_module(f"kafkasource.jobs.{job}").main)


def test_the_package_keeps_its_layout_rules():
    assert import_graph.problems() == []


def test_the_rules_find_what_breaks_them():
    """The checks can fail: a circle, a module at the top and an oversized one are each named."""
    assert import_graph.circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_graph.circles({"a": {"b"}, "b": set()}) == []
    found = import_graph.problems_of({import_graph.PACKAGE / "helpers.py": 12, import_graph.PACKAGE / "x" / "y.py": 451,
                                      import_graph.PACKAGE / "options.py": 450})
    assert found == ["kafkasource/helpers.py stands at the top of the package, which holds only the faces "
                     "(__init__, _version, batch, errors, options, registration, source, stream): give it the folder "
                     "of its part",
                     "kafkasource/x/y.py has 451 lines, over 450"]


def test_a_refused_arrow_between_rooms_is_named():
    """formats/ is used by the options, the readers and the sink: an import of any of them from it is named."""
    edges = {"kafkasource.formats.decoding": {"kafkasource.options.values", "kafkasource.records.schema"}}
    assert import_graph.refused_arrows(edges) == [
        "kafkasource.formats.decoding imports kafkasource.options.values: formats/ must not import options/"]


def test_rooms_importing_each_other_through_any_modules_are_a_circle():
    """Two rooms whose modules import each other's, even through different modules, form a circle between rooms;
    the leaves (errors) are rooms of their own that every room may import."""
    edges = {"kafkasource.options.source": {"kafkasource.formats.decoding", "kafkasource.errors"},
             "kafkasource.formats.encoding": {"kafkasource.options.values", "kafkasource.errors"},
             "kafkasource.stream": {"kafkasource.options.source"}}
    rooms = import_graph.room_edges(edges)
    assert rooms == {("options", "formats"): 1, ("options", "errors"): 1, ("formats", "options"): 1,
                     ("formats", "errors"): 1, ("(faces)", "options"): 1}
    between: dict[str, set[str]] = {}
    for source, target in rooms:
        between.setdefault(source, set()).add(target)
    assert import_graph.circles(between) == [["formats", "options"]]


def test_an_import_for_annotations_only_counts_as_an_import(tmp_path, monkeypatch):
    """A module that imports another only under `if TYPE_CHECKING:` needs it all the same: the edge is drawn, and
    a circle through it is found."""
    monkeypatch.setattr(import_graph, "ROOT", tmp_path)
    (tmp_path / "kafkasource").mkdir()
    typed = tmp_path / "kafkasource" / "typed.py"
    typed.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kafkasource.other import Other\n")

    assert import_graph.imports_of(typed, {"kafkasource.typed", "kafkasource.other"}) == {"kafkasource.other"}


def test_the_import_graph_page_is_up_to_date():
    assert import_graph.PAGE.read_text(encoding="utf-8") == import_graph.page(), \
        "docs/import-graph.md is stale: run python3 -m scripts.import_graph"
