"""Runner keys and signed result bundles. No torch here: the catalog and the CLI import this."""
