"""Read the shipped KernelBench file (scripts/derive-kernelbench): zstandard JSON Lines holding every
problem file once by content, every problem set as its file → digest map, and every timing file
whole with its index row (upstream path, commit, date, the problem set it is paired with)."""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

from kernelindex.sources.base import shipped

SHIPPED = "kernelbench.jsonl.zst"
LICENSE_FILE = "LICENSE-kernelbench.txt"
# The configuration a timing file measured, from its name (upstream's results/timing/<folder>/<name>).
_CONFIGURATION = re.compile(r"__baseline_time_torch"
                            r"(?:_compile_(?P<backend>inductor|cudagraphs)(?:_(?P<mode>[a-z-]+))?)?\.json$")


class KernelBenchFormatError(ValueError):
    """The file is not the shipped KernelBench file; the message says where and what was wrong."""


@dataclass(frozen=True)
class ProblemSet:
    tree: str  # "problems/800f2ad408e0": the staged folder
    commit: str
    files: dict[str, str]  # "level1/19_ReLU.py" → "sha256:…"


@dataclass(frozen=True)
class TimingFile:
    file: str  # "H100_Modal__baseline_time_torch.json"
    upstream_path: str
    commit: str
    commit_date: str
    problems: str  # the problem set (tree) it is paired with
    sha256: str
    content: dict[str, Any]

    @property
    def configuration(self) -> str:
        """eager, inductor-default, inductor-max-autotune, …, cudagraphs."""
        match = _CONFIGURATION.search(self.file)
        if not match:
            raise KernelBenchFormatError(f"{self.file}: the name says no configuration (baseline_time_torch…)")
        if match["backend"] is None:
            return "eager"
        if match["backend"] == "cudagraphs":
            return "cudagraphs"
        return f"inductor-{match['mode'] or 'default'}"


@dataclass
class KernelBenchData:
    problems: dict[str, str] = field(default_factory=dict)  # digest → source text
    sets: dict[str, ProblemSet] = field(default_factory=dict)
    timings: list[TimingFile] = field(default_factory=list)


def shipped_path() -> Path:
    return shipped("kernelbench", SHIPPED)


def license_text() -> str:
    return shipped("kernelbench", LICENSE_FILE).read_text(encoding="utf-8")


def _line(data: KernelBenchData, line: dict[str, Any]) -> None:
    kind = line.get("kind")
    if kind == "problem":
        data.problems[line["digest"]] = line["source"]
    elif kind == "problem_set":
        data.sets[line["tree"]] = ProblemSet(line["tree"], line["commit"], dict(line["files"]))
    elif kind == "timing":
        data.timings.append(TimingFile(line["file"], line["upstream_path"], line["commit"], line["commit_date"],
                                       line["problems"], line["sha256"], line["content"]))
    else:
        raise KernelBenchFormatError(f"unknown line kind {kind!r}")


def read_kernelbench(content: bytes, locator: str) -> KernelBenchData:
    try:
        text = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(content)).read().decode("utf-8")
    except zstandard.ZstdError as exc:
        raise KernelBenchFormatError(f"{locator}: not a zstandard file ({exc}); make it with "
                                     "scripts/derive-kernelbench") from None
    data = KernelBenchData()
    for number, raw in enumerate(text.splitlines(), start=1):
        try:
            _line(data, json.loads(raw))
        except (ValueError, KeyError, TypeError) as exc:
            raise KernelBenchFormatError(f"{locator}, line {number}: {exc}") from None
    for timing in data.timings:
        if timing.problems not in data.sets:
            raise KernelBenchFormatError(f"{locator}: {timing.file} is paired with {timing.problems}, which the file "
                                         "does not hold")
    return data


def write_kernelbench(data: KernelBenchData) -> bytes:
    """The shipped form of ``data`` (the derive script's format): tests build small files with it."""
    lines: list[dict[str, Any]] = [{"kind": "problem", "digest": d, "source": s}
                                   for d, s in sorted(data.problems.items())]
    lines += [{"kind": "problem_set", "tree": s.tree, "commit": s.commit, "files": s.files} for s in data.sets.values()]
    lines += [{"kind": "timing", "file": t.file, "upstream_path": t.upstream_path, "commit": t.commit,
               "commit_date": t.commit_date, "problems": t.problems, "sha256": t.sha256, "content": t.content}
              for t in data.timings]
    text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines)
    return zstandard.ZstdCompressor().compress(text.encode("utf-8"))
