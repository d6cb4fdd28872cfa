"""The hall between the four front doors (HTML pages, the JSON API, the CLI, MCP): one function per
question or command, each returning its answer or a :class:`~kernelindex.services.problems.Problem`.
The doors are thin adapters over these functions and never call one another's routes (docs/services.md)."""
