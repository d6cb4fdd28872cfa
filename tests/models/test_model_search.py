"""Model words reach the model pages (issue 49): a search naming a shipped model says which page answers it,
and the search page links that page for the step the rest of the query describes."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from kernelindex import urls
from kernelindex.resolve.grammar import parse_query
from kernelindex.resolve.vocabulary import GpuEntry, OperationEntry, build_vocabulary

VOCAB = build_vocabulary([OperationEntry("gemm-n4096-k4096", "gemm_n4096_k4096", "gemm", (), ("m", "n", "k"))],
                         [GpuEntry("h100-sxm", "H100", "NVIDIA H100 SXM", "sm_90")])


def parse(text: str):  # type: ignore[no-untyped-def]
    return parse_query(text, VOCAB)


def test_a_model_name_in_a_query_names_its_page() -> None:
    issue = parse("llama 3.1 8b h100").issues[0]
    assert issue.code == "MODEL_WORD" and urls.model("llama-3.1-8b") in issue.message
    assert "ki model llama-3.1-8b" in issue.message
    assert urls.model("mixtral-8x7b") in parse("mixtral 8x7b gemm").issues[0].message
    assert urls.MODELS in parse("qkv gemm").issues[0].message  # a layer word: the models list


def test_the_search_page_links_the_model_page_for_the_step_asked(model_site: TestClient) -> None:
    page = model_site.get(urls.SEARCH, params={"q": "llama 3.1 8b decode h100 batch=32"})
    assert page.status_code == 200
    (link,) = re.findall(r'href="([^"]*)" data-model-page', page.text)
    assert link.replace("&amp;", "&") == urls.model("llama-3.1-8b", ("phase", "decode"), ("gpu", "h100-sxm"),
                                                     ("batch", 32))
    assert model_site.get(link.replace("&amp;", "&")).status_code == 200
