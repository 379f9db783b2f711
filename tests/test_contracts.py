"""One contract per function: every rule a lab's task states has a public example in the student's
own check and a hidden test, and no ✅ comes before a 0 for it.

Reference: each lab's contract page, ``docs/labs/<lab_id>.md`` (tests/contracts.py reads it). For
every rule, the example's code is in the lab's visible checks and the hidden test's code in the
part's hidden tests; the rule's mistake, planted in the solution, makes the student's own check
print ❌ and the part's hidden tests fail. Generic over labs: a lab without a contract page fails
here.
"""
from __future__ import annotations

import pytest

from autograder.labs import all_labs
from bpe_labs.examples import load_cases
from contracts import (
    answer_function_names, check_source, contract_path, part_of, read_contract, try_mistake,
)

LABS = list(all_labs().values())
RULES = [(lab, rule, mistakes) for lab in LABS if contract_path(lab.lab_id).exists()
         for rules, mistakes in [read_contract(lab.lab_id)] for rule in rules]


def rule_id(case) -> str:
    lab, rule, _ = case
    return f"{lab.lab_id}-{rule.number}-{rule.mistake}"


@pytest.mark.parametrize("lab", LABS, ids=[lab.lab_id for lab in LABS])
def test_every_lab_has_a_contract_for_every_function(lab):
    assert contract_path(lab.lab_id).exists(), (
        f"{lab.lab_id} has no contract page: write docs/labs/{lab.lab_id}.md"
    )
    rules, mistakes = read_contract(lab.lab_id)
    functions = answer_function_names(lab)
    assert rules, f"{lab.lab_id}: the contract table has no rule"
    assert {rule.function for rule in rules} - set(functions) == set(), (
        "a rule of a function the lab does not have"
    )
    tested = {(name, part.part_id) for part in lab.parts for name in part.functions}
    ruled = {(rule.function, part_of(lab, rule.function, rule.part).part_id) for rule in rules}
    assert tested <= ruled, f"functions (and parts) without a rule: {tested - ruled}"
    assert [rule.number for rule in rules] == [str(n) for n in range(1, len(rules) + 1)], (
        "rules are numbered 1, 2, ..."
    )
    named = {rule.mistake for rule in rules if not rule.mistake.startswith("example:")}
    assert named == set(mistakes), (
        f"mistakes without a rule, or rules without their mistake: {named ^ set(mistakes)}"
    )


@pytest.mark.parametrize("case", RULES, ids=[rule_id(case) for case in RULES])
def test_the_rule_has_its_public_example_and_its_hidden_test(case):
    lab, rule, _ = case
    assert rule.example and rule.example in check_source(lab), (
        f"the public example `{rule.example}` is not in the visible checks"
    )
    hidden = part_of(lab, rule.function, rule.part).hidden_tests
    assert rule.hidden and rule.hidden in hidden, (
        f"the hidden test `{rule.hidden}` is not in the hidden tests of {rule.function}"
    )


@pytest.mark.parametrize("case", RULES, ids=[rule_id(case) for case in RULES])
def test_the_rules_mistake_shows_in_the_check_and_costs_the_part(case):
    lab, rule, mistakes = case
    if rule.mistake.startswith("example:"):  # graded through the real autograder by test_examples
        example = {c["id"]: c for c in load_cases()}[rule.mistake.removeprefix("example:")]
        part = part_of(lab, rule.function, rule.part).part_id
        assert example["lab"] == lab.lab_id and example["expected"][part] == 0, (
            "the example must cost the part"
        )
        assert "❌" in str(example.get("visible_check", {}).get(part, "")), (
            "the example must say what ❌ its check shows"
        )
        return
    tried = try_mistake(lab, rule.function, mistakes[rule.mistake], rule.part)
    assert "❌" in tried.printed and "✅" not in tried.printed, (
        f"the check did not show the mistake: {tried.printed!r}"
    )
    assert tried.hidden_failed, "the hidden tests did not catch the mistake"


@pytest.mark.parametrize("lab", LABS, ids=[lab.lab_id for lab in LABS])
def test_the_solution_gets_every_checks_tick(lab):
    """The baseline of the mistakes above: the solution itself gets ✅ from every check (that it
    passes every hidden test, nbval shows: it runs the solution notebooks with their hidden
    tests)."""
    for part in lab.parts:
        if part.functions:
            tried = try_mistake(lab, part.functions[0], None, part.part_id, hidden=False)
            assert "✅" in tried.printed and "❌" not in tried.printed, (
                part.part_id, tried.printed,
            )
