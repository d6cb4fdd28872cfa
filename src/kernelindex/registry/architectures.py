"""Model definitions shipped as data (``registry/architectures/*.yaml``, one model per file): each checked
at load by ``domain.architectures.ModelDefinition``. A wrong or missing number is a RegistryError naming
the file and the field (docs/models.md)."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import ValidationError

from kernelindex.domain.architectures import ModelDefinition
from kernelindex.registry.documents import ROOT, RegistryError, parse_yaml

FOLDER = "architectures"


def parse_model(name: str, text: str) -> ModelDefinition:
    """One model file's definition; ``name`` is the file's name, for the error."""
    try:
        document: Any = parse_yaml(text)
        return ModelDefinition.model_validate(document)
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(document)'}: {e['msg']}" for e in exc.errors())
        raise RegistryError(f"registry/{FOLDER}/{name}: {fields}") from exc
    except Exception as exc:  # noqa: BLE001 - a YAML error, said with the file's name
        raise RegistryError(f"registry/{FOLDER}/{name}: {exc}") from exc


@cache
def model_definitions() -> dict[str, ModelDefinition]:
    """Every shipped model by slug (the file's name must be its slug)."""
    models: dict[str, ModelDefinition] = {}
    for entry in sorted(ROOT.joinpath(FOLDER).iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        model = parse_model(entry.name, entry.read_text(encoding="utf-8"))
        if entry.name != f"{model.slug}.yaml":
            raise RegistryError(f"registry/{FOLDER}/{entry.name}: slug {model.slug!r} must match the file's name")
        models[model.slug] = model
    return models


def model_slug(name: str) -> str | None:
    """The slug a model's name or alias stands for (``Llama 3.1 8B`` → ``llama-3.1-8b``), or None."""
    wanted = " ".join(name.lower().replace("_", " ").replace("-", " ").split())
    for model in model_definitions().values():
        names = (model.slug, model.title, *model.aliases)
        if any(wanted == " ".join(n.lower().replace("-", " ").split()) for n in names):
            return model.slug
    return None
