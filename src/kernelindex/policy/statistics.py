"""What a ranked figure is, named from its cohort's protocol (issue 43 item 3): one rule for the page's
cards and caption, the JSON's ``statistic`` field, the CSV and the CLI. A mean is called a mean."""

from __future__ import annotations

DEVICE_TIME = "cupti-device-time"  # runner v3's timing.method: the figure is the call's device time

WORDS = {
    "median": "median",
    "mean": "mean",
    "geomean": "geometric mean",
    "unspecified": "figure (the source does not say which statistic)",
}


def statistic_word(statistic: str, method: str | None = None) -> str:
    """The statistic a figure is, in words ("median", "median device time", "mean", "geometric mean")."""
    word = WORDS.get(statistic, statistic)
    return f"{word} device time" if statistic == "median" and method == DEVICE_TIME else word
