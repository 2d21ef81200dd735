"""Field docstrings in `help()`.

The project documents each dataclass field by the string right after it (an
attribute docstring, PEP 257), which Python does not keep. `documented`
puts them back under the class's own docstring, as "Fields:", read from the
source the first time the docstring is asked for, so that importing costs
nothing.
"""

import ast
import inspect
import textwrap


class _FieldsDoc:
    """A class's ``__doc__``: its own docstring, then its fields' (built on first use)."""

    def __init__(self, doc: str | None):
        self.doc = doc
        self.full: str | None = None

    def __get__(self, obj, cls) -> str | None:
        if self.full is None:
            self.full = _with_fields(cls, self.doc)
        return self.full


def documented(cls):
    """Class decorator (outside @dataclass): `help(cls)` lists the fields with their docstrings."""
    cls.__doc__ = _FieldsDoc(cls.__doc__)
    return cls


def field_docs(cls) -> list[tuple[str, str]]:
    """(field, docstring) for each annotated field followed by a string, in order, read from the class's source."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):  # no source (a frozen install): the docstring alone
        return []
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    out = []
    for node, after in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            out.append((node.target.id, inspect.cleandoc(after.value.value)))
    return out


def _with_fields(cls, doc: str | None) -> str | None:
    fields = field_docs(cls)
    if not fields:
        return doc
    lines = [inspect.cleandoc(doc or cls.__name__), "", "Fields:"]
    for name, text in fields:
        first, *rest = text.splitlines()
        lines.append(f"    {name}: {first}")
        lines += [f"        {line}" if line else "" for line in rest]
    return "\n".join(lines)
