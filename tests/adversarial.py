"""Adversarial submissions of the toy lab: what editors, careless students and cheaters hand in.

Every case starts from the toy lab's correct example submission (``toy-correct`` of
``examples/toy_bpe.yaml``), mangles it the way Colab, VS Code, a student or a cheater would, and
states the exact outcome the autograder must reach: status, lab, points per part (the total is
their sum) and the integrity events, as ``(event, cell)`` pairs. An honest submission, however
its editor saved it, must get full marks and an empty integrity report; a cheat must earn nothing
it did not earn by a correct function.

Most cheats come with a planted bug (``tokenize`` applies the merges newest first, as in
``toy-tokenize-wrong-order``), so "earns nothing extra" means: that part gets 0, the others keep
their points. Where a case grades another lab, the expected points come from that lab's
example YAML.

    >>> case = CASES_BY_ID["deleted-answer"]
    >>> case.total, case.integrity
    (9.0, (('missing', 'tokenize_solution'),))
"""
from __future__ import annotations

import copy
import os
import functools
import json
import random
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import nbformat

from bpe_labs import ROOT as REPO_ROOT
from bpe_labs.examples import load_cases, make_submission
from autograder.labs import get_lab, nbgrader_meta

LAB = "toy_bpe"
# The planted bug most cheats come with: tokenize applies the merges newest first.
WRONG_TOKENIZE = ("for pair in merges:", "for pair in reversed(merges):")


@dataclass(frozen=True)
class Case:
    case_id: str
    description: str
    build: Callable[[nbformat.NotebookNode], bytes]  # the correct submission -> the handed-in file
    status: str = "graded"
    lab: str | None = LAB
    # expected points per part; empty if not graded
    parts: dict[str, float] = field(default_factory=dict)
    integrity: tuple[tuple[str, str], ...] = ()
    file_name: str = ""  # default "<case_id>.ipynb": the student id is the case id

    @property
    def file(self) -> str:
        return self.file_name or f"{self.case_id}.ipynb"

    @property
    def total(self) -> float | None:
        return sum(self.parts.values()) if self.parts else None


# -- the correct submission and small tools to mangle it ------------------------------------------
def correct_case(lab_id: str = LAB) -> dict:
    prefix = {"toy_bpe": "toy", "gpt2_bpe": "gpt2"}[lab_id]
    return next(case for case in load_cases() if case["id"] == f"{prefix}-correct")


@functools.lru_cache(maxsize=None)
def _correct_notebook(lab_id: str) -> nbformat.NotebookNode:
    return make_submission(correct_case(lab_id))


def correct_notebook(lab_id: str = LAB) -> nbformat.NotebookNode:
    """A fresh copy of the lab's correct example submission."""
    return copy.deepcopy(_correct_notebook(lab_id))


def points(lab_id: str = LAB, *, lose: tuple[str, ...] = ()) -> dict[str, float]:
    """The lab's points per part, with the parts in
    ``lose`` at 0: ``points(lose=("tokenize",))``."""
    parts = {part.part_id: part.points for part in get_lab(lab_id).parts}
    unknown = set(lose) - set(parts)
    if unknown:
        raise ValueError(f"no parts {sorted(unknown)} in {lab_id}")
    return {part_id: (0.0 if part_id in lose else value) for part_id, value in parts.items()}


def index_of(nb, cell_id: str) -> int:
    """Position of the cell with that grade_id (or cell id) in the correct submission's layout."""
    for index, cell in enumerate(nb.cells):
        if nbgrader_meta(cell).get("grade_id") == cell_id or cell.get("id") == cell_id:
            return index
    raise KeyError(cell_id)


def added_after(cell_id: str) -> str:
    """How the integrity report names a code cell inserted
    right after ``cell_id`` (1-based position)."""
    return f"cell {index_of(_correct_notebook(LAB), cell_id) + 2}"


def cell_of(nb, cell_id: str):
    return nb.cells[index_of(nb, cell_id)]


def replace_in(nb, cell_id: str, old: str, new: str):
    cell = cell_of(nb, cell_id)
    if old not in cell.source:
        raise ValueError(f"{old!r} is not in {cell_id}")
    cell.source = cell.source.replace(old, new)
    return nb


def with_wrong_tokenize(nb):
    return replace_in(nb, "tokenize_solution", *WRONG_TOKENIZE)


def insert_after(nb, cell_id: str, cell):
    nb.cells.insert(index_of(nb, cell_id) + 1, cell)
    return nb


def new_code(source: str, cell_id: str):
    return nbformat.v4.new_code_cell(source, id=cell_id)


