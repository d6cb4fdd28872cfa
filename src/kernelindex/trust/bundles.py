"""Signed result bundles: what a KernelIndex runner hands to ``ki publish``.

A bundle is a directory::

    manifests.jsonl      one manifest per line (operation, workloads, projects, implementations,
                         protocol, environment, runs), each in canonical JSON (RFC 8785)
    samples/<hex>.json   raw timing samples of one run; <hex> is the file's own SHA-256,
                         and the run's ``timing.samples_digest`` names it
    bundle.json          format, creation time, runner identity, the SHA-256 of every other file
                         and ``digest`` = SHA-256 of the canonical JSON of all of that
    bundle.sig           Ed25519 signature over the bundle digest, with the public key and key id

``bundle.json`` and ``bundle.sig`` must be byte-for-byte canonical JSON, so that every byte of
every file is covered: change any byte anywhere and verification fails.

A bundle is verified from memory, once: ``read_bundle`` (a directory) or ``trust/archive.py`` (an
uploaded archive) gives its files' bytes, ``verify_bundle`` checks them, and ``publish_verified``
publishes what was checked.
"""

from __future__ import annotations

import re
import stat
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from kernelindex.catalog.publish import Attestation, PublishReport, publish_manifests
from kernelindex.catalog.runners import trusted_runner_keys
from kernelindex.domain.canonical import (
    ManifestSyntaxError,
    bytes_digest,
    canonical_bytes,
    sha256_digest,
    strict_json_loads,
)
from kernelindex.domain.manifests import (
    Manifest,
    ManifestError,
    digest_of,
    parse_manifest_text,
)
from kernelindex.domain.sources import RUNNER_SOURCE
from kernelindex.trust.bundle_limits import (
    INDEX_FILE,
    MANIFESTS_FILE,
    MAX_BUNDLE_BYTES,
    MAX_BUNDLE_FILES,
    MAX_INDEX_BYTES,
    MAX_MANIFESTS_BYTES,
    MAX_SAMPLES_BYTES,
    SAMPLES_DIR,
    SIGNATURE_FILE,
    BundleFiles,
)
from kernelindex.trust.content import (
    MEASUREMENT_KINDS,
    BundleError,
    NotAMeasurementError,
    UntrustedRunnerError,
    check_kind,
    check_measured,
    check_references,
    check_runner_names,
)
from kernelindex.trust.keys import ALGORITHM, key_id_of, public_key_hex, verify_signature

__all__ = ["BundleError", "NotAMeasurementError", "UntrustedRunnerError", "MEASUREMENT_KINDS", "VerifiedBundle",
           "read_bundle", "verify_bundle", "check_signer", "verify_directory", "write_bundle", "publish_verified",
           "publish_bundle", "bundled_bundles", "BundleFiles", "INDEX_FILE", "MANIFESTS_FILE", "SIGNATURE_FILE",
           "SAMPLES_DIR", "MAX_INDEX_BYTES", "MAX_MANIFESTS_BYTES", "MAX_SAMPLES_BYTES", "MAX_BUNDLE_BYTES",
           "MAX_BUNDLE_FILES"]

BUNDLE_FORMAT = "kernelindex-bundle/v1"
_HEX = re.compile(r"^[0-9a-f]+$")




@dataclass(frozen=True)
class VerifiedBundle:
    digest: str
    runner_name: str
    key_id: str
    public_key: str
    created_at: str
    signature: str
    manifests: list[Manifest] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return dict(Counter(m.kind for m in self.manifests))

    def runs(self) -> list[Manifest]:
        return [m for m in self.manifests if m.kind == "BenchmarkRun"]


# --- writing -------------------------------------------------------------------------------------


def samples_file_name(data: bytes) -> str:
    return f"{SAMPLES_DIR}/{bytes_digest(data).removeprefix('sha256:')}.json"


