"""Where the registry's files are, and the one error a malformed one raises (naming the file)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

ROOT = resources.files("kernelindex.registry")


class RegistryError(ValueError):
    pass


def load_yaml(relative: str) -> Any:
    return yaml.safe_load(ROOT.joinpath(relative).read_text(encoding="utf-8"))
