"""Names of the sources KernelIndex itself produces runs under."""

RUNNER_SOURCE = "kernelindex-runner"  # every run the KernelIndex verification runner measures and signs
# The protocol version ``ki verify`` measures curated operations under (v4: stream time); a run page's reproduce
# command names its own run's version, which ``ki verify --protocol-version`` checks against this.
RUNNER_PROTOCOL_VERSION = "4"
