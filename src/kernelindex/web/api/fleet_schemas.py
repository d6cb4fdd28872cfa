"""Bodies of the write routes (strict: unknown fields are refused)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelindex.views.params import SLUG_PATTERN

SLUG = SLUG_PATTERN
DIGEST = r"^sha256:[0-9a-f]{64}$"
TOKEN = r"^[0-9a-f]{32}$"
NONCE = r"^[0-9a-f]{32}$"
SIGNATURE = r"^[0-9a-f]{128}$"
INSTANT = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MeasurementRequestIn(Strict):
    operation: str = Field(pattern=SLUG, max_length=120, description="Operation slug, e.g. rope.")
    axes: dict[str, int] = Field(max_length=32, description="A size for every variable axis of the operation.")
    dtypes: dict[str, str] = Field(default_factory=dict, max_length=8,
                                   description="A dtype for every dtype variable, e.g. {\"T\": \"bf16\"}.")
    gpu: str = Field(pattern=SLUG, max_length=60, description="GPU slug from /api/v1/gpus, e.g. h100.")
    implementations: list[str] | None = Field(None, max_length=16, description="Runner adapters to measure "
                                              "(baseline, liger, torch-compile); default: every one the runner has.")
    regions: list[Literal["forward", "backward", "forward+backward"]] | None = Field(None, max_length=3)
    replicas: int = Field(1, ge=1, le=3, description="How many distinct runner identities should measure it.")


class ClaimIn(Strict):
    """A claim signed by the runner's private key (``kernelindex.trust.claims``): the signature covers the
    canonical JSON of {purpose "kernelindex-claim/v1", gpu, runner_key_id, operations ([] when absent),
    at, nonce}."""

    gpu: str = Field(pattern=SLUG, max_length=60, description="The runner's GPU product, as a GPU slug.")
    runner_key_id: str = Field(pattern=DIGEST, description="Key id of the runner key that signs the claim and "
                               "the bundle; the runner's name is the one this key is trusted under.")
    operations: list[str] | None = Field(None, max_length=64, description="Only requests for these operations.")
    at: str = Field(pattern=INSTANT, description="When the claim was signed (UTC); within 5 minutes of the "
                    "server's clock.")
    nonce: str = Field(pattern=NONCE, description="32 random hex digits, never used before by this key.")
    signature: str = Field(pattern=SIGNATURE, description="Ed25519 signature of the claim by the runner key, hex.")


class HeartbeatIn(Strict):
    token: str = Field(pattern=TOKEN, description="The claim token from the claim answer.")


class CompleteIn(Strict):
    token: str = Field(pattern=TOKEN)
    bundle: str | None = Field(None, pattern=DIGEST, description="Digest of the uploaded bundle that fulfils it.")
    failure: str | None = Field(None, min_length=1, max_length=4000, description="Why it could not be measured.")
