"""Search and resolution: the query grammar, the structured request and the resolver."""

from kernelindex.resolve.grammar import ParsedQuery, parse_query
from kernelindex.resolve.request import ResolveRequest
from kernelindex.resolve.results import Resolution

__all__ = ["ParsedQuery", "Resolution", "ResolveRequest", "parse_query"]
