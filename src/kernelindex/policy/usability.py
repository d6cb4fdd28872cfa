"""usability-v1: public source ∧ pinned install ∧ concluded license."""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelindex.policy.reasons import Reason

POLICY = "usability-v1"


@dataclass(frozen=True)
class Usability:
    usable: bool
    install_command: str | None
    reasons: tuple[Reason, ...] = field(default_factory=tuple)
    license: str | None = None
    license_from: str | None = None
    source_url: str | None = None
    # In words, for a card title or a trust cell: "usable today", "version not recorded" (the only thing
    # missing is a version the source did not record: torch.compile's and nn.Embedding's rows), or
    # "not usable as-is" (no source, nothing to install, no license).
    availability: str = "usable today"

    def to_json(self) -> dict[str, object]:
        return {
            "policy": POLICY,
            "usable": self.usable,
            "install_command": self.install_command,
            "reasons": [r.to_json() for r in self.reasons],
            "license": self.license,
            "license_concluded_from": self.license_from,
            "source_url": self.source_url,
            "availability": self.availability,
        }


def install_command(install: dict) -> str | None:
    """The pinned command, or None when something is not pinned."""
    method = install.get("method")
    packages = install.get("packages", [])
    if method == "pip" and packages and all(p.get("version") for p in packages):
        pins = " ".join(f'"{p["name"]}=={p["version"]}"' for p in packages)
        return f"pip install {pins}"
    if method == "git" and install.get("git_url") and install.get("git_commit"):
        return f'pip install "git+{install["git_url"]}@{install["git_commit"]}"'
    return None


def _missing_install_sentence(install: dict) -> str:
    if install.get("why_missing"):
        return f"No pinned install: {install['why_missing']}"
    if install.get("method") in (None, "none"):
        return "No pinned install: no package or commit to install from."
    unpinned = [p["name"] for p in install.get("packages", []) if not p.get("version")]
    return f"No pinned install: no version for {', '.join(unpinned)}." if unpinned else "No pinned install."


def usability(implementation_spec: dict, project_spec: dict) -> Usability:
    """Decide from the ImplementationRevision spec and its SoftwareProject spec (JSON form)."""
    reasons: list[Reason] = []
    source_url = implementation_spec.get("source_url") or project_spec.get("repository")
    if not source_url:
        reasons.append(Reason("NO_PUBLIC_SOURCE", "No public source: no repository or package release is known."))
    install = implementation_spec.get("install", {})
    command = install_command(install)
    if command is None:
        reasons.append(Reason("NO_PINNED_INSTALL", _missing_install_sentence(install)))
    license_ = implementation_spec.get("license", {})
    concluded = license_.get("concluded")
    if not concluded:
        declared = license_.get("declared")
        detail = f" (declared {declared}, not confirmed from a trusted place)" if declared else ""
        reasons.append(Reason("LICENSE_UNKNOWN", f"License unknown{detail}."))
    unpinned = install.get("method") == "pip" and any(not p.get("version") for p in install.get("packages", []))
    only_version = unpinned and [r.code for r in reasons] == ["NO_PINNED_INSTALL"]
    return Usability(
        availability="usable today" if not reasons else "version not recorded" if only_version else "not usable as-is",
        usable=not reasons,
        install_command=command,
        reasons=tuple(reasons),
        license=concluded or license_.get("declared"),
        license_from=license_.get("concluded_from"),
        source_url=source_url,
    )


AWAITING_REVIEW = "install line awaiting review"


def held_for_review(decided: Usability, line: str) -> Usability:
    """An implementation line a runner's bundle proposed, before a curator approved it: its runs are shown, its
    install line is not (a bundle never defines what users install), and it is not usable until approved."""
    reason = Reason("INSTALL_AWAITING_REVIEW", f"Install line awaiting review: a runner's bundle proposed {line}, and "
                    f"a curator has not approved its install recipe yet (ki approve {line}).")
    return Usability(usable=False, install_command=None, reasons=(*decided.reasons, reason), license=decided.license,
                     license_from=decided.license_from, source_url=decided.source_url, availability=AWAITING_REVIEW)
