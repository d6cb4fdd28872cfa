"""What every reader of a user-named file checks first, from its directory entry: that it is a regular
file (``/dev/zero`` never ends; a pipe or a directory is no input) and not over the reader's limit."""

from __future__ import annotations

import stat
from pathlib import Path


def check_regular_file(path: Path, max_bytes: int, error: type[Exception], *, give: str, limit_of: str) -> None:
    """Raise ``error`` saying what is wrong with ``path``: unreadable, not a regular file (``give``: what
    to give instead), or larger than ``max_bytes`` (``limit_of``: whose limit, and what to do)."""
    try:
        info = path.stat()
    except OSError as exc:
        raise error(f"{path}: cannot read it ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{path} is not a regular file (a device, pipe or directory); give {give}")
    if info.st_size > max_bytes:
        raise error(f"{path} is {info.st_size:,} bytes, over the {max_bytes:,}-byte limit of {limit_of}")
