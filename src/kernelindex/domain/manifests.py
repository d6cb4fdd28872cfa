"""Manifests: ``{apiVersion: "kernelindex/v1", kind, metadata, spec}`` for every catalog object.

``spec`` is the identity body (its models live in ``domain.specs``), ``metadata`` is editorial.
One class per kind, so a type checker sees every field; parsing names the document and field.
"""

from __future__ import annotations

import json
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, overload

import orjson
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from kernelindex.domain.canonical import (
    MAX_DOCUMENT_BYTES,
    ManifestSyntaxError,
    check_json_value,
    check_size,
    sha256_digest,
    strict_json_loads,
)
from kernelindex.domain.specs import (
    API_VERSION,
    BenchmarkProtocolBody,
    BenchmarkRunBody,
    ExecutionEnvironmentBody,
    ImplementationRevisionBody,
    Metadata,
    OperationSpecBody,
    RetractionBody,
    SoftwareProjectBody,
    SourceBody,
    Strict,
    SupersessionBody,
    TrustedRunnerBody,
    WorkloadCaseBody,
    WorkloadSuiteBody,
)

# --- Manifests: one class per kind, with its spec body --------------------------------------------


class Manifest(Strict):
    """What every manifest has; each kind below narrows ``kind`` and ``spec``."""

    apiVersion: Literal["kernelindex/v1"]
    kind: str
    metadata: Metadata = Field(default_factory=Metadata)
    spec: Strict
    # Manifests are frozen, so their JSON forms and digest are computed once and kept: see _caches.


class OperationSpec(Manifest):
    kind: Literal["OperationSpec"]
    spec: OperationSpecBody

    @property
    def slug(self) -> str:
        """The operation's slug (``metadata.name``): pages, workloads and the runner name it by this."""
        if self.metadata.name is None:
            raise ManifestError("OperationSpec", ["metadata.name: an operation needs a slug"])
        return self.metadata.name

class WorkloadCase(Manifest):
    kind: Literal["WorkloadCase"]
    spec: WorkloadCaseBody

class WorkloadSuite(Manifest):
    kind: Literal["WorkloadSuite"]
    spec: WorkloadSuiteBody

class SoftwareProject(Manifest):
    kind: Literal["SoftwareProject"]
    spec: SoftwareProjectBody

class ImplementationRevision(Manifest):
    kind: Literal["ImplementationRevision"]
    spec: ImplementationRevisionBody

class BenchmarkProtocol(Manifest):
    kind: Literal["BenchmarkProtocol"]
    spec: BenchmarkProtocolBody

class ExecutionEnvironment(Manifest):
    kind: Literal["ExecutionEnvironment"]
    spec: ExecutionEnvironmentBody

class BenchmarkRun(Manifest):
    kind: Literal["BenchmarkRun"]
    spec: BenchmarkRunBody

class Retraction(Manifest):
    kind: Literal["Retraction"]
    spec: RetractionBody

class Supersession(Manifest):
    kind: Literal["Supersession"]
    spec: SupersessionBody

class TrustedRunner(Manifest):
    kind: Literal["TrustedRunner"]
    spec: TrustedRunnerBody

class Source(Manifest):
    kind: Literal["Source"]
    spec: SourceBody


AnyManifest = Annotated[
    OperationSpec | WorkloadCase | WorkloadSuite | SoftwareProject | ImplementationRevision | BenchmarkProtocol
    | ExecutionEnvironment | BenchmarkRun | Retraction | Supersession | TrustedRunner | Source,
    Field(discriminator="kind"),
]
MANIFEST_MODELS: dict[str, type[Manifest]] = {
    model.__name__: model
    for model in (OperationSpec, WorkloadCase, WorkloadSuite, SoftwareProject, ImplementationRevision,
                  BenchmarkProtocol, ExecutionEnvironment, BenchmarkRun, Retraction, Supersession, TrustedRunner,
                  Source)
}
KINDS = tuple(MANIFEST_MODELS)
_ANY: TypeAdapter[Manifest] = TypeAdapter(AnyManifest)


MAX_PROBLEMS = 20  # problems listed per document; the rest are counted


class ManifestError(ValueError):
    """A manifest that cannot be accepted; the message names the document and the field."""

    def __init__(self, document: str, problems: list[str]):
        self.document = document
        self.problems = problems[:MAX_PROBLEMS]
        self.more = max(len(problems) - MAX_PROBLEMS, 0)
        more = f"; and {self.more:,} more" if self.more else ""
        super().__init__(f"{document}: " + "; ".join(self.problems) + more)


