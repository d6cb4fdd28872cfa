"""KernelIndex: a public performance index for GPU kernels."""

__version__ = "0.1.0"
