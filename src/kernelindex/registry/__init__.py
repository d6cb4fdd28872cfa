"""Data shipped with the package, read-only at run time and loaded once (each loader is cached):
operation specs, the GPU datasheet table, the source policy and source mappings, projects, floor
rules, runner coverage. One module per file it reads; callers write ``registry.gpus()``,
``registry.load_operation(slug)`` … and never need to know which module holds what.
"""

from kernelindex.domain.gpus import GpuSpec
from kernelindex.registry.architectures import model_definitions, model_slug
from kernelindex.registry.constructors import ModuleConstructor, module_constructors
from kernelindex.registry.documents import RegistryError
from kernelindex.registry.floor_rules import DECLARED_FLOPS, FlopRule, floor_flops, floor_spec, flop_rule
from kernelindex.registry.gpu_table import (
    device_product,
    gpu_aliases,
    gpu_for_product,
    gpu_may_be,
    gpu_reading,
    gpu_slug,
    gpus,
    gpus_answering,
    priority_gpus,
)
from kernelindex.registry.measured_ceilings import MeasuredCeilings, measured_ceilings
from kernelindex.registry.operation_specs import curated_operation, load_operation, operation_digests, operations
from kernelindex.registry.projects import project_licenses, project_manifest, projects, source_mapping
from kernelindex.registry.relations import relation_rules
from kernelindex.registry.runner_coverage import (
    forward_computes_gradient,
    kernelbench_pending,
    kernelbench_protocol_note,
    protocol_notes,
    runner_pending,
    runner_unavailable,
    unbuilt_implementations,
    why_not_verified,
)
from kernelindex.registry.source_policies import (
    DECISIONS,
    SourcePolicy,
    policy_document,
    refused_sources,
    registered_sources,
    source_policies,
    source_policy,
)

__all__ = [
    "DECISIONS", "DECLARED_FLOPS", "FlopRule", "GpuSpec", "MeasuredCeilings", "measured_ceilings",
    "ModuleConstructor", "RegistryError", "SourcePolicy",
    "curated_operation", "device_product", "floor_flops", "floor_spec", "flop_rule", "forward_computes_gradient",
    "gpu_aliases", "gpu_for_product", "gpu_may_be",
    "gpu_reading", "gpu_slug", "gpus", "gpus_answering", "kernelbench_pending", "kernelbench_protocol_note",
    "load_operation", "model_definitions", "model_slug",
    "module_constructors", "operation_digests",
    "operations", "priority_gpus", "project_licenses", "protocol_notes", "project_manifest", "projects",
    "policy_document", "refused_sources", "registered_sources",
    "relation_rules", "runner_pending", "runner_unavailable", "source_mapping", "source_policies", "source_policy",
    "unbuilt_implementations",
    "why_not_verified",
]