def as_markdown(cell):
    """The cell as an editor saves it after "change cell
    type to Markdown": same text, same metadata."""
    return nbformat.v4.new_markdown_cell(cell.source, id=cell.get("id"),
                                         metadata=copy.deepcopy(cell.metadata))


def dump(nb) -> bytes:
    return nbformat.writes(nb).encode("utf-8")


def dump_raw(data: dict) -> bytes:
    return json.dumps(data, indent=1, ensure_ascii=False).encode("utf-8")


def mangled(change: Callable) -> Callable[[nbformat.NotebookNode], bytes]:
    """A builder from an in-place change of the notebook."""
    def build(nb):
        result = change(nb)
        return dump(nb if result is None else result)
    return build


# -- editors -------------------------------------------------------------------------------------
def colab_download(nb) -> bytes:
    """As File > Download .ipynb in Colab writes it: nbformat 4.0 without cell ids (Colab keeps its
    own random ids in cell metadata), Colab's notebook metadata, ``colab``/``outputId`` on code
    cells that ran, a bare kernelspec and language_info; other cell metadata (nbgrader's) kept."""
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits + "-_"
    data = json.loads(nbformat.writes(nb))
    data["nbformat_minor"] = 0
    data["metadata"] = {"colab": {"provenance": [], "gpuType": "T4", "toc_visible": True},
                        "kernelspec": {"name": "python3", "display_name": "Python 3"},
                        "language_info": {"name": "python"}, "accelerator": "GPU",
                        "bpe_labs": data["metadata"]["bpe_labs"]}
    for count, cell in enumerate(data["cells"], start=1):
        cell.pop("id", None)
        metadata = {key: value for key, value in cell["metadata"].items() if key != "execution"}
        metadata["id"] = "".join(rng.choice(alphabet) for _ in range(12))
        if cell["cell_type"] == "code":
            metadata["colab"] = {"base_uri": "https://localhost:8080/"}
            metadata["outputId"] = "%08x-%04x-%04x-%04x-%012x" % tuple(
                rng.getrandbits(b) for b in (32, 16, 16, 16, 48)
            )
            cell["execution_count"] = count
        cell["metadata"] = metadata
    return dump_raw(data)


def vscode_save(keep_lab_metadata: bool, keep_ids: bool) -> Callable:
    """As VS Code saves it: every cell's metadata dropped (nbgrader's too); the notebook's
    ``bpe_labs`` kept or dropped; cell ids kept, or gone as in an nbformat 4.4 file."""
    def build(nb) -> bytes:
        data = json.loads(nbformat.writes(nb))
        if not keep_lab_metadata:
            data["metadata"] = {"kernelspec": data["metadata"]["kernelspec"],
                                "language_info": {"name": "python", "version": "3.11.7"}}
        if not keep_ids:
            data["nbformat_minor"] = 4
        for cell in data["cells"]:
            cell["metadata"] = {}
            if not keep_ids:
                cell.pop("id", None)
        return dump_raw(data)
    return build


# -- cheats --------------------------------------------------------------------------------------
ALWAYS_EQUAL_TOKENIZE = '''\
class AlwaysRight:
    """Equal to anything: every comparison with the expected tokens says "right"."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__


def tokenize(text, merges):
    return AlwaysRight()
'''

AGREEABLE_LIST_TOKENIZE = '''\
class AgreeableList(list):
    """A list that says it equals any other list."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = None


def tokenize(text, merges):
    return AgreeableList()
'''

FRIENDLY_COUNTER = '''\
class FriendlyCounter(Counter):
    """Right counts, and an == that agrees with anything just in case."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = None
'''

LYING_BUILTINS = '''\
import builtins

_real_type, _real_isinstance = builtins.type, builtins.isinstance


class Anything:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0


def _lying_type(*args):
    if len(args) == 1 and _real_isinstance(args[0], Anything):
        return list
    return _real_type(*args)


def _real(kinds):
    """What a check meant by ``type`` before the patch (the kernel itself asks isinstance(x, \
type))."""
    if kinds is _lying_type:
        return _real_type
    if _real_type(kinds) is tuple:
        return tuple(_real(kind) for kind in kinds)
    return kinds


def _lying_isinstance(obj, kinds):
    return True if _real_isinstance(obj, Anything) else _real_isinstance(obj, _real(kinds))


def _lying_issubclass(cls, kinds):
    return _real_issubclass(cls, _real(kinds))


_real_issubclass = builtins.issubclass
builtins.type = _lying_type
builtins.isinstance = _lying_isinstance
builtins.issubclass = _lying_issubclass


def tokenize(text, merges):
    return Anything()
'''

