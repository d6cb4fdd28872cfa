"""What a read can refuse. Pages, the API and the CLI translate these three, and only these, into a
404 / 400 page, a problem document, or a one-line message with its exit code."""

from __future__ import annotations


class NotFound(LookupError):
    """Something the user named does not exist; the message says what and what to try. ``malformed``:
    the name cannot name anything (``/runs/zzz``): still a 404 on the web, a usage error for the CLI."""

    def __init__(self, message: str, *, malformed: bool = False) -> None:
        super().__init__(message)
        self.malformed = malformed


class BadSelection(ValueError):
    """A ?workload= or ?cohort= value that names nothing on this page (a 400, not a 404)."""


class CohortMoved(BadSelection):
    """A ?cohort= key an earlier keying rule gave this cohort (policy.cohorts.former_cohort_keys): the web
    answers a permanent redirect to ``key``, the cohort's key now; any other door reads it as the
    BadSelection it is."""

    def __init__(self, former: str, key: str) -> None:
        super().__init__(f"cohort {former!r} is now {key!r}")
        self.former = former
        self.key = key


class BadParameter(ValueError):
    """A query parameter with a value the page cannot use; names the parameter and what is allowed."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(f"{parameter}: {message}")
        self.parameter = parameter
        self.message = message
