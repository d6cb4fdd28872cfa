"""The one translation of what a read refuses: a problem with a status, a stable code, a detail and
the parameter at fault. The HTML page, the API's problem document and the CLI's one-line message
with its exit code are all made from it."""

from __future__ import annotations

from dataclasses import dataclass

from kernelindex.readmodel.errors import BadParameter, BadSelection, NotFound


@dataclass(frozen=True)
class Problem:
    status: int  # 404: nothing by that name; 400: a value the page cannot use
    code: str  # stable: not_found, bad_selection, bad_request
    detail: str
    parameter: str | None = None
    message: str | None = None  # what is wrong with ``parameter``
    malformed: bool = False  # a 404 for a name that cannot name anything (``ki show run zzz``)

    @property
    def exit_code(self) -> int:
        """The CLI's exit code: 1 when nothing was found, 2 for a usage error (a malformed name too)."""
        return 1 if self.status == 404 and not self.malformed else 2


READ_ERRORS = (NotFound, BadSelection, BadParameter)


def problem_of(exc: NotFound | BadSelection | BadParameter) -> Problem:
    if isinstance(exc, NotFound):
        return Problem(404, "not_found", _sentence(str(exc)), malformed=exc.malformed)
    if isinstance(exc, BadSelection):
        return Problem(400, "bad_selection", str(exc), "workload/cohort", str(exc))
    return Problem(400, "bad_request", f"The value of {exc.parameter!r} cannot be used: {exc.message}.",
                   exc.parameter, exc.message)


def _sentence(text: str) -> str:
    text = text[:300]
    return text if text.endswith(".") else text + "."