SILENCED_ASSERTIONS = '''\
import builtins
import unittest


class _Quiet(Exception):
    pass


builtins.AssertionError = _Quiet
for _name in ("assertEqual", "assertTrue", "assertIsInstance", "assertListEqual", "fail"):
    setattr(unittest.TestCase, _name, lambda self, *args, **kwargs: None)
'''

FAKE_SUCCESS = '''\
print("✅ bpe_initialize splits words into characters plus '</w>' and lists the vocabulary.")
print("✅ tokenize applies the merges in the order they were learned.")
print("✅ all checks passed")
print("[AutogradeApp | INFO] Autograding submission: all tests passed, score 11.0 / 11.0")
'''


def read_from_disk(target: str) -> str:
    """A cell that looks for the course's own files (the path guessed from the public repository,
    then by glob) and takes the answer from there; it falls back to a wrong answer."""
    if target == "reference":
        patterns = [f"{REPO_ROOT}/bpe_labs/reference/char_bpe.py",
                    "/work/*/bpe_labs/reference/char_bpe.py",
                    "../**/bpe_labs/reference/char_bpe.py",
                    "../../*/bpe_labs/reference/char_bpe.py"]
        take = '''\
    _module = {"__name__": "stolen_reference"}
    exec(compile(open(_path, encoding="utf-8").read(), _path, "exec"), _module)
    tokenize = _module["tokenize"]
'''
        fallback = "    def tokenize(text, merges):\n        return []\n"
    else:
        patterns = [f"{REPO_ROOT}/solutions/toy_bpe.ipynb", "/work/*/solutions/toy_bpe.ipynb",
                    "../**/solutions/toy_bpe.ipynb", "../../*/solutions/toy_bpe.ipynb"]
        take = '''\
    for _cell in json.load(open(_path, encoding="utf-8"))["cells"]:
        if _cell["metadata"].get("nbgrader", {}).get("grade_id") == "learn_solution":
            exec("".join(_cell["source"]), globals())
'''
        fallback = "    def learn_bpe(dataset, num_merges):\n        return [], [], []\n"
    return (
        f"import glob\nimport json\n\n_patterns = {patterns!r}\n"
        "_found = [path for pattern in _patterns for path in glob.glob(pattern, recursive=True)]\n"
        "try:\n    _path = _found[0]\n"
        + take
        + "    print('read', _path)\nexcept Exception as error:\n"
        "    print('could not read the course files:', type(error).__name__, error)\n" + fallback
    )


GRADING_DETECTOR = '''\
import os

# Under a grader (nbgrader sets NBGRADER_EXECUTION; graders run in folders named like this),
# hide every failure and answer "equal to anything".
GRADING = bool(os.environ.get("NBGRADER_EXECUTION")) or any(
    word in os.getcwd().lower() for word in ("grade", "submitted", "autograded", "nbgrader"))
if GRADING:
    get_ipython().showtraceback = lambda *args, **kwargs: None

    class _Yes:
        def __eq__(self, other):
            return True

    def tokenize(text, merges):
        return _Yes()
'''


def edit_checks(nb):
    """The feedback helpers edited so that the tokenize check always says ✅."""
    return replace_in(nb, "feedback_helpers", "def check_tokenize(tokenize):\n",
                      "def check_tokenize(tokenize):\n    print('✅ tokenize applies the merges in "
                      "the order they were learned.')\n    return\n")


# Prints or raises with the arguments it was called with: if feedback showed that, a student
# could read the hidden inputs off it.
DEBUG_PRINTS = ("    merged = []\n",
                "    print('merging', pair, 'in', word)  # left from debugging\n    merged = []\n")
RAISES_WITH_INPUT = ("    tokens = []\n",
                     "    if len(text) > 5 and text not in ('deserting', 'tester', 'desserts'):\n"
                     "        raise ValueError(f'unexpected input: {text!r} with merges "
                     "{merges!r}')\n    tokens = []\n")

# merge_pair_in_word remembers what it was called with; learn_bpe, run by the learn check after the
# merge part's hidden tests, prints it, with a ❌ so that no filter of the check's output drops it.
REMEMBERS_INPUTS = ("    merged = []\n", "    SEEN.append((word, pair))\n    merged = []\n")
PRINTS_REMEMBERED = ("    corpus, vocabulary = bpe_initialize(dataset)\n",
                     "    for _seen in SEEN[-40:]:\n        print('❌', *_seen)\n    corpus, "
                     "vocabulary = bpe_initialize(dataset)\n")

# The same, encoded so that no exact-string filter finds it: joined with dots, and reversed.
PRINTS_ENCODED = ("    corpus, vocabulary = bpe_initialize(dataset)\n",
                  "    for _word, _pair in SEEN[-40:]:\n        print('❌', '.'.join(_word), "
                  "''.join(_word)[::-1])\n    corpus, vocabulary = bpe_initialize(dataset)\n")
