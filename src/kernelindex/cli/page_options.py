"""The options of the ``ki`` commands that show a page, generated from the page's declaration (the view's
query and repeated parameters, ``views/table.py`` and ``views/params.py``), as its route, its JSON twin and
its MCP tool are: a parameter a page gains becomes an option of its command with no second declaration
(issue 48 item 3). What a command adds of its own is said where it registers: the parameters it takes as
its arguments (compare's run ids), other spellings of an option (``--op``), a closed list given as one flag
per value (``ki model --decode``), and options of its own (``--limit``, ``--json``, ``--api``).

The table loads without the read model (it names its builders), so an ``--api`` lookup still imports
neither the catalog nor YAML (tests/cli/test_command_table.py)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import typer

from kernelindex.cli.backends import CommandError
from kernelindex.views.params import Param
from kernelindex.views.table import VIEW


@dataclass(frozen=True)
class PageDoor:
    """How one command shows the pages ``views``: which of their parameters are its arguments
    (``positional``), which option names besides ``--name`` each has (``aliases``), and which closed
    lists are given as one flag per value (``flags``)."""

    views: tuple[str, ...]
    positional: tuple[str, ...] = ()
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    flags: tuple[str, ...] = ()

    def parameters(self) -> list[tuple[Param, bool]]:
        """The views' parameters the command takes as options, each once, with whether it repeats."""
        found: dict[str, tuple[Param, bool]] = {}
        for name in self.views:
            view = VIEW[name]
            for param, repeats in [(p, False) for p in view.query] + [(r.param, True) for r in view.repeated]:
                if param.name not in self.positional:
                    found.setdefault(param.name, (param, repeats))
        return list(found.values())

    def option_names(self) -> set[str]:
        """The names of the views' parameters the command's options give (for the test against the table)."""
        return {param.name for param, _ in self.parameters()}

    def query(self, view: str, given: Mapping[str, Any]) -> dict[str, Any]:
        """The page's query from the generated options' values: one flag of a closed list becomes its value;
        an option the page ``view`` does not take is a usage error naming the ones it does."""
        values = {param.name: self._value(param, given) for param, _ in self.parameters()}
        takes = {p.name for p in VIEW[view].query} | {r.param.name for r in VIEW[view].repeated}
        if stray := sorted(n for n, v in values.items() if v not in (None, []) and n not in takes):
            options = ", ".join(f"--{n}" for n in sorted(takes - set(self.positional))) or "none"
            raise CommandError(f"--{stray[0]} is not an option of the {view} page (its options: {options})", 2)
        return {name: value for name, value in values.items() if name in takes}

    def _value(self, param: Param, given: Mapping[str, Any]) -> Any:
        if param.name not in self.flags:
            return given.get(param.name)
        chosen = [choice for choice in param.choices if given.get(_flag(param, choice))]
        if len(chosen) > 1:
            raise CommandError(f"give one of {', '.join('--' + c for c in param.choices)}", 2)
        return chosen[0] if chosen else None

    def signature_parameters(self) -> list[inspect.Parameter]:
        """The generated options, as keyword parameters of the command's function (typer reads them)."""
        out = []
        for param, repeats in self.parameters():
            if param.name in self.flags:
                out += [_keyword(_flag(param, c), bool, typer.Option(False, f"--{c}", help=f"{param.name} {c}: "
                                                                     f"{param.description}")) for c in param.choices]
                continue
            names = (f"--{param.name}", *self.aliases.get(param.name, ()))
            if repeats:
                out.append(_keyword(param.name, list[str], typer.Option([], *names, help=_help(param, repeats))))
            else:
                out.append(_keyword(param.name, str | None, typer.Option(None, *names, help=_help(param, repeats))))
        return out


def _flag(param: Param, choice: str) -> str:
    return f"{param.name}_{choice.replace('-', '_').replace('+', '_')}"


def _help(param: Param, repeats: bool) -> str:
    closed = f" One of: {', '.join(param.choices)}." if param.choices else ""
    return param.description + closed + (" Give it again for more." if repeats and "repeat" not in
                                         param.description else "")


def _keyword(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def with_page_options(door: PageDoor) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A command function ``f(<its arguments and options>, **page)`` with ``door``'s generated options put
    before its own keyword options (``--json``, ``--api``, ``--database``); ``page`` receives their values."""

    def wrap(command: Callable[..., None]) -> Callable[..., None]:
        own = [p for p in inspect.signature(command).parameters.values() if p.kind is not p.VAR_KEYWORD]
        arguments = [p for p in own if isinstance(p.default, typer.models.ArgumentInfo)]
        rest = [p.replace(kind=p.KEYWORD_ONLY) for p in own if p not in arguments]
        generated = door.signature_parameters()
        command.__signature__ = inspect.Signature(arguments + generated + rest)  # type: ignore[attr-defined]
        command.__annotations__ = {**command.__annotations__, **{p.name: p.annotation for p in generated}}
        return command

    return wrap