def write_bundle(
    out_dir: Path,
    manifests: list[Manifest],
    samples: list[bytes],
    *,
    key: Ed25519PrivateKey,
    runner_name: str,
    created_at: datetime | None = None,
) -> VerifiedBundle:
    """Write and sign a bundle, then verify what was written."""
    if out_dir.exists() and any(out_dir.iterdir()):
        raise BundleError(f"{out_dir} is not empty; choose a new directory for the bundle")
    (out_dir / SAMPLES_DIR).mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    lines = b"".join(canonical_bytes(_plain(m)) + b"\n" for m in _unique(manifests))
    files[MANIFESTS_FILE] = _write(out_dir, MANIFESTS_FILE, lines)
    for data in samples:
        name = samples_file_name(data)
        files[name] = _write(out_dir, name, data)
    public = public_key_hex(key)
    when = (created_at or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    index: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "created_at": when,
        "runner": {"name": runner_name, "key_id": key_id_of(public)},
        "files": dict(sorted(files.items())),
    }
    index["digest"] = sha256_digest(index)
    _write(out_dir, INDEX_FILE, canonical_bytes(index))
    signature = key.sign(index["digest"].encode("ascii"))
    sig = {"algorithm": ALGORITHM, "key_id": key_id_of(public), "public_key": public,
           "signature": signature.hex()}
    _write(out_dir, SIGNATURE_FILE, canonical_bytes(sig))
    return verify_directory(out_dir)


def _plain(manifest: Manifest) -> dict[str, Any]:
    return manifest.model_dump(mode="json", exclude_none=True, by_alias=True)


def _unique(manifests: list[Manifest]) -> list[Manifest]:
    seen: dict[str, Manifest] = {}
    for manifest in manifests:
        seen.setdefault(digest_of(manifest), manifest)
    return list(seen.values())


def _write(root: Path, name: str, data: bytes) -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return bytes_digest(data)


# --- verification --------------------------------------------------------------------------------


def read_bundle(path: Path) -> dict[str, bytes]:
    """A bundle directory's files, read within the caps: anything but regular files and directories,
    any file over its cap, and a bundle over its total size or file count are refused from directory
    entries alone (lstat), before a byte is read."""
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        raise BundleError(
            f"{path}: a bundle is a directory with {INDEX_FILE}, {SIGNATURE_FILE} and {MANIFESTS_FILE}"
        )
    _check_tree(path)
    return {file.relative_to(path).as_posix(): _read(file)
            for file in sorted(path.rglob("*")) if not file.is_dir()}


def verify_directory(path: Path) -> VerifiedBundle:
    """Verify the bundle directory ``path``; errors name the directory and the file at fault."""
    try:
        return verify_bundle(read_bundle(path))
    except BundleError as exc:
        message = str(exc)
        raise type(exc)(message if message.startswith(str(path)) else f"{path}: {message}") from None


def verify_bundle(files: BundleFiles, *, trusted: Mapping[str, str] | None = None) -> VerifiedBundle:
    """Check the signature, every file digest and the bundle's internal references, from the files'
    bytes. Raises BundleError (NotAMeasurementError for foreign kinds) naming the first problem found
    by the file's name within the bundle. With ``trusted`` (key id → runner name), a bundle signed by
    any other key is refused (UntrustedRunnerError) right after its signature is checked, before any
    other file is hashed or a manifest parsed."""
    _check_sizes(files)
    index = _canonical_json(files, INDEX_FILE)
    sig = _canonical_json(files, SIGNATURE_FILE)
    digest = _check_index(index)
    key_id, public = _check_signature(sig, digest, index)
    if trusted is not None:
        _check_trusted(key_id, index, trusted)
    _check_files(files, index["files"])
    manifests = _read_manifests(files[MANIFESTS_FILE])
    check_references(manifests, index["files"], key_id)
    check_measured(manifests)
    return VerifiedBundle(
        digest=digest, runner_name=index["runner"]["name"], key_id=key_id, public_key=public,
        created_at=index["created_at"], signature=sig["signature"], manifests=manifests,
    )


def check_signer(files: BundleFiles, trusted: Mapping[str, str]) -> str:
    """Check ``bundle.json`` and ``bundle.sig`` alone (the first two files of an archive ``ki publish``
    makes): the index's digest, the signature over it and that its key is trusted here; returns the key
    id. Work before trust: an upload signed by a stranger costs two small files, never its manifests."""
    index = _canonical_json(files, INDEX_FILE)
    sig = _canonical_json(files, SIGNATURE_FILE)
    key_id, _ = _check_signature(sig, _check_index(index), index)
    _check_trusted(key_id, index, trusted)
    return key_id


