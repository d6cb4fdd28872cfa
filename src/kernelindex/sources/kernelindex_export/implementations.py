"""Their projects, implementations and artifact rows → SoftwareProject and ImplementationRevision.

The export holds no source text: the implementation carries its artifact rows (digest, size,
license, where the file is held), shown on its page. No install recipe is recorded, so
usability-v1 says "not usable as-is" with that reason; a declared license is never concluded."""

from __future__ import annotations

from kernelindex.domain.manifests import Manifest, ManifestError, build, digest_of
from kernelindex.policy.library_lines import flashinfer_call_of, flashinfer_line, flashinfer_title
from kernelindex.sources.kernelindex_export.operations import RowSkipped

LANGUAGES = {"python": "python", "cuda": "cuda", "triton": "triton", "cpp": "cpp", "cute": "cute"}


def map_project(row: dict) -> Manifest:
    slug = row["slug"]
    kind = "individual" if "-user-" in slug else "library"
    spec = {"name": row["name"], "kind": kind}
    if row.get("canonicalUrl"):
        spec["repository"] = row["canonicalUrl"]
    try:
        return build("SoftwareProject", spec, {"name": slug[:120], "title": row["name"]})
    except ManifestError as exc:
        raise RowSkipped(str(exc)) from None


def _artifacts(spec: dict, by_digest: dict[str, dict], held_by: str) -> list[dict]:
    source = spec.get("source") or {}
    digest = source.get("contentDigest")
    if not digest:
        return []
    row = by_digest.get(digest, {})
    size = row.get("sizeBytes", source.get("sizeBytes"))
    artifact = {
        "kind": row.get("kind", "source"),
        "digest": digest,
        "size_bytes": int(size) if size is not None else None,
        "media_type": row.get("mediaType"),
        "license": row.get("license"),
        "url": row.get("uri"),
        "held_by": held_by,
    }
    return [{k: v for k, v in artifact.items() if v is not None}]


def library_call(row: dict) -> str | None:
    """The FlashInfer wrapper an implementation row calls, where it is FlashInfer-Bench's solution of FlashInfer's
    own API (policy/library_lines): it then belongs to the FlashInfer project and line."""
    meta = (row.get("manifest") or {}).get("metadata") or {}
    return flashinfer_call_of(row.get("title"), meta.get("description"))


def map_implementation(
    row: dict, operation: Manifest, project: Manifest, artifacts: dict[str, dict], source_title: str
) -> Manifest:
    """The implementation; a solution of FlashInfer's own API (``library_call``) on FlashInfer's line for the
    operation, named as its users know it — its source name kept as a label, its reported data unchanged."""
    manifest = row["manifest"]
    spec, meta = manifest["spec"], manifest.get("metadata", {})
    call = spec.get("callable") or {}
    support = spec.get("support") or {}
    refs = [r["url"] for r in meta.get("sourceRefs") or [] if r.get("url")]
    exact = next((u for u in refs if "/blob/" in u), None)  # a file at a pinned revision
    declared = row.get("licenseExpression") or (spec.get("licensing") or {}).get("declared")
    body = {
        "project": digest_of(project),
        "operation": digest_of(operation),
        "version": row.get("sourceRevision"),
        "callable": {
            "language": LANGUAGES.get(str(row.get("language") or call.get("language")), "other"),
            "module": call.get("path") or (spec.get("source") or {}).get("fileName") or "(entry file not recorded)",
            "symbol": call.get("symbol") or "(entry point not recorded)",
        },
        "archs": [a for a in row.get("targetArchitectures") or [] if isinstance(a, str)],
        "dtypes": [d for d in support.get("dtypes") or [] if isinstance(d, str)],
        "install": {
            "method": "none",
            "why_missing": f"the source records no install recipe: the file is mirrored by {source_title}, "
            "not released as a package.",
        },
        "license": {"declared": declared} if declared else {},
        "artifacts": _artifacts(spec, artifacts, source_title),
    }
    if exact:
        body["source_url"] = exact
    authors = ", ".join(a["name"] for a in meta.get("authors") or [] if a.get("name"))
    labels = {"authors": authors} if authors else {}
    name, title = row["slug"][:120], row.get("title") or meta.get("title") or row["slug"]
    if (wrapper := library_call(row)) and operation.metadata.name:
        labels["source_name"] = title
        name, title = flashinfer_line(wrapper, operation.metadata.name), flashinfer_title(wrapper)
    metadata = {
        "name": name,
        "title": title,
        "description": meta.get("description"),
        "labels": labels,
        "links": {f"source {i + 1}": u for i, u in enumerate(refs)},
    }
    try:
        return build("ImplementationRevision", body, {k: v for k, v in metadata.items() if v})
    except ManifestError as exc:
        raise RowSkipped(str(exc)) from None
