"""The one read path: pages, API, CLI and exports all build their answers from these models."""
