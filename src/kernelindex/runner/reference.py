"""The float64 references by the names the operation specs give (``reference:`` in each spec, e.g.
``kernelindex.runner.reference:rope``). Each is defined with its operation in
``kernelindex.runner.ops``; this module only maps the spec's name to it."""

from __future__ import annotations

from kernelindex.runner.ops.embedding import reference as embedding
from kernelindex.runner.ops.rope import reference as rope
from kernelindex.runner.ops.rope import rotate_half

__all__ = ["embedding", "rope", "rotate_half"]
