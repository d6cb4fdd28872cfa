"""Where the registry's files are, and the one error a malformed one raises (naming the file)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

ROOT = resources.files("kernelindex.registry")


class RegistryError(ValueError):
    pass


# libyaml's safe loader when PyYAML was built with it: the same documents as the pure-Python one, about ten
# times faster (a fresh process parses the 70 operation files on its first query: ~0.7 s pure-Python)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)  # a safe loader, C or Python


def load_yaml(relative: str) -> Any:
    return parse_yaml(ROOT.joinpath(relative).read_text(encoding="utf-8"))
