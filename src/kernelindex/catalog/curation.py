"""What a measurement may not change: the projects and implementations the catalog already holds.

A runner measures; it never defines or redefines what an implementation is or how it installs. A
bundle carries the ImplementationRevision and SoftwareProject manifests its runs reference, because a
bundle is self-contained and signed; publishing it may add a revision the catalog lacks, but never
one that redeclares a catalogued implementation (issue 51: a bundle that declared ``liger-kernel-rope``
with ``pip install "liger-kernel-fast==0.8.5"`` made every page say so). Checked inside the publication
transaction, against what the catalog holds (registry imports, curated writes, earlier bundles):

- a SoftwareProject whose name is catalogued under another digest is refused: a bundle may reference
  a project by digest, not restate it;
- an ImplementationRevision of a catalogued line (its ``metadata.name``, e.g. ``liger-kernel-rope``):
  - must belong to the line's project;
  - when the line holds a revision of the same identity (operation, project, version, commit), must
    declare the same install recipe, callable, license, role and source (a byte-identical revision has
    the same digest and is not checked at all);
  - must install the same way (method, git URL), keep every pip package all of the line's revisions
    install, and add only packages of the line itself, of its catalogued project, or the runtime a
    measured call pins (``RUNTIME_PACKAGES``): a new version of Liger may pin ``torch`` and ``triton``
    beside ``liger-kernel``; it may not swap ``liger-kernel`` for another package.

A line whose catalogued revisions record no install recipe (a source that mirrors a file: FlashInfer-Bench's rows of
FlashInfer's wrappers) may get a first one from a measurement: pip, of packages its catalogued project declares
(plus the runtime). That is a proposal too.
A revision of a line the catalog has never seen is a new proposal. It publishes, and the runs are shown, but
when it arrived in a runner's uploaded bundle its line is *held*: no page, answer or download shows its install
line ("install line awaiting review") until a curator approves the line (``ki approve LINE``;
``catalog/lifecycle.approve_install``). A bundle directory published by the catalog's own operator (``ki publish``,
the shipped bundles at start-up) is curated by that act. The acts are rows of ``install_reviews``; a line's latest
act decides (docs/reliability.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select

from kernelindex.catalog.models import InstallReviewRow, ObjectRow

# The packages a measured Python call runs on, whichever implementation it measures: the runner pins
# them with the implementation's own package, so that the install line reproduces the measurement.
RUNTIME_PACKAGES = frozenset({"torch", "triton"})
# What an implementation *is*, for one identity: a bundle may not restate any of these differently.
_DEFINING = ("install", "callable", "license", "role", "source_url")
_CHUNK = 500


class RedeclarationError(ValueError):
    """The publication redeclares a catalogued project or implementation; nothing was written."""


Item = tuple[str, str, dict[str, Any]]  # kind, digest, manifest data


HELD, APPROVED = "held", "approved"
NewLine = tuple[str, str]  # a line the catalog has never seen: its name and its operation's digest


def check_no_redeclaration(conn: Connection, fresh: Sequence[Item]) -> list[NewLine]:
    """Raise RedeclarationError naming the first object of ``fresh`` (objects the catalog lacks) that
    redeclares a catalogued project or implementation line; else the new lines ``fresh`` proposes."""
    projects = [(d, data) for kind, d, data in fresh if kind == "SoftwareProject"]
    revisions = [(d, data) for kind, d, data in fresh if kind == "ImplementationRevision"]
    if projects:
        _check_projects(conn, projects)
    return _check_revisions(conn, revisions) if revisions else []


def hold_install_lines(conn: Connection, lines: Sequence[NewLine], bundle: str | None, now: datetime) -> None:
    """Record that these new lines' install recipes await a curator (a runner's bundle proposed them)."""
    if lines:
        conn.execute(insert(InstallReviewRow), [
            {"line": line, "operation": operation, "act": HELD, "actor": "runner bundle", "at": now,
             "reason": f"proposed by bundle {bundle}" if bundle else "proposed by a runner's bundle"}
            for line, operation in sorted(set(lines))])


def latest_acts(conn: Connection) -> dict[str, tuple[str, str]]:
    """Each reviewed line's latest act and its operation's digest."""
    rows = conn.execute(select(InstallReviewRow.line, InstallReviewRow.act, InstallReviewRow.operation)
                        .order_by(InstallReviewRow.id))
    return {line: (act, operation) for line, act, operation in rows}


def held_lines(conn: Connection) -> frozenset[str]:
    """The lines whose install recipe awaits a curator."""
    return frozenset(line for line, (act, _) in latest_acts(conn).items() if act == HELD)


def _stored(conn: Connection, kind: str, names: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
    ordered = sorted(set(names))
    found: list[tuple[str, dict[str, Any]]] = []
    for start in range(0, len(ordered), _CHUNK):
        rows = conn.execute(select(ObjectRow.digest, ObjectRow.body).where(
            ObjectRow.kind == kind, ObjectRow.name.in_(ordered[start:start + _CHUNK])))
        found.extend((digest, json.loads(body)) for digest, body in rows)
    return found


def _check_projects(conn: Connection, projects: list[tuple[str, dict[str, Any]]]) -> None:
    wanted = {data["spec"]["name"] for _, data in projects}
    # a project's metadata.name is its slug, in practice its spec.name; read both ways to be sure
    stored = _stored(conn, "SoftwareProject", wanted | {data.get("metadata", {}).get("name") or "" for _, data in
                                                         projects})
    by_name = {data["spec"]["name"]: digest for digest, data in stored}
    for digest, data in projects:
        name = data["spec"]["name"]
        if (held := by_name.get(name)) is not None and held != digest:
            raise RedeclarationError(
                f"SoftwareProject {name!r} ({digest}) redeclares the catalogued project {name!r} ({held}); a "
                "bundle references a project by its digest and never restates it: carry the catalogued "
                "manifest unchanged")


def _check_revisions(conn: Connection, revisions: list[tuple[str, dict[str, Any]]]) -> list[NewLine]:
    lines: dict[str, list[dict[str, Any]]] = {}
    named = [(d, data) for d, data in revisions if data.get("metadata", {}).get("name")]
    for _, data in _stored(conn, "ImplementationRevision", (data["metadata"]["name"] for _, data in named)):
        lines.setdefault(data["metadata"]["name"], []).append(data["spec"])
    project_packages = _project_packages(conn, {s["project"] for specs in lines.values() for s in specs})
    new: list[NewLine] = []
    for digest, data in named:
        line = data["metadata"]["name"]
        if line not in lines or _check_revision(line, digest, data["spec"], lines[line], project_packages):
            new.append((line, data["spec"]["operation"]))
    return new


def _project_packages(conn: Connection, digests: set[str]) -> dict[str, set[str]]:
    ordered = sorted(digests)
    found: dict[str, set[str]] = {}
    for start in range(0, len(ordered), _CHUNK):
        rows = conn.execute(select(ObjectRow.digest, ObjectRow.body).where(
            ObjectRow.digest.in_(ordered[start:start + _CHUNK])))
        found.update((digest, set(json.loads(body)["spec"].get("packages") or ())) for digest, body in rows)
    return found


def _identity(spec: dict[str, Any]) -> tuple[Any, ...]:
    return spec["operation"], spec["project"], spec.get("version"), spec.get("commit")


def _packages(spec: dict[str, Any]) -> set[str]:
    return {p["name"] for p in spec["install"].get("packages") or ()}


def _first_recipe(install: dict[str, Any], ways: set[tuple[str, str | None]], curated: set[str]) -> bool:
    """A line whose catalogued revisions record no install recipe (a source that mirrors a file, e.g.
    FlashInfer-Bench's rows of FlashInfer's wrappers) takes a pip revision whose every package is one its
    curated project declares (beside the runtime every run names, torch): the package names come from the registry,
    never from the bundle."""
    names = {p["name"] for p in install.get("packages") or ()}
    return (ways == {("none", None)} and install["method"] == "pip" and bool(names & curated)
            and names <= curated | RUNTIME_PACKAGES)


def _check_revision(line: str, digest: str, spec: dict[str, Any], stored: list[dict[str, Any]],
                    project_packages: dict[str, set[str]]) -> bool:
    """Raise RedeclarationError where the revision restates its line differently; True where it gives a line that
    recorded no install recipe its first one (a proposal, held like a new line's when a runner uploaded it)."""
    said = f"ImplementationRevision {line!r} ({digest})"
    projects = {s["project"] for s in stored}
    if spec["project"] not in projects:
        raise RedeclarationError(f"{said} names project {spec['project']}, but the catalogued line {line!r} "
                                 f"belongs to {', '.join(sorted(projects))}; a bundle cannot move an implementation "
                                 "to another project")
    for held in (s for s in stored if _identity(s) == _identity(spec)):
        if changed := [f for f in _DEFINING if held.get(f) != spec.get(f)]:
            raise RedeclarationError(
                f"{said} redeclares the catalogued revision of {line!r} (version {spec.get('version')!r}) with "
                f"another {' and '.join(changed)}; a runner measures an implementation, it never redefines it: "
                "reference the catalogued revision unchanged")
    install = spec["install"]
    ways = {(s["install"]["method"], s["install"].get("git_url")) for s in stored}
    first = _first_recipe(install, ways, project_packages.get(spec["project"], set()))
    if (install["method"], install.get("git_url")) not in ways and not first:
        raise RedeclarationError(f"{said} installs by {install['method']} {install.get('git_url') or ''}".rstrip()
                                 + f"; the catalogued line {line!r} installs by "
                                 + ", ".join(f"{m} {u or ''}".rstrip() for m, u in sorted(ways, key=str)))
    sets = [_packages(s) for s in stored]
    core = set.intersection(*sets)
    allowed = set.union(*sets) | project_packages.get(spec["project"], set()) | RUNTIME_PACKAGES
    mine = _packages(spec)
    if missing := sorted(core - mine):
        raise RedeclarationError(f"{said} does not install {', '.join(missing)}, which every catalogued revision of "
                                 f"{line!r} installs; a bundle cannot change what an implementation installs")
    if foreign := sorted(mine - allowed):
        raise RedeclarationError(f"{said} installs {', '.join(foreign)}, which neither the catalogued line {line!r} "
                                 "nor its project names; a bundle cannot change what an implementation installs")
    return first