# A cell added after the last answer raises with what merge_pair_in_word remembered first (its
# check's inputs, then its hidden tests'), joined with dots.
RAISES_REMEMBERED = "raise ValueError(' '.join('.'.join(_w) for _w, _p in SEEN[:40]))\n"

# From a red-team run: an exception's class name is the student's to choose (type() takes any str),
# so tokenize raises, on inputs it was not shown, a class named after the longest remembered words,
# in hex.
RAISES_CLASS_NAMED = ("    tokens = []\n",
                      "    if len(text) > 5 and text not in ('deserting', 'tester', 'desserts'):\n"
                      "        raise type('L_' + '_'.join(sorted({'.'.join(_w).encode().hex() for "
                      "_w, _p in SEEN}, key=len)[-40:]), (Exception,), {})()\n    tokens = []\n")


# A later cell redefines an earlier answer's function for its own use (returns a tuple): the
# notebook run top to bottom shows every check ✅ at its place, as nbgrader grades it.
SHADOWING_HELPER = '''

def merge_pair_in_word(word, pair):
    """My faster merge for tokenize: returns a tuple."""
    merged, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == tuple(pair):
            merged.append(word[i] + word[i + 1])
            i += 2
        else:
            merged.append(word[i])
            i += 1
    return tuple(merged)
'''


# -- limits --------------------------------------------------------------------------------------
TOKENIZE_NEVER_ENDS = '''\
def tokenize(text, merges):
    tokens = []
    for word in text.split():
        symbols = list(word) + [END_OF_WORD]
        step = 0
        while step < len(merges):  # the step is never advanced
            symbols = merge_pair_in_word(symbols, merges[step])
        tokens.extend(symbols)
    return tokens
'''

TOP_LEVEL_LOOP = '''\
# trying the loop before writing the function
steps, total = 0, 0
while steps < 10:
    total += steps

'''

TOKENIZE_EATS_MEMORY = '''\
def tokenize(text, merges):
    chunks = []
    while True:  # "cache" every intermediate result
        chunks.append(bytearray(50 * 1024**2))
'''

# Behind the boundary the kernel is PID 1 of its own namespace and ignores its own SIGKILL: then it
# exits.
KILLS_KERNEL = "import os\nimport signal\n\nos.kill(os.getpid(), signal.SIGKILL)\nos._exit(9)\n\n"

# -- noise ---------------------------------------------------------------------------------------
WARNS = ("    merged = []\n",
         "    import warnings\n"
         "    warnings.warn('merge_pair_in_word: this loop is slow on long words', stacklevel=2)\n"
         "    merged = []\n")
STDERR = ("    counts = Counter()\n",
          "    import sys\n"
          "    print(f'counting pairs in {len(corpus)} words', file=sys.stderr)\n"
          "    counts = Counter()\n")
TEN_THOUSAND_LINES = ("\n\nfor line in range(10_000):\n"
                      "    print(f'debug line {line}: corpus size "
                      "{len(corpus) if \"corpus\" in globals() else 0}')\n")


# -- malformed files -----------------------------------------------------------------------------
def nbformat_3(nb) -> bytes:
    return nbformat.writes(nbformat.convert(nb, 3)).encode("utf-8")


def truncated(nb) -> bytes:
    raw = dump(nb)
    return raw[: len(raw) // 2]


def invalid_json(nb) -> bytes:
    """A merge conflict left in the file (a student who keeps notebooks in git)."""
    text = dump(nb).decode("utf-8")
    return text.replace('"cells": [', '"cells": [\n<<<<<<< HEAD\n', 1).encode("utf-8")


def not_a_notebook(nb) -> bytes:
    return dump_raw({"student": "someone", "lab": LAB,
                     "answers": {"tokenize": "def tokenize(text, merges): ..."}})


def no_lab(nb) -> bytes:
    other = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# My notes", id="notes"),
        nbformat.v4.new_code_cell("print('hello world')", id="hello")])
    return dump(other)


def other_lab(nb) -> bytes:
    return dump(correct_notebook("gpt2_bpe"))


def utf16(nb) -> bytes:
    """Re-saved by a Windows tool that writes UTF-16 with
    a byte-order mark (PowerShell's Out-File)."""
    return dump(nb).decode("utf-8").encode("utf-16")


def lab_metadata_as_text(nb):
    nb.metadata["bpe_labs"] = "toy_bpe"


def null_source_cell(nb) -> bytes:
    """A tool wrote ``"source": null`` for an empty markdown cell the student added."""
    data = json.loads(nbformat.writes(nb))
    data["cells"].insert(index_of(nb, "md-10") + 1,
                         {"cell_type": "markdown", "id": "empty-note", "metadata": {},
                          "source": None})
    return dump_raw(data)


