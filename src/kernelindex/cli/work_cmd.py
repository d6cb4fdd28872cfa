"""``ki runner work``: fulfil a server's measurement requests on this machine's GPU."""

from __future__ import annotations

from pathlib import Path

import typer

from kernelindex.cli.common import fail
from kernelindex.cli.console import plain_console
from kernelindex.trust import keys as runner_keys

console = plain_console()


def work(
    server: str = typer.Option(..., "--server", help="The KernelIndex server, e.g. https://kernelindex.example."),
    api_key: str = typer.Option(..., "--api-key", envvar="KERNELINDEX_API_KEY",
                                help="An API key with scope bundles:write (or $KERNELINDEX_API_KEY)."),
    key: Path = typer.Option(None, "--key", help="Runner private key that signs the bundles (default: "
                             "~/.config/kernelindex/runner/runner.key); trusted on the server."),
    once: bool = typer.Option(False, "--once", help="Handle at most one request, then exit."),
    poll: float = typer.Option(10.0, "--poll", min=0.1, help="Seconds between polls when nothing is open."),
    min_samples: int = typer.Option(100, min=10, help="Samples per implementation before the stop rule applies."),
    time_budget: float = typer.Option(4.0, min=0.1, help="Seconds of timing per case, all implementations."),
    test_device: str = typer.Option(None, "--test-device-product", hidden=True,
                                    help="Tests only: measure on the CPU test device, announcing this product."),
) -> None:
    """Poll the server for open requests for this GPU, claim one replica with a lease, measure it as
    `ki verify` does, upload the signed bundle and mark it done or failed."""
    from kernelindex.runner.work import RunnerIdentity, Server, WorkError, WorkOptions, gpu_slug, work_loop

    key = key or runner_keys.default_key_dir() / runner_keys.PRIVATE_KEY_FILE
    try:
        private = runner_keys.load_private_key(key)
    except runner_keys.RunnerKeyError as exc:
        fail(str(exc), code=2)
    pub = key.with_name(runner_keys.PUBLIC_KEY_FILE)
    name = runner_keys.load_public_key(pub).name if pub.exists() else "local-runner"
    identity = RunnerIdentity(name, runner_keys.key_id_of(runner_keys.public_key_hex(private)), key)
    options = WorkOptions(min_samples=min_samples, time_budget_s=time_budget, poll_seconds=poll,
                          test_device_product=test_device)
    try:
        product = test_device or _cuda_product()
        gpu = gpu_slug(product)
        console.print(f"Runner {identity.name} ({identity.key_id[:19]}…) on {product} ({gpu}), serving {server}",
                      highlight=False)
        work_loop(Server(server, api_key), identity, gpu, options,
                  lambda line: console.print(line, highlight=False), once=once)
    except WorkError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        console.print("Stopped; a claimed request goes back to the queue when its lease expires.")


def _cuda_product() -> str:
    try:
        import torch
    except ImportError:
        fail("`ki runner work` needs the runner extra (pip install 'kernelindex[runner]')")
    if not torch.cuda.is_available():
        fail("no CUDA device: `ki runner work` measures on a local NVIDIA GPU")
    return str(torch.cuda.get_device_name())


def register(app: typer.Typer) -> None:
    from kernelindex.cli.runner_cmds import runner_app

    runner_app.command("work")(work)
