"""Pure policy functions: one definition each of evidence, usability, staleness, eligibility,
cohort keys, ranking, records and the floor. Every surface (pages, API, CLI, exports) calls these."""
