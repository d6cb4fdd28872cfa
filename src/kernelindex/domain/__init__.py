"""Pure domain: manifests, canonical JSON, digests, units and dtypes. No I/O."""
