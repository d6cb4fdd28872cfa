"""Ed25519 runner keys: generation, storage, identity and the keys shipped with the package.

A runner key signs result bundles. Its identity (``key_id``) is the digest of the canonical JSON
``{"ed25519": "<public key hex>"}`` (the same definition the catalog uses for TrustedRunner rows).
Private keys live outside the repository: by default in
``$XDG_CONFIG_HOME/kernelindex/runner/`` (``~/.config/kernelindex/runner/``), or in the
git-ignored ``.keys/`` folder of a checkout. Public keys travel as small JSON files (``*.pub``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from kernelindex.domain.canonical import key_id_of
from kernelindex.domain.manifests import Manifest, build

ALGORITHM = "ed25519"
PRIVATE_KEY_FILE = "runner.key"
PUBLIC_KEY_FILE = "runner.pub"
BUNDLED_TRUSTED_BY = "kernelindex package (bundled runner key)"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


class RunnerKeyError(ValueError):
    """A key file that cannot be used; the message says which file and why."""


def default_key_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kernelindex" / "runner"


def public_key_hex(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return raw.hex()


@dataclass(frozen=True)
class RunnerKey:
    """A runner's public identity: what a ``.pub`` file holds."""

    name: str
    public_key: str  # raw Ed25519 public key, 64 lowercase hex digits
    created_at: datetime

    @property
    def key_id(self) -> str:
        return key_id_of(self.public_key)

    def to_json(self) -> dict[str, str]:
        return {
            "algorithm": ALGORITHM,
            "name": self.name,
            "public_key": self.public_key,
            "key_id": self.key_id,
            "created_at": self.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }

    def trusted_runner_manifest(self, *, trusted_by: str, at: datetime | None = None) -> Manifest:
        """The TrustedRunner manifest that registers this key in a catalog."""
        when = (at or datetime.now(UTC)).astimezone(UTC)
        spec = {"name": self.name, "public_key": self.public_key, "trusted_by": trusted_by,
                "at": when.isoformat().replace("+00:00", "Z")}
        return build("TrustedRunner", spec, {"title": f"Trusted runner {self.name}"})


def verify_signature(public_key: str, message: bytes, signature: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key)).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def validate_name(name: str) -> str:
    if not _NAME.match(name):
        raise RunnerKeyError(f"runner name {name!r}: use letters, digits, '.', '_' or '-' (at most 80)")
    return name


def generate(name: str, out_dir: Path, *, overwrite: bool = False) -> tuple[Path, Path, RunnerKey]:
    """Make a new key pair in ``out_dir``: ``runner.key`` (mode 600) and ``runner.pub``."""
    validate_name(name)
    private_path, public_path = out_dir / PRIVATE_KEY_FILE, out_dir / PUBLIC_KEY_FILE
    if private_path.exists() and not overwrite:
        raise RunnerKeyError(f"{private_path} exists; refusing to overwrite a runner key (pass --force)")
    out_dir.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    os.chmod(private_path, 0o600)
    created = datetime.now(UTC).replace(microsecond=0)
    runner = RunnerKey(name=name, public_key=public_key_hex(key), created_at=created)
    write_public_key(runner, public_path)
    return private_path, public_path, runner


def write_public_key(runner: RunnerKey, path: Path) -> None:
    path.write_text(json.dumps(runner.to_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")


def load_private_key(path: Path) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except FileNotFoundError:
        raise RunnerKeyError(f"{path}: no runner key there; make one with `ki runner keygen`") from None
    except ValueError as exc:
        raise RunnerKeyError(f"{path}: not a PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise RunnerKeyError(f"{path}: not an Ed25519 key")
    return key


def load_public_key(path: Path) -> RunnerKey:
    """Read a ``.pub`` file written by ``ki runner keygen``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunnerKeyError(f"{path}: no such public key file") from None
    except json.JSONDecodeError as exc:
        raise RunnerKeyError(f"{path}: not a runner public key file ({exc.msg})") from None
    return parse_public_key(data, str(path))


def parse_public_key(data: object, where: str) -> RunnerKey:
    if not isinstance(data, dict) or data.get("algorithm") != ALGORITHM:
        raise RunnerKeyError(f"{where}: expected a JSON object with algorithm 'ed25519'")
    public, name = data.get("public_key", ""), data.get("name", "")
    if not isinstance(public, str) or not _HEX64.match(public):
        raise RunnerKeyError(f"{where}: public_key must be 64 lowercase hex digits")
    if data.get("key_id") not in (None, key_id_of(public)):
        raise RunnerKeyError(f"{where}: key_id does not match public_key")
    try:
        created = datetime.fromisoformat(str(data.get("created_at")).replace("Z", "+00:00"))
    except ValueError:
        raise RunnerKeyError(f"{where}: created_at is not an ISO 8601 instant") from None
    if created.tzinfo is None:
        raise RunnerKeyError(f"{where}: created_at has no time zone")
    return RunnerKey(name=validate_name(str(name)), public_key=public, created_at=created.astimezone(UTC))


def shipped_runner_keys() -> list[RunnerKey]:
    """Public keys of the runners whose signed bundles ship with the package (data/runners/*.pub)."""
    folder = resources.files("kernelindex").joinpath("data", "runners")
    if not folder.is_dir():
        return []
    keys = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".pub"):
            data = json.loads(entry.read_text(encoding="utf-8"))
            keys.append(parse_public_key(data, f"kernelindex/data/runners/{entry.name}"))
    return keys


def bundled_trusted_runners(trusted_by: str = BUNDLED_TRUSTED_BY) -> list[Manifest]:
    """TrustedRunner manifests for the shipped keys; ``at`` is the key's creation time, so the
    manifests (and their digests) are the same on every bootstrap."""
    return [key.trusted_runner_manifest(trusted_by=trusted_by, at=key.created_at) for key in shipped_runner_keys()]


def bundled_runner_keys(catalog: Any | None = None, *, actor: str = BUNDLED_TRUSTED_BY) -> list[RunnerKey]:
    """The shipped runner keys. Given a catalog, also registers them there as trusted runners
    (one transaction, idempotent: the same manifests every time)."""
    keys = shipped_runner_keys()
    if catalog is not None and keys:
        from kernelindex.catalog.publish import publish_manifests

        publish_manifests(catalog, bundled_trusted_runners(), actor=actor, source="kernelindex-package")
    return keys
