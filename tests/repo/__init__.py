"""Checks of the repository itself: the docs and their links, the package's layout and import graph, packaging,
the imports it declares, the native coverage of the suite."""
