"""Short text renderings of the tools' structured answers (the structured content is the answer;
this is the line or two an agent or a person reads first)."""

from __future__ import annotations

from typing import Any

from kernelindex.domain.units import format_duration
from kernelindex.policy.floor_names import FLOOR_NAMES, PHYSICAL


def _leader_lines(data: dict[str, Any], limit: int = 5) -> list[str]:
    lines = []
    for cohort in data.get("exact", [])[:limit]:
        leader = cohort.get("leader")
        if leader:
            impl = leader["implementation"]
            install = impl.get("install_command") or "not usable as-is"
            lines.append(f"- {cohort['label']}: #1 {impl['title']} {leader['median']} ({leader['evidence']}; "
                         f"{install}) — run {leader['run_id']}")
    return lines


def _resolution(data: dict[str, Any]) -> str:
    lines = [data["message"]]
    issues = (data.get("query") or {}).get("issues", [])
    lines += [f"! {i['token']}: {i['message']}" + (f" (try {i['suggestion']})" if i.get("suggestion") else "")
              for i in issues]
    lines += _leader_lines(data)
    lines += [f"- choose: {c['query']}" for c in data.get("choices", [])[:8]]
    return "\n".join(lines)


def _recommendation(data: dict[str, Any]) -> str:
    lines = [data["message"]]
    rec = data.get("recommendation")
    if rec:
        answers = rec["answers"] or (rec.get("nearest") or {}).get("answers", [])
        for a in answers:
            ratio = f", {a['floor_ratio']:.2f}× the {FLOOR_NAMES[PHYSICAL]}" if a.get("floor_ratio") else ""
            lines.append(f"- {a['cohort_label']} ({a['cohort_kind']}): {a['implementation']['title']} {a['median']} "
                         f"{a.get('statistic', 'median')}"
                         f"{ratio}; {a['install'] or 'no usable implementation'}")
        if rec.get("floor"):
            lines.append(f"{rec['gpu']['label']} {rec['floor']['name']}: {format_duration(rec['floor']['floor_ns'])} "
                         "(an estimate)")
    lines += [f"- {c['query']}" for c in data.get("choices", [])]
    return "\n".join(lines)


def _batch(data: dict[str, Any]) -> str:
    lines = [f"{data['answered']} of {data['count']} queries answered, {data['failed']} failed."]
    for a in data["answers"]:
        if a["result"]:
            lines.append(f"[{a['index']}] {a['result']['status']}: {a['result']['message']}")
        else:
            lines.append(f"[{a['index']}] {a['problem']['code']}: {a['problem']['detail']}")
    return "\n".join(lines)


def _changes(data: dict[str, Any], limit: int = 10) -> str:
    changes = data["changes"]
    lines = [f"{len(changes)} change{'' if len(changes) == 1 else 's'}"
             + (" (more follow: call again with since=next_cursor)" if data["more"] else "")
             + f"; next_cursor {data['next_cursor']}"]
    lines += [f"- {c['at']} {c['kind']}: {c['title']}" for c in changes[-limit:]]
    return "\n".join(lines)


def summary(tool: str, data: dict[str, Any]) -> str:
    if tool in ("search_catalog", "resolve_kernel"):
        return _resolution(data)
    if tool == "recommend_kernel":
        return _recommendation(data)
    if tool == "resolve_kernels":
        return _batch(data)
    if tool == "validate_manifest":
        return (f"valid {data['kind']} {data['digest']}" if data["valid"]
                else "invalid: " + "; ".join(data["problems"]))
    if tool == "list_changes":
        return _changes(data)
    if tool == "get_model_step":
        step, total = data["step"], data["summary"]
        return (f"{data['model']['title']} {step['phase']} batch {step['batch']} seq {step['seq']} tp {step['tp']} on "
                f"{data['gpu']['label']}: {total['calls']} calls, estimate {total['estimate']}, floor {total['floor']} "
                f"({total['label']})")
    if tool == "compare_implementations":
        sweep = data["sweep"]
        return f"{sweep['operation']} · {sweep['region']}: {sweep['summary']}"
    if tool == "list_gpus":
        return ", ".join(f"{g['gpu']['short']} ({g['gpu']['slug']})" for g in data["items"])
    title = data.get("title") or data.get("kind") or data.get("run_id") or tool
    return f"{tool}: {title} (full answer in the structured content)"
