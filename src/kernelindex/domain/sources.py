"""Names of the sources KernelIndex itself produces runs under."""

RUNNER_SOURCE = "kernelindex-runner"  # every run the KernelIndex verification runner measures and signs
