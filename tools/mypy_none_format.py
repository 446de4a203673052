"""A mypy plugin: a value that may be None reaching a format spec is an error (`none-format`).

mypy accepts `f"{when:%Y-%m-%d}"` with `when: datetime | None`, since every object has a
`__format__`; at run time `None.__format__("%Y-%m-%d")` raises TypeError. That is how one
verified file took the readiness page down (issue 36). mypy turns each f-string field into
`"{:{}}".format(value, spec)` (mypy/fastparse.py, visit_FormattedValue): this plugin looks at
those calls, and at `"...".format(...)` calls written out, and fails the ones where an argument
whose type includes None meets a non-empty format spec. (`{x}` without a spec and `{x!r:…}`
are fine: None formats as "None" there.)

Enabled in pyproject.toml ([tool.mypy] plugins); tested in tests/project/test_mypy_none_format.py.
"""

from __future__ import annotations

import string
from collections.abc import Callable

from mypy.errorcodes import ErrorCode
from mypy.nodes import CallExpr, MemberExpr, StrExpr
from mypy.plugin import MethodContext, Plugin
from mypy.types import NoneType, Type, UnionType, get_proper_type

NONE_FORMAT = ErrorCode("none-format", "A value that may be None reaches a format spec", "General")


def _may_be_none(typ: Type) -> bool:
    proper = get_proper_type(typ)
    if isinstance(proper, NoneType):
        return True
    if isinstance(proper, UnionType):
        return any(isinstance(get_proper_type(t), NoneType) for t in proper.items)
    return False


def _fields(fmt: str) -> list[tuple[str, str, str | None]] | None:
    """(field name, spec, conversion) of each replacement field, or None if unparsable."""
    try:
        return [
            (name, spec or "", conv)
            for _text, name, spec, conv in string.Formatter().parse(fmt)
            if name is not None
        ]
    except ValueError:
        return None


def _check_format(ctx: MethodContext) -> Type:
    call = ctx.context
    if not isinstance(call, CallExpr) or not isinstance(call.callee, MemberExpr):
        return ctx.default_return_type
    template = call.callee.expr
    if not isinstance(template, StrExpr):
        return ctx.default_return_type
    fields = _fields(template.value)
    if not fields:
        return ctx.default_return_type
    args = [a for group in ctx.args for a in group]
    types = [t for group in ctx.arg_types for t in group]
    if template.value in ("{:{}}", "{!s:{}}", "{!a:{}}"):  # an f-string field: (value, spec)
        if template.value != "{:{}}" or len(args) != 2:
            return ctx.default_return_type
        spec = args[1]
        has_spec = not (isinstance(spec, StrExpr) and spec.value == "")
        if has_spec and _may_be_none(types[0]):
            ctx.api.fail(
                "a value that may be None reaches a format spec (None.__format__ raises "
                "TypeError): handle None before formatting",
                call,
                code=NONE_FORMAT,
            )
        return ctx.default_return_type
    auto = 0
    for name, spec, conv in fields:
        if name == "" or name.isdigit():
            index = auto if name == "" else int(name)
            auto += name == ""
            if spec and conv is None and index < len(types) and _may_be_none(types[index]):
                ctx.api.fail(
                    f"argument {index + 1} may be None and reaches the format spec "
                    f"{spec!r} (None.__format__ raises TypeError)",
                    call,
                    code=NONE_FORMAT,
                )
    return ctx.default_return_type


class NoneFormatPlugin(Plugin):
    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return _check_format if fullname == "builtins.str.format" else None


def plugin(version: str) -> type[Plugin]:
    return NoneFormatPlugin
