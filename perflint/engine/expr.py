"""A small, safe expression language for rule predicates and impact formulas.

Python expression syntax, parsed with `ast` and checked against a closed whitelist, then
compiled into closures: nothing is ever passed to eval/exec. Names resolve to row fields and
rule params. Missing fields are None; comparisons with None are False (so a rule never fires
on data the trace does not have).
"""

from __future__ import annotations

import ast
import fnmatch
import math
import operator
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

Env = Mapping[str, Any]
Fn = Callable[[Env], Any]


class ExprError(ValueError):
    pass


def _none_safe(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def f(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return False
        try:
            return op(a, b)
        except TypeError:
            return False

    return f


def _arith(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def f(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return None
        try:
            return op(a, b)
        except ZeroDivisionError:
            return None
        except TypeError:
            return None

    return f


_CMP: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: _none_safe(operator.lt),
    ast.LtE: _none_safe(operator.le),
    ast.Gt: _none_safe(operator.gt),
    ast.GtE: _none_safe(operator.ge),
    ast.In: _none_safe(lambda a, b: a in b),
    ast.NotIn: lambda a, b: b is None or a not in b,
}
_BIN: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: _arith(operator.add),
    ast.Sub: _arith(operator.sub),
    ast.Mult: _arith(operator.mul),
    ast.Div: _arith(operator.truediv),
    ast.FloorDiv: _arith(operator.floordiv),
    ast.Mod: _arith(operator.mod),
    ast.Pow: _arith(lambda a, b: a**b if abs(b) <= 64 else None),
}


def _regex_match(text: Any, pattern: Any) -> bool:
    return isinstance(text, str) and isinstance(pattern, str) and re.search(pattern, text) is not None


def _ceil_to(x: Any, m: Any) -> Any:
    if x is None or not m:
        return None
    return int(math.ceil(x / m) * m)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": lambda *a: min((x for x in a if x is not None), default=None),
    "max": lambda *a: max((x for x in a if x is not None), default=None),
    "abs": lambda x: None if x is None else abs(x),
    "round": lambda x, n=0: None if x is None else round(x, n),
    "len": lambda x: 0 if x is None else len(x),
    "any": lambda xs: bool(xs) and any(xs),
    "all": lambda xs: bool(xs) and all(xs),
    "exists": lambda x: x is not None,
    "matches": _regex_match,
    "glob": lambda text, pat: isinstance(text, str) and fnmatch.fnmatchcase(text, pat),
    "startswith": lambda s, p: isinstance(s, str) and s.startswith(p),
    "endswith": lambda s, p: isinstance(s, str) and s.endswith(p),
    "contains": lambda s, p: s is not None and p in s,
    "lower": lambda s: s.lower() if isinstance(s, str) else s,
    "ceil_to": _ceil_to,
    "coalesce": lambda *a: next((x for x in a if x is not None), None),
}


def _compile(node: ast.AST) -> Fn:
    if isinstance(node, ast.Expression):
        return _compile(node.body)
    if isinstance(node, ast.Constant):
        v = node.value
        if not isinstance(v, (int, float, str, bool)) and v is not None:
            raise ExprError(f"constant {v!r} not allowed")
        return lambda env: v
    if isinstance(node, ast.Name):
        name = node.id
        if name in ("true", "True"):
            return lambda env: True
        if name in ("false", "False"):
            return lambda env: False
        if name in ("null", "None"):
            return lambda env: None
        return lambda env: env.get(name)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_compile(e) for e in node.elts]
        return lambda env: [f(env) for f in items]
    if isinstance(node, ast.BoolOp):
        parts = [_compile(v) for v in node.values]
        # all()/any() over a generator, unrolled (rules evaluate these once per fact row)
        if isinstance(node.op, ast.And):

            def conj(env: Env) -> bool:
                for p in parts:
                    if not p(env):
                        return False
                return True

            return conj

        def disj(env: Env) -> bool:
            for p in parts:
                if p(env):
                    return True
            return False

        return disj
    if isinstance(node, ast.UnaryOp):
        operand = _compile(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda env: not operand(env)
        if isinstance(node.op, ast.USub):
            return lambda env: None if (x := operand(env)) is None else -x
        if isinstance(node.op, ast.UAdd):
            return operand
        raise ExprError("unsupported unary operator")
    if isinstance(node, ast.BinOp):
        op = _BIN.get(type(node.op))
        if op is None:
            raise ExprError(f"operator {type(node.op).__name__} not allowed")
        left, right = _compile(node.left), _compile(node.right)
        return lambda env: op(left(env), right(env))
    if isinstance(node, ast.Compare):
        left = _compile(node.left)
        ops = []
        for o, c in zip(node.ops, node.comparators):
            f = _CMP.get(type(o))
            if f is None:
                raise ExprError(f"comparison {type(o).__name__} not allowed")
            ops.append((f, _compile(c)))

        def cmp(env: Env) -> bool:
            a = left(env)
            for f, rhs in ops:
                b = rhs(env)
                if not f(a, b):
                    return False
                a = b
            return True

        return cmp
    if isinstance(node, ast.IfExp):
        test, body, orelse = _compile(node.test), _compile(node.body), _compile(node.orelse)
        return lambda env: body(env) if test(env) else orelse(env)
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
            raise ExprError(f"only these functions may be called: {', '.join(sorted(FUNCTIONS))}")
        fn = FUNCTIONS[node.func.id]
        args = [_compile(a) for a in node.args]
        if len(args) == 1:
            (only,) = args
            return lambda env: fn(only(env))
        return lambda env: fn(*[a(env) for a in args])
    if isinstance(node, ast.Subscript):
        value, index = _compile(node.value), _compile(node.slice)

        def sub(env: Env) -> Any:
            v, i = value(env), index(env)
            try:
                return v[i]
            except (TypeError, IndexError, KeyError):
                return None

        return sub
    raise ExprError(f"{type(node).__name__} is not allowed in rule expressions")


@lru_cache(maxsize=4096)
def compile_expr(text: str) -> Fn:
    """Compile `text` or raise ExprError with the reason."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"syntax error: {exc.msg}") from None
    return _compile(tree)


def names_in(text: str) -> set[str]:
    """Free names an expression reads (for validating params/fields at load time)."""
    tree = ast.parse(text.strip(), mode="eval")
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    consts = {"true", "True", "false", "False", "null", "None"}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called - consts
