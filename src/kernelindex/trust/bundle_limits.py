"""The names and size caps of a bundle's files (``trust/bundles.py`` applies them; ``trust/archive.py``
checks an upload's headers against them)."""

from __future__ import annotations

from collections.abc import Mapping

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