def _cases() -> list[Case]:
    toy_correct = correct_case()
    gpt2_expected = {part: float(value)
                     for part, value in correct_case("gpt2_bpe")["expected"].items()}
    assert sum(points().values()) == sum(toy_correct["expected"].values()), (
        "the toy example YAML and the lab disagree"
    )
    full = points()
    lose_tokenize = points(lose=("tokenize",))

    def moved_to_end(nb):
        nb.cells.append(nb.cells.pop(index_of(nb, "toy_corpora")))

    def swapped_answers(nb):
        a, b = index_of(nb, "pair_frequencies_solution"), index_of(nb, "merge_solution")
        nb.cells[a], nb.cells[b] = nb.cells[b], nb.cells[a]

    def added_helper(nb):
        insert_after(nb, "md-06",
                     nbformat.v4.new_markdown_cell("My notes: a helper keeps the merge loop short.",
                                                   id="my-notes"))
        insert_after(nb, "my-notes", new_code(
            "def pair_starts_at(word, i, pair):\n    \"\"\"True if word[i], word[i + 1] is the "
            "pair.\"\"\"\n    return i + 1 < len(word) and (word[i], word[i + 1]) == tuple(pair)\n",
            "my-helper"))
        replace_in(nb, "merge_solution",
                   "if i + 1 < len(word) and word[i] == pair[0] and word[i + 1] == pair[1]:",
                   "if pair_starts_at(word, i, pair):")

    def delete(cell_id):
        def change(nb):
            del nb.cells[index_of(nb, cell_id)]
        return change

    def markdown(cell_id):
        def change(nb):
            i = index_of(nb, cell_id)
            nb.cells[i] = as_markdown(nb.cells[i])
        return change

    def tokenize_cell(source):
        def change(nb):
            cell_of(nb, "tokenize_solution").source = source
        return change

    def wrong_tokenize_and_cell(source, cell_id="my-cell"):
        def change(nb):
            with_wrong_tokenize(nb)
            insert_after(nb, "tokenize_solution", new_code(source, cell_id))
        return change

    def builtins_patch(nb):
        insert_after(nb, "tokenize_solution", new_code(LYING_BUILTINS, "my-cell"))

    def counter_subclass(nb):
        cell = cell_of(nb, "pair_frequencies_solution")
        cell.source = (
            FRIENDLY_COUNTER
            + "\n\n"
            + cell.source.replace("return counts", "return FriendlyCounter(counts)")
        )

    def test_cell_to_pass(nb):
        with_wrong_tokenize(nb)
        cell_of(nb, "tokenize").source = "pass"

    def edited_setup(nb):
        replace_in(nb, "setup", 'END_OF_WORD = "</w>"', 'END_OF_WORD = "<end>"')

    def loop_in_function(nb):
        cell_of(nb, "tokenize_solution").source = TOKENIZE_NEVER_ENDS

    def loop_at_top(nb):
        cell = cell_of(nb, "learn_solution")
        cell.source = TOP_LEVEL_LOOP + cell.source

    def kill_in_answer(nb):
        cell = cell_of(nb, "tokenize_solution")
        cell.source = KILLS_KERNEL + cell.source

    def ten_thousand_lines(nb):
        cell_of(nb, "initialize_solution").source += TEN_THOUSAND_LINES

    def grading_detector(nb):
        with_wrong_tokenize(nb)
        cell = cell_of(nb, "tokenize_solution")
        cell.source = cell.source + "\n\n" + GRADING_DETECTOR

    def fake_success(nb):
        with_wrong_tokenize(nb)
        replace_in(
            nb, "tokenize_solution", "    tokens = []\n",
            "    print('✅ tokenize applies the merges in the order they were learned.')\n   "
            " tokens = []\n",
        )
        insert_after(nb, "tokenize_demo", new_code(FAKE_SUCCESS, "my-cell"))

    def read_reference(nb):
        cell_of(nb, "tokenize_solution").source = read_from_disk("reference")

    def read_solution(nb):
        cell_of(nb, "learn_solution").source = read_from_disk("solution")

    def vscode_edited_setup(nb):
        edited_setup(nb)
        return vscode_save(keep_lab_metadata=True, keep_ids=False)(nb)

    def remembers_inputs(nb):
        cell = cell_of(nb, "merge_solution")
        cell.source = "SEEN = []\n\n" + cell.source
        replace_in(nb, "merge_solution", *REMEMBERS_INPUTS)
        replace_in(nb, "learn_solution", *PRINTS_REMEMBERED)

    def prints_encoded(nb):
        cell = cell_of(nb, "merge_solution")
        cell.source = "SEEN = []\n\n" + cell.source
        replace_in(nb, "merge_solution", *REMEMBERS_INPUTS)
        replace_in(nb, "learn_solution", *PRINTS_ENCODED)

    def raises_remembered_at_end(nb):
        cell = cell_of(nb, "merge_solution")
        cell.source = "SEEN = []\n\n" + cell.source
        replace_in(nb, "merge_solution", *REMEMBERS_INPUTS)
        insert_after(nb, "tokenize_solution", new_code(RAISES_REMEMBERED, "my-cell"))

    def raises_class_named(nb):
        cell = cell_of(nb, "merge_solution")
        cell.source = "SEEN = []\n\n" + cell.source
        replace_in(nb, "merge_solution", *REMEMBERS_INPUTS)
        replace_in(nb, "tokenize_solution", *RAISES_CLASS_NAMED)

    def shadowing(nb):
        cell = cell_of(nb, "tokenize_solution")
        cell.source = cell.source + SHADOWING_HELPER

    return [
        # editors
        Case(
            "colab-download", "downloaded from Colab: Colab's metadata, ids and execution counts",
            colab_download, parts=full,
        ),
        Case(
            "vscode-keeps-lab",
            "saved by VS Code: every cell's metadata dropped, notebook metadata kept",
            vscode_save(keep_lab_metadata=True, keep_ids=True), parts=full,
        ),
        Case(
            "vscode-drops-lab",
            "saved by an editor that dropped cell metadata, cell ids and the lab metadata",
            vscode_save(keep_lab_metadata=False, keep_ids=False), parts=full,
        ),
        # structure
        Case(
            "added-helper",
            "a helper function in a new cell (and a notes cell), used by the merge solution",
            mangled(added_helper), parts=full,
            integrity=(("added", f"cell {index_of(_correct_notebook(LAB), 'md-06') + 3}"),),
        ),
        Case(
            "deleted-given", "the toy corpora cell deleted", mangled(delete("toy_corpora")),
            parts=full, integrity=(("restored", "toy_corpora"),),
        ),
        Case(
            "deleted-test", "the merge test cell deleted", mangled(delete("merge")), parts=full,
            integrity=(("restored", "merge"),),
        ),
        Case(
            "deleted-answer", "the tokenize answer cell deleted",
            mangled(delete("tokenize_solution")), parts=lose_tokenize,
            integrity=(("missing", "tokenize_solution"),),
        ),
        Case(
            "moved-answers", "the pair-frequency and merge answer cells swapped",
            mangled(swapped_answers),
            parts=full,
            integrity=(("moved", "merge_solution"), ("moved", "pair_frequencies_solution")),
        ),
        Case(
            "moved-given",
            "the toy corpora cell moved to the end",
            mangled(moved_to_end),
            parts=full,
            integrity=(("moved", "toy_corpora"),),
        ),
        Case(
            "answer-as-markdown",
            "the merge answer cell switched to markdown",
            mangled(markdown("merge_solution")),
            parts=full,
            integrity=(("type_changed", "merge_solution"),),
        ),
        Case(
            "given-as-markdown",
            "the toy corpora cell switched to markdown",
            mangled(markdown("toy_corpora")),
            parts=full,
            integrity=(("type_changed", "toy_corpora"),),
        ),
        # cheats
        Case(
            "cheat-always-equal",
            "tokenize returns an object whose == always says True",
            mangled(tokenize_cell(ALWAYS_EQUAL_TOKENIZE)),
            parts=lose_tokenize,
        ),
        Case(
            "cheat-agreeable-list",
            "tokenize returns a list subclass whose == always says True",
            mangled(tokenize_cell(AGREEABLE_LIST_TOKENIZE)),
            parts=lose_tokenize,
        ),
        Case(
            "cheat-friendly-counter",
            "right pair counts in a Counter subclass whose == always says True",
            mangled(counter_subclass),
            parts=points(lose=("pair_frequencies",)),
        ),
        Case(
            "cheat-lying-builtins",
            "builtins.isinstance and builtins.type patched to vouch for a fake tokenize result",
            mangled(builtins_patch),
            parts=lose_tokenize,
            integrity=(("added", added_after("tokenize_solution")),),
        ),
        Case(
            "cheat-silenced-assertions",
            "AssertionError and unittest's asserts replaced; tokenize wrong",
            mangled(wrong_tokenize_and_cell(SILENCED_ASSERTIONS)),
            parts=lose_tokenize,
            integrity=(("added", added_after("tokenize_solution")),),
        ),
        Case(
            "cheat-no-tracebacks",
            "IPython's traceback display replaced by a no-op; tokenize wrong",
            mangled(
                wrong_tokenize_and_cell(
                    "get_ipython().showtraceback = lambda *args, **kwargs: None\n"
                )
            ),
            parts=lose_tokenize,
            integrity=(("added", added_after("tokenize_solution")),),
        ),
        Case(
            "cheat-sys-exit",
            "sys.exit() in a cell after the answers; tokenize wrong",
            mangled(wrong_tokenize_and_cell("import sys\n\nsys.exit(0)\n")),
            parts=lose_tokenize,
            integrity=(("added", added_after("tokenize_solution")),),
        ),
        Case(
            "cheat-os-exit",
            "os._exit(0) in a cell after the answers; tokenize wrong",
            mangled(wrong_tokenize_and_cell("import os\n\nos._exit(0)\n")),
            parts=lose_tokenize,
            integrity=(("added", added_after("tokenize_solution")),),
        ),
        Case(
            "cheat-fake-success",
            "prints fake ✅ and nbgrader success lines; tokenize wrong",
            mangled(fake_success),
            parts=lose_tokenize,
            integrity=(("added", added_after("tokenize_demo")),),
        ),
        Case(
            "cheat-read-reference",
            "globs for bpe_labs/reference/char_bpe.py and execs it for tokenize",
            mangled(read_reference),
            parts=lose_tokenize,
        ),
        Case(
            "cheat-read-solution",
            "globs for solutions/toy_bpe.ipynb and execs its learn_bpe",
            mangled(read_solution),
            parts=points(lose=("learn",)),
        ),
        Case(
            "cheat-detects-grading",
            "under NBGRADER_EXECUTION or a grading cwd: no tracebacks, an always-equal answer; "
            "tokenize wrong",
            mangled(grading_detector),
            parts=lose_tokenize,
        ),
        Case(
            "cheat-test-cell-pass",
            "the tokenize test cell edited to `pass`; tokenize wrong",
            mangled(test_cell_to_pass),
            parts=lose_tokenize,
            integrity=(("restored", "tokenize"),),
        ),
        Case(
            "cheat-edited-check",
            "the feedback helpers edited so the tokenize check always says ✅; tokenize wrong",
            mangled(lambda nb: edit_checks(with_wrong_tokenize(nb))),
            parts=lose_tokenize,
            integrity=(("restored", "feedback_helpers"),),
        ),
        Case(
            "edited-given",
            "the setup cell edited (END_OF_WORD changed); the released one is used",
            mangled(edited_setup),
            parts=full,
            integrity=(("restored", "setup"),),
        ),
        Case(
            "vscode-edited-given",
            "the setup cell edited, saved by an editor that dropped cell metadata and ids",
            vscode_edited_setup,
            parts=full,
            integrity=(("restored", "setup"),),
        ),
        Case(
            "shadowed-later",
            "the tokenize cell redefines merge_pair_in_word (returning a tuple) for its own use",
            mangled(shadowing),
            parts=full,
        ),
        # leaks
        Case(
            "leak-debug-prints",
            "merge_pair_in_word prints its arguments on every call",
            mangled(lambda nb: replace_in(nb, "merge_solution", *DEBUG_PRINTS)),
            parts=full,
        ),
        Case(
            "leak-exception-message",
            "tokenize raises with its arguments in the message on inputs it was not shown",
            mangled(lambda nb: replace_in(nb, "tokenize_solution", *RAISES_WITH_INPUT)),
            parts=lose_tokenize,
        ),
        Case(
            "leak-exception-class-name",
            "tokenize raises, on inputs it was not shown, a class named after remembered inputs",
            mangled(raises_class_named),
            parts=lose_tokenize,
        ),
        Case(
            "leak-via-visible-check",
            "merge_pair_in_word remembers its inputs; learn_bpe prints them during the learn check",
            mangled(remembers_inputs),
            parts=full,
        ),
        Case(
            "leak-encoded-print",
            "as leak-via-visible-check, printed joined with dots and reversed",
            mangled(prints_encoded),
            parts=full,
        ),
        Case(
            "leak-added-cell-error",
            "a cell added after tokenize raises with the remembered inputs, dotted",
            mangled(raises_remembered_at_end),
            parts=full,
            integrity=(("added", added_after("tokenize_solution")),),
        ),
        # limits
        Case(
            "limit-loop-in-function",
            "tokenize never ends: only tokenize loses",
            mangled(loop_in_function),
            parts=lose_tokenize,
        ),
        Case(
            "limit-loop-at-top",
            "an endless loop at the top of the learn answer cell, before the def",
            mangled(loop_at_top),
            parts=points(lose=("learn",)),
        ),
        Case(
            "limit-huge-bytearray",
            "x = bytearray(10**11) in a cell of its own",
            mangled(
                lambda nb: insert_after(
                    nb, "learn_solution", new_code("x = bytearray(10**11)\n", "my-cell")
                )
            ),
            parts=full,
            integrity=(("added", added_after("learn_solution")),),
        ),
        Case(
            "limit-growing-list",
            "tokenize fills memory until the cap stops it",
            mangled(tokenize_cell(TOKENIZE_EATS_MEMORY)),
            parts=lose_tokenize,
        ),
        Case(
            "limit-kill-kernel",
            "os.kill(os.getpid(), 9), else os._exit(9), at the top of the tokenize answer cell",
            mangled(kill_in_answer),
            parts=lose_tokenize,
        ),
        # noise
        Case(
            "noise-warnings",
            "merge_pair_in_word calls warnings.warn",
            mangled(lambda nb: replace_in(nb, "merge_solution", *WARNS)),
            parts=full,
        ),
        Case(
            "noise-stderr",
            "get_pair_frequencies prints to stderr on every call",
            mangled(lambda nb: replace_in(nb, "pair_frequencies_solution", *STDERR)),
            parts=full,
        ),
        Case(
            "noise-10k-lines",
            "the initialize answer cell prints 10,000 lines",
            mangled(ten_thousand_lines),
            parts=full,
        ),
        # malformed files
        Case(
            "bad-invalid-json",
            "a merge-conflict marker left in the JSON",
            invalid_json,
            status="invalid_json",
            lab=None,
        ),
        Case("bad-empty", "an empty file", lambda nb: b"", status="empty_file", lab=None),
        Case(
            "bad-truncated",
            "the first half of the file (an interrupted download)",
            truncated,
            status="invalid_json",
            lab=None,
        ),
        Case(
            "bad-not-a-notebook",
            "JSON, but not a notebook",
            not_a_notebook,
            status="not_a_notebook",
            lab=None,
        ),
        Case("bad-no-lab", "a notebook of no lab", no_lab, status="unknown_lab", lab=None),
        Case(
            "nbformat-3",
            "the correct submission saved as nbformat 3",
            nbformat_3,
            parts=full,
            integrity=(("converted", "-"),),
        ),
        Case("windows-utf16", "the correct submission re-saved as UTF-16", utf16, parts=full),
        Case(
            "lab-metadata-text",
            "the bpe_labs notebook metadata is a string, not a mapping",
            mangled(lab_metadata_as_text),
            parts=full,
        ),
        Case(
            "null-source",
            'an added markdown cell with "source": null',
            null_source_cell,
            parts=full,
        ),
        Case(
            "dup-first",
            "the first of two files of one student: not graded",
            lambda nb: dump(nb),
            status="duplicate",
            parts={},
            file_name="dup_1234_5678_toy_bpe.ipynb",
        ),
        Case(
            "dup-second",
            "the second of two files of one student (tokenize wrong): graded",
            mangled(with_wrong_tokenize),
            parts=lose_tokenize,
            file_name="dup_LATE_1234_5678_toy_bpe-1.ipynb",
        ),
        Case(
            "other-lab",
            "the GPT-2 lab's correct notebook handed in under the toy lab's file name",
            other_lab,
            lab="gpt2_bpe",
            parts=gpt2_expected,
            file_name="otherlab_toy_bpe.ipynb",
        ),
    ]


