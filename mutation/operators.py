"""The mutation operators: mutmut's own, and the few the analysis needs that mutmut lacks.

mutmut 3.8 keeps its operators as a plain list, ``mutmut.mutation.mutators.mutation_operators``, of
(libcst node type, function yielding mutated nodes): they apply to a code string parsed with
libcst, with no mutmut project, configuration or trampolines. cosmic-ray 8.7 can mutate a code
string too (``cosmic_ray.mutating.mutate_code``), but one operator occurrence at a time by index
over a parso tree, with no node positions; mutmut's list composes with libcst's positions, which
name the line of each mutant. What mutmut lacks (it is built for unit-tested libraries, not for a
lab's algorithms) is added here in the same form: min/max, removed sorts, swapped arguments,
dropped statements, changed return values, comparison flips and off-by-one bounds.
"""
from __future__ import annotations

from collections.abc import Iterable

import libcst as cst
from mutmut.mutation.mutators import mutation_operators as MUTMUT_OPERATORS

_SWAPPED_CALLS = {"min": "max", "max": "min"}
# f(x) -> x: a removed sort, a removed copy
_UNWRAPPED_CALLS = {"sorted", "reversed", "list", "tuple"}
_FLIPPED = {cst.LessThan: cst.GreaterThan, cst.GreaterThan: cst.LessThan,
            cst.LessThanEqual: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.LessThanEqual}


def operator_min_max(node: cst.Call) -> Iterable[cst.Call]:
    """``min(...)`` <-> ``max(...)``."""
    if isinstance(node.func, cst.Name) and node.func.value in _SWAPPED_CALLS:
        yield node.with_changes(func=cst.Name(_SWAPPED_CALLS[node.func.value]))


def operator_unwrap_call(node: cst.Call) -> Iterable[cst.BaseExpression]:
    """``sorted(x, ...)`` -> ``x`` (a removed sort; also ``reversed``, ``list``, ``tuple``)."""
    if (isinstance(node.func, cst.Name) and node.func.value in _UNWRAPPED_CALLS and node.args
            and not node.args[0].star and node.args[0].keyword is None):
        yield node.args[0].value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def operator_swap_arguments(node: cst.Call) -> Iterable[cst.Call]:
    """``f(a, b)`` -> ``f(b, a)``: each two neighbouring positional arguments swapped."""
    args = list(node.args)
    for i in range(len(args) - 1):
        first, second = args[i], args[i + 1]
        if first.star or second.star or first.keyword or second.keyword:
            continue
        if cst.Module([]).code_for_node(first.value) == cst.Module([]).code_for_node(second.value):
            continue
        swapped = [
            *args[:i],
            first.with_changes(value=second.value),
            second.with_changes(value=first.value),
            *args[i + 2 :],
        ]
        yield node.with_changes(args=swapped)


def operator_return_value(node: cst.Return) -> Iterable[cst.Return]:
    """``return x`` -> ``return None``."""
    if node.value is not None and not (
        isinstance(node.value, cst.Name) and node.value.value == "None"
    ):
        yield node.with_changes(
            value=cst.Name("None"), whitespace_after_return=cst.SimpleWhitespace(" ")
        )


def operator_flip_comparison(node: cst.ComparisonTarget) -> Iterable[cst.ComparisonTarget]:
    """``<`` <-> ``>``, ``<=`` <-> ``>=`` (mutmut turns ``<`` into ``<=``, its boundary)."""
    flipped = _FLIPPED.get(type(node.operator))
    if flipped:
        yield node.with_changes(operator=flipped())


def operator_number_down(node: cst.Integer) -> Iterable[cst.Integer]:
    """``n`` -> ``n - 1`` for a positive integer literal (mutmut's own goes up by one)."""
    if node.evaluated_value > 0:
        yield node.with_changes(value=repr(node.evaluated_value - 1))


def operator_range_bound(node: cst.Call) -> Iterable[cst.Call]:
    """``range(n)`` -> ``range(n - 1)`` and ``range(n + 1)`` for a bound that is not a literal."""
    if not (isinstance(node.func, cst.Name) and node.func.value == "range" and node.args):
        return
    index = 0 if len(node.args) == 1 else 1
    bound = node.args[index]
    if bound.star or isinstance(bound.value, cst.Integer):
        return
    for operator in (cst.Subtract(), cst.Add()):
        changed = cst.BinaryOperation(left=bound.value, operator=operator, right=cst.Integer("1"))
        yield node.with_changes(
            args=[*node.args[:index], bound.with_changes(value=changed), *node.args[index + 1 :]]
        )


def dropped_statements(block: cst.IndentedBlock) -> Iterable[cst.IndentedBlock]:
    """Each statement of a block left out (``pass`` instead of a block's only statement)."""
    body = list(block.body)
    for i, statement in enumerate(body):
        if _is_docstring(statement) or _is_pass(statement):
            continue
        rest = body[:i] + body[i + 1:]
        if not [s for s in rest if not _is_docstring(s)]:
            rest = body[:i] + [cst.SimpleStatementLine([cst.Pass()])] + body[i + 1:]
        yield block.with_changes(body=rest)


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.SimpleString)
    )


def _is_pass(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Pass) for s in statement.body
    )


# (node type, name, operator): the name is what the
# analysis reports and what an allow-list entry names.
OPERATORS = [
    (node_type, function.__name__.removeprefix("operator_"), function)
    for node_type, function in MUTMUT_OPERATORS
]
OPERATORS += [
    (cst.Call, "min_max", operator_min_max),
    (cst.Call, "unwrap_call", operator_unwrap_call),
    (cst.Call, "swap_arguments", operator_swap_arguments),
    (cst.Call, "range_bound", operator_range_bound),
    (cst.Return, "return_value", operator_return_value),
    (cst.ComparisonTarget, "flip_comparison", operator_flip_comparison),
    (cst.Integer, "number_down", operator_number_down),
    (cst.IndentedBlock, "drop_statement", dropped_statements),
]
