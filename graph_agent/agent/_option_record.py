"""Records of options: a frozen dataclass whose fields carry, besides type and default, a
one-line doc and the form of the builder method that sets them (``about``). From such a record
follow a builder's methods (``add_option_methods``) and a Markdown table (``options_table``).
``AgentOptions`` is one, ``FlowOptions`` (agent/flows/_options.py) another."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "BuilderForm",
    "about",
    "add_option_methods",
    "options_table",
    "settle",
    "taken_by",
    "typed_methods",
]

BuilderForm = Literal["set", "add", "merge"]
"""How the builder's method takes the option: ``set`` one value (the last call wins),
``add`` any number of values (calls accumulate), ``merge`` a mapping (calls merge)."""

_FORMS = {
    "set": "",
    "add": " Takes any number; calls accumulate.",
    "merge": " Takes a mapping; calls merge.",
}


def about(
    doc: str,
    *,
    form: BuilderForm = "set",
    arg: str | None = None,
    shown: str | None = None,
    only: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A field's metadata: ``doc`` is the table's "what it does" and the builder method's
    docstring; ``arg`` names the builder method's parameter (the option's name when not
    given); ``shown`` is the table's default when the default's value says too little;
    ``only`` names the classes that take the option when not every class the record serves
    does (``taken_by`` says which do; the doc and the table name them)."""
    return {"doc": doc, "form": form, "arg": arg, "shown": shown, "only": only}


def taken_by(owner: type, record: type) -> list[dataclasses.Field[Any]]:
    """The fields of ``record`` that ``owner`` takes: those for every class, and those whose
    ``only`` names ``owner`` or a class it derives from."""
    names = {cls.__name__ for cls in owner.__mro__}
    return [
        option
        for option in dataclasses.fields(record)
        if not option.metadata["only"] or names.intersection(option.metadata["only"])
    ]


def _described(option: dataclasses.Field[Any], quote: str = "") -> str:
    """An option's doc, after the classes that alone take it (``only``), if any."""
    doc: str = option.metadata["doc"]
    only = [f"{quote}{name}{quote}" for name in option.metadata["only"]]
    return f"{' and '.join(only)}: {doc}" if only else doc


def settle(record: Any) -> None:
    """In a frozen record's ``__post_init__``: ``add`` options become tuples and ``merge``
    options dicts (``None`` an empty one), so the record reads the same however often it is
    read."""
    for option in dataclasses.fields(record):
        value = getattr(record, option.name)
        if option.metadata["form"] == "add":
            object.__setattr__(record, option.name, tuple(value))
        elif option.metadata["form"] == "merge":
            object.__setattr__(record, option.name, dict(value or {}))


def add_option_methods(builder: type, record: type) -> None:
    """Give ``builder`` one method per field of ``record`` it does not define itself. The
    builder keeps the options given in ``self._options`` (a dict of keywords)."""
    for option in dataclasses.fields(record):
        if option.name not in vars(builder):
            setattr(builder, option.name, _method(builder.__name__, option))


def _method(owner: str, option: dataclasses.Field[Any]) -> Callable[..., Any]:
    """The builder's method for one option, in the form its field declares. A bool option's
    method turns it on when called without a value."""
    key, form = option.name, option.metadata["form"]
    arg = option.metadata["arg"] or key
    parameter = inspect.Parameter(
        arg,
        inspect.Parameter.VAR_POSITIONAL
        if form == "add"
        else inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=True if isinstance(option.default, bool) else inspect.Parameter.empty,
    )
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    signature = inspect.Signature([self_parameter, parameter])
    shown = inspect.Signature([parameter])

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{owner}.{key}{shown}: {error}") from None
        bound.apply_defaults()
        value = bound.arguments[arg]
        if form == "add":
            self._options.setdefault(key, []).extend(value)
        elif form == "merge":
            self._options.setdefault(key, {}).update(value)
        else:
            self._options[key] = value
        return self

    doc = _described(option)
    method.__name__ = key
    method.__qualname__ = f"{owner}.{key}"
    method.__doc__ = doc[:1].upper() + doc[1:] + "." + _FORMS[form]
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.made_from = option  # type: ignore[attr-defined]  # (typed_methods reads it)
    return method