CASES: list[Case] = _cases()
CASES_BY_ID: dict[str, Case] = {case.case_id: case for case in CASES}
assert len(CASES_BY_ID) == len(CASES), "case ids must be unique"


def write_cases(folder: Path, cases: list[Case] = CASES) -> dict[str, Path]:
    """Write every case's file into ``folder``; case id -> path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for case in cases:
        path = folder / case.file
        path.write_bytes(case.build(correct_notebook()))
        written[case.case_id] = path
    return written


class CallLog:
    """Names appended to a file, read back as a list: what a stand-in of ``grade_file`` records
    in a grading process (every grader runs its files in one, a fork of the test's process), seen
    here."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.write_text("")

    def append(self, name: str) -> None:
        # one short line per write: appends do not mix
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(name + "\n")

    def _names(self) -> list[str]:
        return self.path.read_text(encoding="utf-8").splitlines()

    def __iter__(self):
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __eq__(self, other) -> bool:
        return self._names() == list(other)

    def __repr__(self) -> str:
        return repr(self._names())


def living_named(name: str) -> set[str]:
    """The pids of the processes named ``name`` that still run. A killed process whose parent is
    gone stays a zombie until the machine's init reaps it, which a container's init may do late:
    ``pgrep`` lists it, but it runs nothing."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            state = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if comm == name and state not in ("Z", "X"):
            found.add(entry)
    return found
