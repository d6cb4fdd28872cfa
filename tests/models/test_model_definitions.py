"""Model definitions shipped as data (issue 49): each number from the model's published config.json, with its
source and license; a wrong or missing number is a clear error at load, naming the file and the field."""

from __future__ import annotations

import pytest

from kernelindex import registry
from kernelindex.registry.architectures import parse_model
from kernelindex.registry.documents import RegistryError

LLAMA_8B = """
slug: llama-3.1-8b
title: Llama 3.1 8B
source:
  url: https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json
  repository: meta-llama/Llama-3.1-8B
license: {name: Llama 3.1 Community License, url: "https://huggingface.co/meta-llama/Llama-3.1-8B"}
config:
  model_type: llama
  hidden_size: 4096
  intermediate_size: 14336
  num_attention_heads: 32
  num_key_value_heads: 8
  num_hidden_layers: 32
  vocab_size: 128256
  tie_word_embeddings: false
"""


def test_the_shipped_models_load_with_their_sources_and_licenses() -> None:
    models = registry.model_definitions()
    assert {"llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-120b"} <= set(models)
    for model in models.values():
        assert model.source.url.startswith("https://huggingface.co/") and model.source.url.endswith("config.json")
        assert model.license.name and model.license.url.startswith("https://")
    llama = models["llama-3.1-8b"].config
    assert (llama.hidden_size, llama.num_attention_heads, llama.num_key_value_heads, llama.head_size,
            llama.intermediate_size, llama.num_hidden_layers, llama.vocab_size) == (4096, 32, 8, 128, 14336, 32, 128256)
    ds = models["deepseek-v3"].config
    assert ds.mla and ds.experts == 256 and ds.num_experts_per_tok == 8 and ds.moe_layers == 58
    assert (ds.q_lora_rank, ds.kv_lora_rank, ds.qk_rope_head_dim) == (1536, 512, 64)
    assert models["mixtral-8x7b"].config.experts == 8 and models["gpt-oss-120b"].config.head_size == 64


def test_a_model_name_finds_its_slug() -> None:
    assert registry.model_slug("Llama 3.1 8B") == "llama-3.1-8b"
    assert registry.model_slug("mixtral 8x7b") == "mixtral-8x7b"
    assert registry.model_slug("llama 9b") is None


def test_the_example_parses() -> None:
    assert parse_model("llama-3.1-8b.yaml", LLAMA_8B).config.head_size == 128


@pytest.mark.parametrize(("edit", "field"), [
    (("  num_key_value_heads: 8\n", ""), "config.num_key_value_heads"),  # missing
    (("  hidden_size: 4096", "  hidden_size: 4100"), "hidden_size (4100) is not a multiple of num_attention_heads"),
    (("  vocab_size: 128256", "  vocab_size: 128256\n  head_dim: 64"), "head_dim (64) × num_attention_heads"),
    (("  num_key_value_heads: 8", "  num_key_value_heads: 5"), "not a multiple of num_key_value_heads"),
    (("  vocab_size: 128256", "  vocab_size: 128256\n  num_local_experts: 8"), "num_experts_per_tok"),
    (("  vocab_size: 128256", "  vocab_size: 128256\n  kv_lora_rank: 512"), "missing: q_lora_rank"),
    (("  vocab_size: 128256", "  vocab_size: 128256\n  hiden_size: 1"), "config.hiden_size"),  # a typo
    (("  vocab_size: 128256", "  vocab_size: '128256'"), "config.vocab_size"),  # text is not a number
    (("blob/main/config.json", "blob/main/README.md"), "source.url"),  # a number needs its config file
])
def test_a_wrong_or_missing_number_is_an_error_naming_the_file_and_field(edit: tuple[str, str], field: str) -> None:
    text = LLAMA_8B.replace(*edit)
    assert text != LLAMA_8B
    with pytest.raises(RegistryError) as caught:
        parse_model("llama-3.1-8b.yaml", text)
    message = str(caught.value)
    assert message.startswith("registry/architectures/llama-3.1-8b.yaml: ") and field in message, message
