"""A check that fails because of an earlier function of the
student's names that function, and only that (issue 32).

Reference: the grade of a part uses the course's version of an earlier function whose own
part fails ("one bug, one part", docs/AUTHORING.md), so the part's own code may well be
right: its check must not send the student to rewrite it. Each case plants one mistake in
an earlier function, runs the solution notebook in this process up to the later part's
check (tests/contracts.py) and reads what that check printed: one ❌ that names the earlier
function (and, in lab 7, the rule it breaks), and none of the later part's own advice.
"""
from __future__ import annotations

import pytest

from autograder.labs import get_lab
from contracts import try_mistake

PRETOKENIZE_WITHOUT_SPACE_RULE = {
    "pretokenize_solution": [
        {
            "old": "regex.findall(GPT2_SPLIT_PATTERN, piece)",
            "new": 'regex.findall(GPT2_SPLIT_PATTERN.replace(r"|\\s+(?!\\S)", ""), piece)',
        }
    ]
}
SPLIT_UNSORTED = {
    "special_tokens_solution": [
        {
            "old": "longest_first = sorted(special_tokens, key=len, reverse=True)",
            "new": "longest_first = special_tokens",
        }
    ]
}
SPLIT_NOT_WRITTEN = {
    "special_tokens_solution": [
        {
            "old": "    if not special_tokens:\n",
            "new": "    raise NotImplementedError()\n    if not special_tokens:\n",
        }
    ]
}
MERGE_OVERLAPS = {
    "merge_solution": [{"old": "            i += 2\n", "new": "            i += 1\n"}]
}

CASES = [
    # lab, later function (its part), the mistake, what the
    # check names, the later part's own advice it must not give
    (
        "bpe_tokenizer",
        "encode_iterable",
        PRETOKENIZE_WITHOUT_SPACE_RULE,
        "❌ This uses your pretokenize, which does not keep GPT-2's `\\s+(?!\\S)`",
        "hold the last one back",
    ),
    (
        "bpe_tokenizer",
        "encode",
        SPLIT_UNSORTED,
        "❌ This uses your split_on_special_tokens (through your pretokenize), "
        "which does not let the longest special token win",
        "use pretokenize",
    ),
    (
        "bpe_tokenizer",
        "encode",
        SPLIT_NOT_WRITTEN,
        "❌ This uses your split_on_special_tokens (through your pretokenize), "
        "which is not written yet",
        "fill in the cell above",
    ),
    (
        "toy_bpe",
        "learn_bpe",
        MERGE_OVERLAPS,
        "❌ This uses your merge_pair_in_word, which fails its own check: fix that first",
        "Expected the merges",
    ),
]


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{lab}-{function}-{named[:40]}" for lab, function, _, named, _ in CASES]
)
def test_the_check_names_the_earlier_function_and_nothing_else(case):
    lab_id, function, mistake, named, advice = case
    printed = try_mistake(get_lab(lab_id), function, mistake, hidden=False).printed
    assert printed.startswith(named), printed
    assert printed.count("❌") == 1 and advice not in printed and "✅" not in printed, printed
