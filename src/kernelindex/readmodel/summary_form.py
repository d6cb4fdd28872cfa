"""The fingerprint of the code and registry a stored operation summary comes from (``readmodel/summaries.py``):
a stored summary, and the attainable rates kept in it (``readmodel/attainable.py``), are read back only by
the code that would compute the same ones; after an upgrade they are computed again."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from typing import Any


@cache
def summary_form() -> str:
    """A fingerprint of the code and registry a summary comes from: a stored summary is read back only
    by the code that would compute the same one (after an upgrade they are computed again)."""
    digest = hashlib.sha256()
    package = resources.files("kernelindex")
    for part in ("domain", "policy", "readmodel", "registry"):
        for path in sorted(_files(package.joinpath(part)), key=str):
            digest.update(str(path).rsplit("kernelindex", 1)[-1].encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def _files(folder: Any) -> list[Any]:
    found = []
    for entry in folder.iterdir():
        if entry.is_dir() and entry.name != "__pycache__":
            found.extend(_files(entry))
        elif entry.name.endswith((".py", ".yaml", ".yml", ".json")):
            found.append(entry)
    return found
