"""Realistic mistakes, graded as a fair grader would (issue 28), through the real autograder.

Reference: for each case, the points a fair grader gives (a part is lost for the rule it breaks, and
only that part), what the student's own check shows in the notebook (never a ✅ before a 0 for a
stated rule), and the words of the feedback. One case per mechanism of issue 28, at least three per
lab:

1. a stand-in in the shape the student chose (a set vocabulary, an in-place merge, an index of
   lists);
2. hidden tests as strong as the task (a Counter, an unchanged input, first-seen order, the error
   message);
3. checks that show what the grade takes (a second occurrence, a corpus that runs out of pairs,
   overlapping entities, morphemes outside the default list, an unclosed front matter, a heap that
   runs empty...);
4. hints from the actual difference (the count of merges before ties, '</w>' before order, the
   function that raised, "this uses your X, which fails its own check");
5. a helper in a cell added below the part that uses it;
6. time limits relative to the reference, timed in the same run, with the multiple in the feedback.

All the cases are graded in one batch (2 workers). Each was seen to fail on 98dab87 (see the
report).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import nbformat
import pytest

from autograder.batch.run import grade_folder
from autograder.labs import get_lab, nbgrader_meta
from bpe_labs.examples import make_submission


@dataclass(frozen=True)
class Mistake:
    case_id: str
    lab: str
    mechanism: int
    replace: dict
    lost: tuple[str, ...]  # the parts a fair grader takes; every other part keeps its points
    visible: dict = field(default_factory=dict)  # part -> text the student's own check prints
    message: dict = field(default_factory=dict)  # part -> text of the part's feedback
    added: tuple[str, str] = ()  # (after this cell's grade_id, a code cell the student added)


def swap(cell: str, old: str, new: str) -> dict:
    return {cell: [{"old": old, "new": new}]}


MERGE_BODY = """    merged = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == pair[0] and word[i + 1] == pair[1]:
            merged.append(word[i] + word[i + 1])
            i += 2
        else:
            merged.append(word[i])
            i += 1
    return merged
"""
MERGE_IN_PLACE = """    i = 0
    while i < len(word) - 1:
        if word[i] == pair[0] and word[i + 1] == pair[1]:
            word[i:i + 2] = [word[i] + word[i + 1]]
        i += 1
    return word