def _field_path(loc: tuple[Any, ...]) -> str:
    # Drop the discriminator tag pydantic inserts for tagged unions.
    parts = [str(p) for p in loc if str(p) not in MANIFEST_MODELS]
    return ".".join(parts) or "(document)"


def parse_manifest(data: Any, document: str = "<manifest>") -> Manifest:
    """Validate a decoded manifest (dict). Raises ManifestError naming document and fields."""
    if not isinstance(data, dict):
        raise ManifestError(document, ["a manifest is a JSON object"])
    if data.get("apiVersion") != API_VERSION:
        raise ManifestError(document, [f"apiVersion: expected {API_VERSION!r}, got {data.get('apiVersion')!r}"])
    if data.get("kind") not in MANIFEST_MODELS:
        raise ManifestError(document, [f"kind: {data.get('kind')!r} is not one of {', '.join(KINDS)}"])
    try:
        plain = check_json_value(data)
    except ManifestSyntaxError as exc:
        raise ManifestError(document, [str(exc)]) from None
    try:
        return _validate(data, plain)
    except ValidationError as exc:
        problems = [f"{_field_path(err['loc'])}: {err['msg']}" for err in exc.errors()[:MAX_PROBLEMS]]
        raise ManifestError(document, problems + [""] * (exc.error_count() - len(problems))) from None


def _validate(data: dict[str, Any], plain: bool) -> Manifest:
    # JSON-mode validation: strings may become datetimes, but no other coercion happens. Data of JSON's
    # own types (check_json_value) is written by orjson, several times faster than json and the same
    # JSON; anything else (tuples, subclasses, NaN, keys that are not strings, text orjson refuses)
    # by json.dumps, which refuses or converts it as it always did.
    text: bytes | str | None = None
    if plain:
        with suppress(TypeError):  # orjson.JSONEncodeError: text holding lone surrogates
            text = orjson.dumps(data)
    return _ANY.validate_json(json.dumps(data, allow_nan=False) if text is None else text)