def _check_trusted(key_id: str, index: dict[str, Any], trusted: Mapping[str, str]) -> None:
    if key_id not in trusted:
        raise UntrustedRunnerError(
            f"the bundle is signed by runner {index['runner']['name']!r} ({key_id}), which is not a trusted "
            "runner on this server; an operator must run `ki runner trust` for its public key first")


def _size_limit(name: str) -> int:
    if name in (INDEX_FILE, SIGNATURE_FILE):
        return MAX_INDEX_BYTES
    return MAX_MANIFESTS_BYTES if name == MANIFESTS_FILE else MAX_SAMPLES_BYTES


def _check_tree(root: Path) -> None:
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
        if info.st_size > _size_limit(name):
            raise BundleError(f"{entry}: {info.st_size:,} bytes, over the {_size_limit(name):,}-byte limit")
        total, count = total + info.st_size, count + 1
        if total > MAX_BUNDLE_BYTES or count > MAX_BUNDLE_FILES:
            raise BundleError(f"{root}: over {MAX_BUNDLE_BYTES:,} bytes or {MAX_BUNDLE_FILES:,} files")


def _check_sizes(files: BundleFiles) -> None:
    """The same caps on files already in memory (an archive's reader checks them before reading too)."""
    if len(files) > MAX_BUNDLE_FILES or sum(len(data) for data in files.values()) > MAX_BUNDLE_BYTES:
        raise BundleError(f"over {MAX_BUNDLE_BYTES:,} bytes or {MAX_BUNDLE_FILES:,} files")
    for name, data in files.items():
        if len(data) > _size_limit(name):
            raise BundleError(f"{name}: {len(data):,} bytes, over the {_size_limit(name):,}-byte limit")


def _read(file: Path) -> bytes:
    """Read a file checked by _check_tree, never more than its cap (it may have grown since)."""
    limit = _size_limit(file.name)
    with file.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise BundleError(f"{file}: over the {limit:,}-byte limit")
    return data


def _canonical_json(files: BundleFiles, name: str) -> dict[str, Any]:
    if (raw := files.get(name)) is None:
        raise BundleError(f"{name} is missing")
    try:
        data = strict_json_loads(raw)
    except (ManifestSyntaxError, ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"{name}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BundleError(f"{name}: expected a JSON object")
    if canonical_bytes(data) != raw:
        raise BundleError(f"{name}: bytes differ from the canonical JSON form; the file was altered")
    return data


def _check_index(index: dict[str, Any]) -> str:
    expected = {"format", "created_at", "runner", "files", "digest"}
    if set(index) != expected:
        raise BundleError(f"{INDEX_FILE}: expected exactly the keys {sorted(expected)}, got {sorted(index)}")
    if index["format"] != BUNDLE_FORMAT:
        raise BundleError(f"{INDEX_FILE}: format {index['format']!r} is not {BUNDLE_FORMAT!r}")
    runner, files = index["runner"], index["files"]
    if not isinstance(runner, dict) or set(runner) != {"name", "key_id"}:
        raise BundleError(f"{INDEX_FILE}: runner must hold exactly name and key_id")
    if not isinstance(files, dict) or MANIFESTS_FILE not in files:
        raise BundleError(f"{INDEX_FILE}: files must list {MANIFESTS_FILE} and every samples file")
    body = {k: v for k, v in index.items() if k != "digest"}
    digest = sha256_digest(body)
    if digest != index["digest"]:
        raise BundleError(f"{INDEX_FILE}: digest {index['digest']} does not match its content ({digest})")
    return digest


def _check_signature(sig: dict[str, Any], digest: str, index: dict[str, Any]) -> tuple[str, str]:
    if set(sig) != {"algorithm", "key_id", "public_key", "signature"} or sig["algorithm"] != ALGORITHM:
        raise BundleError(f"{SIGNATURE_FILE}: expected algorithm ed25519, key_id, public_key, signature")
    public, signature = sig["public_key"], sig["signature"]
    if not (isinstance(public, str) and len(public) == 64 and _HEX.match(public)):
        raise BundleError(f"{SIGNATURE_FILE}: public_key must be 64 lowercase hex digits")
    if not (isinstance(signature, str) and len(signature) == 128 and _HEX.match(signature)):
        raise BundleError(f"{SIGNATURE_FILE}: signature must be 128 lowercase hex digits")
    key_id = key_id_of(public)
    if sig["key_id"] != key_id or index["runner"]["key_id"] != key_id:
        raise BundleError(
            f"{SIGNATURE_FILE}: key id does not match the public key or the runner named in {INDEX_FILE}"
        )
    if not verify_signature(public, digest.encode("ascii"), bytes.fromhex(signature)):
        raise BundleError(f"{SIGNATURE_FILE}: the signature does not verify for bundle digest {digest}")
    return key_id, public


def _check_files(files: BundleFiles, listed: dict[str, Any]) -> None:
    present = set(files) - {INDEX_FILE, SIGNATURE_FILE}
    missing, extra = sorted(set(listed) - present), sorted(present - set(listed))
    if missing:
        raise BundleError(f"files listed in {INDEX_FILE} are missing: {', '.join(missing)}")
    if extra:
        raise BundleError(f"files not covered by the signature: {', '.join(extra)}")
    for name, expected in sorted(listed.items()):
        actual = bytes_digest(files[name])
        if actual != expected:
            raise BundleError(f"{name}: content digest {actual} is not {expected} ({INDEX_FILE})")


def _read_manifests(data: bytes) -> list[Manifest]:
    manifests = []
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            manifest = parse_manifest_text(line, f"{MANIFESTS_FILE} line {number}")
        except ManifestError as exc:
            raise BundleError(str(exc)) from None
        check_kind(manifest, f"{MANIFESTS_FILE} line {number}")
        manifests.append(manifest)
    if not manifests:
        raise BundleError(f"{MANIFESTS_FILE}: no manifests")
    return manifests


# --- bundles shipped with the package and publication ----------------------------------------------


def bundled_bundles() -> list[Path]:
    """The signed bundles shipped in ``kernelindex/data/verified/`` (one directory each)."""
    folder = Path(str(resources.files("kernelindex").joinpath("data", "verified")))
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if (p / INDEX_FILE).is_file())


