"""The two floors' kinds and what every surface calls them (pages, JSON "name", CLI, MCP): never a bare "floor".
Apart from ``policy/floor.py`` so that printing a floor's name does not import the floor's arithmetic (a ``ki``
lookup printing a stored answer, docs/caching.md)."""

from __future__ import annotations

PHYSICAL = "physical"
ATTAINABLE = "attainable"
FLOOR_NAMES = {PHYSICAL: "physical floor", ATTAINABLE: "attainable floor"}