def options_table(record: type) -> str:
    """The Markdown table of every option of ``record``: name, what it does, default."""
    rows = ["| option | what it does | default |", "|---|---|---|"]
    for option in dataclasses.fields(record):
        shown = option.metadata["shown"] or _shown(option.default)
        rows.append(f"| `{option.name}` | {_described(option, '`')} | {shown} |")
    return "\n".join(rows)


def _shown(default: Any) -> str:
    if default is None or default == ():
        return "none"
    if isinstance(default, str):
        return f'`"{default}"`'
    return f"`{default!r}`"


# -- what type checkers and editors see of a builder's made methods ------------------------

_BUILTINS = {"str", "int", "bool", "float", "None", "bytes", "dict", "list", "tuple", "object"}


def typed_methods(builders: dict[str, tuple[type, type]]) -> str:
    """The source of ``agent/_option_methods.py``: for each ``class name -> (builder,
    record)``, a class that declares the builder's made methods, typed, for type checkers
    and editors (the builder derives from it; at run time it is empty). A test checks the
    file against this; ``python tests/agent/test_option_methods.py`` writes it again."""
    used: set[str] = set()
    classes = []
    for name, (builder, record) in builders.items():
        lines = [
            f"class {name}:",
            f'    """The methods ``add_option_methods`` makes from ``{record.__name__}``, typed."""',
            "",
            "    if TYPE_CHECKING:",
        ]
        for option in dataclasses.fields(record):
            if not hasattr(vars(builder).get(option.name), "made_from"):
                continue  # the builder writes this one itself
            annotation = str(option.type)
            arg = option.metadata["arg"] or option.name
            if option.metadata["form"] == "add":
                annotation = _element(annotation)
                parameter = f"*{arg}: {annotation}"
            elif isinstance(option.default, bool):
                parameter = f"{arg}: {annotation} = True"
            else:
                parameter = f"{arg}: {annotation}"
            used |= _names(annotation)
            lines.append(f"        def {option.name}(self, {parameter}) -> Self: ...")
        classes.append("\n".join(lines))
    sources = {record.__module__ for _, record in builders.values()}
    head = [
        '"""Generated by ``python tests/agent/test_option_methods.py`` from the option records',
        "(``AgentOptions``, ``FlowOptions``): do not edit. The builders' option methods are made",
        "at import (``add_option_methods``); these classes give them to type checkers and editors.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import TYPE_CHECKING",
        "",
        "if TYPE_CHECKING:",
        "    from typing_extensions import Self",
        *(f"    {line}" for line in sorted(_imports(sources, used))),
    ]
    return "\n".join(head) + "\n\n\n" + "\n\n\n".join(classes) + "\n"


def _names(annotation: str) -> set[str]:
    tree = ast.parse(annotation, mode="eval")
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - _BUILTINS


def _element(annotation: str) -> str:
    """``X`` of ``Iterable[X]``: what an ``add`` method takes, each."""
    tree = ast.parse(annotation, mode="eval").body
    if isinstance(tree, ast.Subscript):
        return ast.unparse(tree.slice)
    return "Any"


def _imports(modules: set[str], wanted: set[str]) -> set[str]:
    """``from M import name`` for each wanted name, found among the imports of ``modules``
    (at the top or in their ``TYPE_CHECKING`` block), as absolute imports."""
    found: dict[str, str] = {}
    for module in modules:
        path = Path(sys.modules[module].__file__ or "")
        package = module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                source = importlib.util.resolve_name(
                    "." * node.level + (node.module or ""), package
                )
                for alias in node.names:
                    found.setdefault(alias.asname or alias.name, source)
    missing = wanted - set(found)
    if missing:
        raise LookupError(f"the option records' types name {sorted(missing)}, not imported")
    by_module: dict[str, list[str]] = {}
    for name in sorted(wanted):
        by_module.setdefault(found[name], []).append(name)
    return {f"from {m} import {', '.join(names)}" for m, names in by_module.items()}