def publish_verified(catalog: Any, bundle: VerifiedBundle, *, allow_untrusted: bool = False,
                     actor: str = "local operator", locator: str, curated: bool = True) -> PublishReport:
    """Publish a verified bundle's manifests in one transaction, with an attestation per run (bundle
    digest, key id, signature) recording that signature and digests were checked.

    A bundle signed by a key that is not a trusted runner in the catalog is refused (UntrustedRunnerError)
    unless ``allow_untrusted`` (``--as-reported``): then its runs are stored without attestations, so
    evidence policy never derives ``verified`` for them. Publications are serialised by the catalog's
    publication lock: a concurrent one waits, then finds the objects they share present. ``curated=False``
    (an upload over the write path): an implementation line the bundle introduces has its install line held
    for a curator (``catalog/curation.py``); the catalog's operator publishing a bundle directory curates it."""
    runners = trusted_runner_keys(catalog)
    trusted = bundle.key_id in runners
    if not trusted and not allow_untrusted:
        raise UntrustedRunnerError(f"{locator}: signed by runner {bundle.runner_name!r} ({bundle.key_id}), which is "
                                   "not a trusted runner in this catalog; register it with `ki runner trust` or "
                                   "publish with --as-reported")
    check_runner_names(bundle.runner_name, bundle.runs(), bundle.key_id, runners)
    attestations = {}
    if trusted:
        attestations = {digest_of(run): Attestation(bundle.digest, bundle.key_id, bundle.signature)
                        for run in bundle.runs()}
    return publish_manifests(catalog, bundle.manifests, actor=actor, source=RUNNER_SOURCE,
                             snapshot_digest=bundle.digest, locator=locator, attestations=attestations,
                             kinds=MEASUREMENT_KINDS, redeclare=False, hold_new_lines=not curated)


def publish_bundle(catalog: Any, path: Path, *, allow_untrusted: bool = False,
                   actor: str = "local operator") -> PublishReport:
    """Verify the bundle directory ``path`` and publish it (``ki publish``, start-up's shipped bundles)."""
    return publish_verified(catalog, verify_directory(path), allow_untrusted=allow_untrusted, actor=actor,
                            locator=str(path))
