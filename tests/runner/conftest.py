"""Helpers for the runner tests: small workload cases and a fake device with a fake clock."""

from __future__ import annotations

import pytest
from op_cases import ROPE_ORDER, small_workload
from pydantic import BaseModel
from runner_fakes import FakeDevice


@pytest.fixture
def rope_case() -> BaseModel:
    return small_workload("rope", {"seq": 16, "hidden": 64, "q_heads": 4, "kv_heads": 2}, "fp32", ROPE_ORDER)


@pytest.fixture
def rope_bf16_case() -> BaseModel:
    return small_workload("rope", {"seq": 16, "hidden": 64, "q_heads": 4, "kv_heads": 2}, "bf16", ROPE_ORDER)


@pytest.fixture
def embedding_case() -> BaseModel:
    return small_workload("embedding", {"batch": 2, "seq": 8, "vocab": 32, "hidden": 16}, "fp32")


@pytest.fixture
def fake_device() -> FakeDevice:
    return FakeDevice()