def parse_manifest_text(text: str | bytes, document: str = "<manifest>") -> Manifest:
    try:
        data = strict_json_loads(text)
    except ManifestSyntaxError as exc:
        raise ManifestError(document, [str(exc)]) from None
    except json.JSONDecodeError as exc:
        raise ManifestError(document, [f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"]) from None
    return parse_manifest(data, document)


def load_manifest_file(path: Path) -> Manifest:
    """Read and validate one manifest file; a file over MAX_DOCUMENT_BYTES is refused unread."""
    try:
        check_size(path.stat().st_size, "the file")
        with path.open("rb") as handle:
            data = handle.read(MAX_DOCUMENT_BYTES + 1)
        return parse_manifest_text(data, str(path))
    except ManifestSyntaxError as exc:
        raise ManifestError(str(path), [str(exc)]) from None


def manifest_json(manifest: Manifest) -> dict[str, Any]:
    """The manifest as plain JSON data, normalized; absent fields stay absent. Treat as read-only."""
    cache = _caches(manifest)
    found: dict[str, Any] | None = cache.get("json")
    if found is None:
        found = cache["json"] = manifest.model_dump(mode="json", exclude_none=True, by_alias=True)
    return found


def _caches(manifest: Manifest) -> dict[str, Any]:
    # A manifest's computed forms (its JSON, stored JSON and digest) live in the dict pydantic keeps for
    # private attributes, created on first use: declared private attributes cost every validated
    # manifest their initialisation (7 us of 25 for a run, ~170,000 manifests in a full import), and
    # reading one goes through pydantic's __getattr__ (an import reads a shared object's digest per row).
    # Kept on the manifest only: nested models carrying caches would cost the read model's objects too.
    found: dict[str, Any] | None = manifest.__pydantic_private__
    if found is None:
        found = {}
        object.__setattr__(manifest, "__pydantic_private__", found)  # frozen: pydantic's own setattr refuses
    return found


def stored_json(manifest: Manifest) -> dict[str, Any]:
    """The manifest's JSON as the catalog stores it: ``manifest_json`` with the keys of every object
    sorted, so a surface that shows a stored spec emits it byte for byte. Treat as read-only."""
    cache = _caches(manifest)
    found: dict[str, Any] | None = cache.get("stored")
    if found is None:
        found = cache["stored"] = _keys_sorted(manifest_json(manifest))
    return found


def stored_form(model: Strict) -> dict[str, Any]:
    """A spec body (or any part of a manifest) as the catalog stores it: keys sorted, no None."""
    return _keys_sorted(model.model_dump(mode="json", exclude_none=True, by_alias=True))


def _keys_sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _keys_sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_keys_sorted(v) for v in value]
    return value


def identity_body(manifest: Manifest) -> dict[str, Any]:
    data = manifest_json(manifest)
    return {"apiVersion": data["apiVersion"], "kind": data["kind"], "spec": data["spec"]}


def digest_of(manifest: Manifest) -> str:
    cache = _caches(manifest)
    found: str | None = cache.get("digest")
    if found is None:
        found = cache["digest"] = sha256_digest(identity_body(manifest))
    return found


M = TypeVar("M", bound=Manifest)


def as_kind(manifest: Manifest, model: type[M]) -> M:
    """``manifest`` as the kind ``model`` (a ManifestError when it is another kind)."""
    if not isinstance(manifest, model):
        raise ManifestError(manifest.metadata.name or "<manifest>",
                            [f"kind: expected {model.__name__}, got {manifest.kind}"])
    return manifest


SpecIn = dict[str, Any] | Strict
MetadataIn = dict[str, Any] | None


# ``build`` returns the class of the kind it is given, so callers see the spec's fields.
@overload
def build(kind: Literal["OperationSpec"], spec: SpecIn, metadata: MetadataIn = None) -> OperationSpec: ...
@overload
def build(kind: Literal["WorkloadCase"], spec: SpecIn, metadata: MetadataIn = None) -> WorkloadCase: ...
@overload
def build(kind: Literal["WorkloadSuite"], spec: SpecIn, metadata: MetadataIn = None) -> WorkloadSuite: ...
@overload
def build(kind: Literal["SoftwareProject"], spec: SpecIn, metadata: MetadataIn = None) -> SoftwareProject: ...
@overload
def build(kind: Literal["ImplementationRevision"], spec: SpecIn,
          metadata: MetadataIn = None) -> ImplementationRevision: ...
@overload
def build(kind: Literal["BenchmarkProtocol"], spec: SpecIn, metadata: MetadataIn = None) -> BenchmarkProtocol: ...
@overload
def build(kind: Literal["ExecutionEnvironment"], spec: SpecIn, metadata: MetadataIn = None) -> ExecutionEnvironment: ...
@overload
def build(kind: Literal["BenchmarkRun"], spec: SpecIn, metadata: MetadataIn = None) -> BenchmarkRun: ...
@overload
def build(kind: Literal["Retraction"], spec: SpecIn, metadata: MetadataIn = None) -> Retraction: ...
@overload
def build(kind: Literal["Supersession"], spec: SpecIn, metadata: MetadataIn = None) -> Supersession: ...
@overload
def build(kind: Literal["TrustedRunner"], spec: SpecIn, metadata: MetadataIn = None) -> TrustedRunner: ...
@overload
def build(kind: Literal["Source"], spec: SpecIn, metadata: MetadataIn = None) -> Source: ...
@overload
def build(kind: str, spec: SpecIn, metadata: MetadataIn = None) -> Manifest: ...
def build(kind: str, spec: SpecIn, metadata: MetadataIn = None) -> Manifest:
    """Build a validated manifest from Python values (importers, runner)."""
    if isinstance(spec, BaseModel):
        spec = spec.model_dump(mode="json", exclude_none=True)
    return parse_manifest(
        {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata or {}, "spec": spec},
        f"{kind} {(metadata or {}).get('name', '')}".strip(),
    )


def now_utc() -> datetime:
    return datetime.now(UTC)


def build_assembled(kind: str, spec: dict[str, Any], metadata: dict[str, Any] | None = None) -> Manifest:
    """Build a manifest an importer assembled from values it has already parsed and bounded
    (integers within ±2^53, finite floats, instants as aware datetimes): the same strict models as
    ``build``, validated in Python mode, without the JSON round trip and walk that guard untrusted
    documents — an import of ~54,000 rows spent most of its time there."""
    if kind not in MANIFEST_MODELS:
        raise ManifestError("<manifest>", [f"kind: {kind!r} is not one of {', '.join(KINDS)}"])
    data = {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata or {}, "spec": spec}
    try:
        return MANIFEST_MODELS[kind].model_validate(data)
    except ValidationError as exc:
        problems = [f"{_field_path(err['loc'])}: {err['msg']}" for err in exc.errors()[:MAX_PROBLEMS]]
        raise ManifestError("<manifest>", problems) from None
