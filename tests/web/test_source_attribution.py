"""Every page showing a source's data carries its license and attribution; /docs lists the policy."""

from __future__ import annotations

from kernelindex import registry


def test_home_operation_and_run_pages_carry_license_and_attribution(client, rope_keys) -> None:  # noqa: ANN001
    attribution = registry.source_policy("liger-kernel-benchmarks").attribution
    home = client.get("/").text
    assert attribution.replace("'", "&#39;") in home
    assert "https://github.com/linkedin/Liger-Kernel/blob/main/LICENSE" in home
    page = client.get("/operations/rope").text
    assert attribution.replace("'", "&#39;") in page
    api = client.get("/api/v1/operations/rope").json()
    source = next(s for s in api["sources"] if s["name"] == "liger-kernel-benchmarks")
    assert source["attribution"] == attribution and source["license_name"].startswith("BSD 2-Clause")
    run = client.get(f"/api/v1/runs/{rope_keys['leader']}").json()
    # a run names the file it came from (the rope rows: the main file, commit 2120862b)
    assert run["source_notice"]["license"] == "BSD-2-Clause"
    assert "all_benchmark_data.csv (upstream commit 2120862b)" in run["source_notice"]["attribution"]
    assert "Attribution" in client.get(f"/runs/{rope_keys['leader']}").text


def test_docs_list_every_source_policy(client) -> None:  # noqa: ANN001
    docs = client.get("/docs").text
    assert 'id="sources-and-licenses"' in docs
    for policy in registry.source_policies().values():
        assert f'id="source-{policy.name}"' in docs
