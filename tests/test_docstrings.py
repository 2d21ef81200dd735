"""Every public function, method and class in sim/ and policies/ has a docstring,
and every field of a public dataclass has a field docstring (a string literal
right after the field).

Public means the name does not start with ``_``; members of a private class and
functions nested inside functions are skipped.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sim", "policies")


def _is_public(name: str) -> bool:
    return not name.startswith("_")


def _decorator_name(node: ast.expr) -> str:
    """The dotted name of a decorator, without its call arguments."""
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _is_dataclass(cls: ast.ClassDef) -> bool:
    return any(_decorator_name(d).split(".")[-1] == "dataclass" for d in cls.decorator_list)


def _is_accessor(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A property's setter or deleter, documented by its getter."""
    return any(_decorator_name(d).split(".")[-1] in ("setter", "deleter") for d in func.decorator_list)


def _is_field_docstring(stmt: ast.stmt | None) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))


def _is_classvar(annotation: ast.expr) -> bool:
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    return _decorator_name(annotation).split(".")[-1] == "ClassVar"


def _statements(body: list[ast.stmt]):
    """The statements of a module or class body, looking inside if/try blocks (not into functions)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from _statements(stmt.body)
            yield from _statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody):
                yield from _statements(block)
        else:
            yield stmt


def _missing_in(body: list[ast.stmt], where: str, prefix: str) -> list[str]:
    missing = []
    for stmt in _statements(body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _is_public(stmt.name) and not _is_accessor(stmt) and ast.get_docstring(stmt) is None:
                missing.append(f"{where}:{stmt.lineno}: function {prefix}{stmt.name}")
        elif isinstance(stmt, ast.ClassDef) and _is_public(stmt.name):
            name = f"{prefix}{stmt.name}"
            if ast.get_docstring(stmt) is None:
                missing.append(f"{where}:{stmt.lineno}: class {name}")
            if _is_dataclass(stmt):
                missing.extend(_missing_fields(stmt, where, name))
            missing.extend(_missing_in(stmt.body, where, name + "."))
    return missing


def _missing_fields(cls: ast.ClassDef, where: str, name: str) -> list[str]:
    missing = []
    body = cls.body
    for i, stmt in enumerate(body):
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        field = stmt.target.id
        if not _is_public(field) or _is_classvar(stmt.annotation):
            continue
        following = body[i + 1] if i + 1 < len(body) else None
        if not _is_field_docstring(following):
            missing.append(f"{where}:{stmt.lineno}: field {name}.{field}")
    return missing


def missing_docstrings() -> list[str]:
    """Every undocumented public definition and dataclass field, as path:line: kind name."""
    missing = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            missing.extend(_missing_in(tree.body, str(path.relative_to(ROOT)), ""))
    return missing


def test_public_definitions_have_docstrings():
    missing = missing_docstrings()
    assert not missing, f"{len(missing)} missing docstrings:\n" + "\n".join(missing)


def test_help_lists_every_field_of_the_dataclasses_sim_exports():
    # Python drops attribute docstrings; `sim.fielddocs.documented` puts them in the class's help.
    import dataclasses
    import inspect

    import sim

    checked = 0
    for name in sim.__all__:
        obj = getattr(sim, name)
        if not (inspect.isclass(obj) and dataclasses.is_dataclass(obj)):
            continue
        doc = inspect.getdoc(obj)
        assert "\nFields:\n" in doc, name
        for f in dataclasses.fields(obj):
            assert f"\n    {f.name}: " in doc, (name, f.name)
        checked += 1
    assert checked >= 10
    assert "Number of games (with `deals`, None plays every deck of the file)." in inspect.getdoc(sim.RunConfig)
