"""A model's architecture as its published configuration states it (issue 49): the numbers the dispatch
map (policy/dispatch.py) turns into kernel calls. ``config`` keeps the field names of the model's
Hugging Face ``config.json``; every number carries the file it came from (``source``). Strict: an unknown
field, a missing number or numbers that contradict each other are refused, naming the field."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, model_validator

Positive = Field(gt=0)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSource(_Strict):
    url: str = Field(pattern=r"^https://huggingface\.co/.+/config\.json$")
    repository: str = Field(min_length=3)


class ModelLicense(_Strict):
    name: str = Field(min_length=2)
    url: str = Field(pattern=r"^https://")


# model types whose modelling code derives the head size as hidden_size // num_attention_heads
HEAD_DIM_FROM_HIDDEN = frozenset({"llama", "qwen2", "mixtral"})


class ModelConfig(_Strict):
    """The published config.json fields the dispatch map reads, under their published names."""

    model_type: Literal["llama", "qwen2", "mixtral", "deepseek_v3", "gpt_oss"]
    hidden_size: StrictInt = Positive
    intermediate_size: StrictInt = Positive
    num_attention_heads: StrictInt = Positive
    num_key_value_heads: StrictInt = Positive
    num_hidden_layers: StrictInt = Positive
    vocab_size: StrictInt = Positive
    tie_word_embeddings: StrictBool
    head_dim: StrictInt | None = Field(default=None, gt=0)
    # mixture of experts (Mixtral, gpt-oss: num_local_experts; DeepSeek: n_routed_experts)
    num_local_experts: StrictInt | None = Field(default=None, gt=0)
    n_routed_experts: StrictInt | None = Field(default=None, gt=0)
    num_experts_per_tok: StrictInt | None = Field(default=None, gt=0)
    moe_intermediate_size: StrictInt | None = Field(default=None, gt=0)
    n_shared_experts: StrictInt | None = Field(default=None, ge=0)
    first_k_dense_replace: StrictInt | None = Field(default=None, ge=0)
    sliding_window: StrictInt | None = Field(default=None, gt=0)  # gpt-oss: every other layer
    # multi-head latent attention (DeepSeek)
    q_lora_rank: StrictInt | None = Field(default=None, gt=0)
    kv_lora_rank: StrictInt | None = Field(default=None, gt=0)
    qk_nope_head_dim: StrictInt | None = Field(default=None, gt=0)
    qk_rope_head_dim: StrictInt | None = Field(default=None, gt=0)
    v_head_dim: StrictInt | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _consistent(self) -> ModelConfig:
        problems = _problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def experts(self) -> int | None:
        return self.num_local_experts or self.n_routed_experts

    @property
    def head_size(self) -> int:
        """The attention head size: config.json's ``head_dim`` or, where the model derives it, hidden ÷ heads."""
        return self.head_dim if self.head_dim is not None else self.hidden_size // self.num_attention_heads

    @property
    def moe_layers(self) -> int:
        return 0 if self.experts is None else self.num_hidden_layers - (self.first_k_dense_replace or 0)


_MLA = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def _problems(c: ModelConfig) -> list[str]:
    """Every contradiction or missing number, each naming its config.json field."""
    problems: list[str] = []
    if c.num_attention_heads % c.num_key_value_heads:
        problems.append(f"num_attention_heads ({c.num_attention_heads}) is not a multiple of num_key_value_heads "
                        f"({c.num_key_value_heads})")
    if c.model_type in HEAD_DIM_FROM_HIDDEN:
        if c.hidden_size % c.num_attention_heads:
            problems.append(f"hidden_size ({c.hidden_size}) is not a multiple of num_attention_heads "
                            f"({c.num_attention_heads}), which {c.model_type} requires")
        elif c.head_dim is not None and c.head_dim * c.num_attention_heads != c.hidden_size:
            problems.append(f"head_dim ({c.head_dim}) × num_attention_heads ({c.num_attention_heads}) must equal "
                            f"hidden_size ({c.hidden_size}) for {c.model_type}")
    elif c.head_dim is None and not any(getattr(c, f) for f in _MLA):
        problems.append(f"head_dim is missing: {c.model_type} does not derive it from hidden_size")
    given_mla = [f for f in _MLA if getattr(c, f) is not None]
    if given_mla and len(given_mla) != len(_MLA):
        problems.append("multi-head latent attention needs all of " + ", ".join(_MLA) + "; missing: "
                        + ", ".join(f for f in _MLA if getattr(c, f) is None))
    if c.num_local_experts and c.n_routed_experts:
        problems.append("give num_local_experts or n_routed_experts, not both")
    if (c.experts is None) != (c.num_experts_per_tok is None):
        problems.append("a mixture of experts needs both its expert count (num_local_experts or n_routed_experts) "
                        "and num_experts_per_tok")
    elif c.experts is not None and c.num_experts_per_tok is not None and c.num_experts_per_tok > c.experts:
        problems.append(f"num_experts_per_tok ({c.num_experts_per_tok}) exceeds the experts ({c.experts})")
    if c.first_k_dense_replace is not None and c.first_k_dense_replace > c.num_hidden_layers:
        problems.append(f"first_k_dense_replace ({c.first_k_dense_replace}) exceeds num_hidden_layers "
                        f"({c.num_hidden_layers})")
    return problems


class ModelDefinition(_Strict):
    """One model: its slug, names, where its numbers come from, its license and its configuration."""

    slug: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,60}$")
    title: str = Field(min_length=2)
    aliases: tuple[str, ...] = ()
    popular: bool = False
    source: ModelSource
    license: ModelLicense
    config: ModelConfig

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)