"""
PICK_AT_THE_END = "def pick_best(pair_counts):\n    return max(pair_counts, key=pair_counts.get)\n"
TOY_SET_VOCABULARY = {
    # bpe_initialize returns a set (the task allows it) with one symbol too many; learn_bpe adds to
    # the set
    "initialize_solution": [{"old": "    vocabulary = list(dict.fromkeys(symbol for word in corpus "
                             "for symbol in word))",
                             "new": "    vocabulary = {symbol for word in corpus for symbol in "
                             "word} | {' '}"}],
    "learn_solution": [{"old": "vocabulary.append(best[0] + best[1])",
                        "new": "vocabulary.add(best[0] + best[1])"}]}
GPT2_IN_PLACE = {
    # merge_pair overlaps (a bug) and updates splits in place, as the task allows; train_bpe relies
    # on that
    "merge_solution": [{"old": "                i += 2  # skip `b` too: a token belongs to at most "
                        "one merge\n", "new": "                i += 1\n"}],
    "train_solution": [{"old": "        splits = merge_pair(*best_pair, splits, word_freqs)",
                        "new": "        merge_pair(*best_pair, splits, word_freqs)"}]}
FAST_LISTS = {
    # build_index maps pairs to lists (the task asks for sets); train_fast is written for its own
    # lists
    "build_index_solution": [{"old": "index.setdefault(pair, set()).add(i)",
                              "new": "index.setdefault(pair, []).append(i)"}],
    "train_fast_solution": [{"old": "                index.setdefault(pair, set()).add(i)",
                             "new": "                index.setdefault(pair, []).append(i)"},
                            {"old": "        for i in sorted(index.get(best, ())):",
                             "new": "        for i in sorted(set(index.get(best, ()))):"}]}

CASES = [
    # toy_bpe
    Mistake(
        "toy-merge-first-only", "toy_bpe", 3,
        swap(
            "merge_solution", "            i += 2\n", "            return merged + word[i + 2:]\n"
        ), ("merge",), visible={"merge": "not only the first one"},
    ),
    Mistake(
        "toy-learn-one-short", "toy_bpe", 4,
        swap("learn_solution", "range(num_merges)", "range(num_merges - 1)"), ("learn",),
        visible={"learn": "should make 5 merges, got 4"},
        message={"learn": "fewer merges than num_merges although pairs were left"},
    ),
    Mistake(
        "toy-set-vocabulary", "toy_bpe", 1, TOY_SET_VOCABULARY, ("initialize",),
        message={
            "learn": "learn_bpe was graded with a reference bpe_initialize, because yours fails"
        },
    ),
    Mistake(
        "toy-helper-below", "toy_bpe", 5,
        swap(
            "learn_solution", "best = max(pair_counts, key=pair_counts.get)",
            "best = pick_best(pair_counts)",
        ), (), visible={"learn": "uses 'pick_best', which is not defined at this point"},
        message={"learn": "move that cell above the test"}, added=("tokenize", PICK_AT_THE_END),
    ),
    Mistake(
        "toy-merge-overlaps-hint", "toy_bpe", 4,
        swap("merge_solution", "            i += 2\n", "            i += 1\n"), ("merge",),
        visible={"learn": "This uses your merge_pair_in_word, which fails its own check"},
    ),
    # africa_galore
    Mistake(
        "africa-merge-in-place",
        "africa_galore",
        2,
        swap("merge_solution", MERGE_BODY, MERGE_IN_PLACE),
        ("merge",),
        visible={"merge": "changed the list it was given"},
        message={"merge": "leave the input list unchanged"},
    ),
    Mistake(
        "africa-pairs-in-a-dict",
        "africa_galore",
        2,
        {
            "pair_frequencies_solution": [
                {"old": "counts = Counter()", "new": "counts = {}"},
                {"old": "counts[pair] += 1", "new": "counts[pair] = counts.get(pair, 0) + 1"},
            ]
        },
        ("pair_frequencies",),
        visible={"pair_frequencies": "should return a collections.Counter"},
        message={"pair_frequencies": "not in a collections.Counter"},
    ),
    Mistake(
        "africa-tokenize-no-end-of-word",
        "africa_galore",
        4,
        swap("tokenize_solution", "list(word) + [END_OF_WORD]", "list(word)"),
        ("tokenize",),
        visible={"tokenize": "every word ends with the symbol '</w>'"},
        message={"tokenize": "every word must end with the symbol '</w>'"},
    ),
    Mistake(
        "africa-learn-before-its-helper",
        "africa_galore",
        4,
        swap(
            "pair_frequencies_solution",
            "    counts = Counter()\n",
            "    raise NotImplementedError()\n    counts = Counter()\n",
        ),
        ("pair_frequencies",),
        visible={"learn": "learn_bpe calls get_pair_frequencies, which is not written yet"},
    ),
    Mistake(
        "africa-fast-naive-multiple",
        "africa_galore",
        6,
        swap(
            "learn_fast_solution",
            "    # A Counter keeps the distinct words in the order they first appear, which "
            "keeps ties as in learn_bpe.\n",
            "    merges, vocabulary, _ = learn_bpe(dataset, num_merges)\n    return merges, "
            "vocabulary\n",
        ),
        ("learn_fast",),
        visible={"learn_fast": "❌ Right merges, but learn_bpe_fast took"},
        message={
            "learn_fast": "counting the words once, measured in this grading run; the limit is 10×"
        },
    ),
    # ny_constitution
    Mistake(
        "ny-error-one-character",
        "ny_constitution",
        2,
        swap("tokenize_solution", "{chunk[position:position + 30]!r}", "{chunk[position]!r}"),
        ("tokenize",),
        visible={"tokenize": "should contain the text from the position no token matches on, '?!'"},
    ),
    Mistake(
        "ny-build-one-too-many",
        "ny_constitution",
        4,
        swap(
            "build_vocab_solution",
            "while len(vocab) < target_size and pair_counts:",
            "while len(vocab) <= target_size and pair_counts:",
        ),
        ("build_vocab",),
        visible={"build_vocab": "13 tokens, 12 expected"},
    ),
    Mistake(
        "ny-build-merges-in-old-tokens",
        "ny_constitution",
        3,
        swap(
            "build_vocab_solution",
            "if i == len(starts) or starts[i] != position or len(tokens[i]) >= len(new_token):",
            "if i + 1 >= len(starts) or starts[i] != position or tokens[i] + tokens[i + 1] != "
            "new_token:",
        ),
        ("build_vocab",),
        visible={"build_vocab": "merging the pair inside the old tokens is not the same"},
    ),
    Mistake(
        "ny-next-pair-ties-sorted",
        "ny_constitution",
        3,
        swap(
            "next_pair_solution",
            "    return max(counts, key=counts.get)",
            "    return max(sorted(counts), key=counts.get)",
        ),
        ("next_pair",),
        visible={"next_pair": "and ('b', 'a') is seen first (do not sort)"},
    ),
    # gpt2_bpe
    Mistake(
        "gpt2-merge-in-place",
        "gpt2_bpe",
        1,
        GPT2_IN_PLACE,
        ("merge",),
        message={"train": "train_bpe was graded with a reference merge_pair, because yours fails"},
    ),
    Mistake(
        "gpt2-merge-first-only",
        "gpt2_bpe",
        3,
        swap(
            "merge_solution",
            "                i += 2  # skip `b` too: a token belongs to at most one merge\n",
            "                merged += split[i + 2:]\n                break\n",
        ),
        ("merge",),
        visible={"merge": "every occurrence, not only the first"},
    ),
    Mistake(
        "gpt2-train-never-stops",
        "gpt2_bpe",
        3,
        swap(
            "train_solution",
            "        if not pair_freqs:\n            break  # every word is a single token: "
            "nothing left to merge\n",
            "",
        ),
        ("train",),
        visible={"train": "❌ raised ValueError"},
    ),
    Mistake(
        "gpt2-pairs-unweighted-hint",
        "gpt2_bpe",
        4,
        swap(
            "pair_freqs_solution", "pair_freqs.get(pair, 0) + freq", "pair_freqs.get(pair, 0) + 1"
        ),
        ("pair_freqs",),
        visible={"train": "This uses your compute_pair_freqs, which fails its own check"},
    ),
    # corpus_prep
    Mistake(
        "prep-stats-sorted",
        "corpus_prep",
        2,
        swap("get_stats_solution", "    return pairs", "    return dict(sorted(pairs.items()))"),
        ("get_stats",),
        visible={"get_stats": "do not sort"},
        message={"learn": "learn_bpe was graded with a reference get_stats, because yours fails"},
    ),
    Mistake(
        "prep-entity-first-in-list",
        "corpus_prep",
        3,
        swap(
            "protected_tokenize_solution",
            'entity_words = sorted((re.findall(r"\\w+", entity.lower()) for entity in '
            "entities), key=len, reverse=True)",
            'entity_words = [re.findall(r"\\w+", entity.lower()) for entity in entities]',
        ),
        ("protected",),
        visible={"protected": "the one with the most words wins"},
    ),
    Mistake(
        "prep-unclosed-front-matter",
        "corpus_prep",
        3,
        swap(
            "process_document_solution",
            'if lines and lines[0] == "---" and "---" in lines[1:]:',
            'if lines and lines[0] == "---":',
        ),
        ("process_document",),
        visible={"process_document": "❌ process_document('---\\ntitle: Unclosed"},
    ),
    Mistake(
        "prep-lab-morphemes",
        "corpus_prep",
        3,
        {
            "protected_solution": [
                {
                    "old": "stem, suffix = split_suffix(word, morphemes)",
                    "new": "stem, suffix = split_suffix(word, MORPHEMES)",
                },
                {
                    "old": "frozen = {morpheme + END_OF_WORD for morpheme in morphemes}",
                    "new": "frozen = {morpheme + END_OF_WORD for morpheme in MORPHEMES}",
                },
            ]
        },
        ("protected",),
        visible={"protected": "use the morphemes given, not the lab's MORPHEMES"},
    ),
    # fast_bpe
    Mistake(
        "fast-index-of-lists",
        "fast_bpe",
        1,
        FAST_LISTS,
        ("build_index",),
        visible={"build_index": "should map every pair to a set"},
    ),
    Mistake(
        "fast-heap-runs-empty",
        "fast_bpe",
        3,
        swap("train_fast_solution", "        if not tied:\n            break\n", ""),
        ("train_fast", "train_fast_lexicographic"),
        visible={"train_fast": "❌ train_fast({'ab': 1}, 5) raised ValueError"},
    ),
    Mistake(
        "fast-trainer-before-its-helper",
        "fast_bpe",
        4,
        swap(
            "count_pairs_solution",
            "    counts = Counter()\n",
            "    raise NotImplementedError()\n    counts = Counter()\n",
        ),
        ("count_pairs",),
        visible={"train_fast": "train_fast calls count_pairs, which is not written yet"},
    ),
]


def submission(case: Mistake) -> nbformat.NotebookNode:
    nb = make_submission({"lab": case.lab, "id": case.case_id, "fill": "solution",
                          "replace": case.replace, "spec": "-"})
    if case.added:
        after, source = case.added
        index = next(i for i, cell in enumerate(nb.cells)
                     if nbgrader_meta(cell).get("grade_id") == after)
        nb.cells.insert(index + 1, nbformat.v4.new_code_cell(source))
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mistakes")
    for case in CASES:
        nbformat.write(submission(case), folder / f"{case.case_id}.ipynb")
    results = grade_folder(folder, tmp_path_factory.mktemp("mistakes-out"), workers=2,
                           progress=False)
    return {result.student_id: result for result in results}


def test_every_mechanism_and_every_lab_has_its_cases():
    assert {case.mechanism for case in CASES} == {1, 2, 3, 4, 5, 6}
    for lab_id in ("toy_bpe", "africa_galore", "ny_constitution", "gpt2_bpe", "corpus_prep",
                   "fast_bpe"):
        assert sum(case.lab == lab_id for case in CASES) >= 3, lab_id


@pytest.mark.parametrize("case", CASES, ids=[case.case_id for case in CASES])
def test_graded_as_a_fair_grader_would(case, graded):
    result = graded[case.case_id]
    assert result.status == "graded", result.message
    lab = get_lab(case.lab)
    fair = {part.part_id: 0 if part.part_id in case.lost else part.points for part in lab.parts}
    assert {part_id: part.score for part_id, part in result.parts.items()} == fair, \
        {part_id: part.message for part_id, part in result.parts.items() if not part.passed}
    for part_id in case.lost:  # no ✅ before a 0 for a rule the task states
        assert "❌" in result.parts[part_id].visible_check, result.parts[part_id].visible_check
    for part_id, text in case.visible.items():
        assert text in result.parts[part_id].visible_check, result.parts[part_id].visible_check
    for part_id, text in case.message.items():
        assert text in result.parts[part_id].message, result.parts[part_id].message
