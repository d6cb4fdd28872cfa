"""The size caps of a bundle's files and the checks that apply them before a byte is read (a bundle
directory, from its entries) or once the files are in memory (an uploaded archive)."""

from __future__ import annotations

import stat
from collections.abc import Mapping
from pathlib import Path

from kernelindex.trust.content import BundleError

MANIFESTS_FILE = "manifests.jsonl"
INDEX_FILE = "bundle.json"
SIGNATURE_FILE = "bundle.sig"
SAMPLES_DIR = "samples"
# Size caps, checked on the directory entry before a byte is read (the shipped bundles' largest
# file is 90 kB). A bundle holds only regular files and directories: never a symlink or a device.
MAX_INDEX_BYTES = 1_048_576  # bundle.json, bundle.sig
MAX_MANIFESTS_BYTES = 64 * 1_048_576
MAX_SAMPLES_BYTES = 16 * 1_048_576  # one samples file
MAX_BUNDLE_BYTES = 256 * 1_048_576  # every file together
MAX_BUNDLE_FILES = 10_000

BundleFiles = Mapping[str, bytes]  # a bundle's files by their name in the bundle ("samples/<hex>.json")


def size_limit(name: str) -> int:
    if name in (INDEX_FILE, SIGNATURE_FILE):
        return MAX_INDEX_BYTES
    return MAX_MANIFESTS_BYTES if name == MANIFESTS_FILE else MAX_SAMPLES_BYTES


def check_tree(root: Path) -> None:
    """Refuse, from directory entries alone (lstat, nothing opened), any symlink, device, socket or
    fifo, any file over its cap, and a bundle over its total size or file count."""
    total, count = 0, 0
    for entry in root.rglob("*"):
        info = entry.lstat()
        name = entry.relative_to(root).as_posix()
        if stat.S_ISDIR(info.st_mode):
            continue
        if not stat.S_ISREG(info.st_mode):
            kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a regular file"
            raise BundleError(f"{entry}: {kind}; a bundle holds only regular files")
        if info.st_size > size_limit(name):
            raise BundleError(f"{entry}: {info.st_size:,} bytes, over the {size_limit(name):,}-byte limit")
        total, count = total + info.st_size, count + 1
        if total > MAX_BUNDLE_BYTES or count > MAX_BUNDLE_FILES:
            raise BundleError(f"{root}: over {MAX_BUNDLE_BYTES:,} bytes or {MAX_BUNDLE_FILES:,} files")


def check_sizes(files: BundleFiles) -> None:
    """The same caps on files already in memory (an archive's reader checks them before reading too)."""
    if len(files) > MAX_BUNDLE_FILES or sum(len(data) for data in files.values()) > MAX_BUNDLE_BYTES:
        raise BundleError(f"over {MAX_BUNDLE_BYTES:,} bytes or {MAX_BUNDLE_FILES:,} files")
    for name, data in files.items():
        if len(data) > size_limit(name):
            raise BundleError(f"{name}: {len(data):,} bytes, over the {size_limit(name):,}-byte limit")


def read_capped(file: Path) -> bytes:
    """Read a file checked by _check_tree, never more than its cap (it may have grown since)."""
    limit = size_limit(file.name)
    with file.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise BundleError(f"{file}: over the {limit:,}-byte limit")
    return data
