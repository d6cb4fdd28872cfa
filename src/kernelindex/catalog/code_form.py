"""A fingerprint of parts of the package's code, for what the catalog stores derived from it (operation
summaries, ``readmodel/summary_form.py``; kept lookups, ``catalog/lookup_form.py``): a stored answer is read back
only by the code that would compute the same one. Standard library only: the CLI's fast path imports it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
SOURCE_SUFFIXES = (".py", ".yaml", ".yml", ".json")


def code_fingerprint(parts: Iterable[str], top_level: bool = False) -> str:
    """The digest of every source file under the package's ``parts`` (and its top-level modules when
    ``top_level``), each with its path: any change to one of them gives another fingerprint."""
    paths = sorted(PACKAGE.glob("*.py")) if top_level else []
    for part in parts:
        paths += sorted((p for p in (PACKAGE / part).rglob("*")
                         if p.suffix in SOURCE_SUFFIXES and "__pycache__" not in p.parts), key=str)
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:32]
