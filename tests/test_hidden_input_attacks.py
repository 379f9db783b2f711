"""No hidden input reaches a student in any form, by construction; a stand-in never waives a
requirement.

Reference: issue 23's recorded-argument attacks, graded by the real autograder (``grade_folder``)
and by Gradescope's ``run_autograder``. Each attack leaves ``merge_pair_in_word`` blank, so that
later parts are graded with a stand-in for it; its other functions record every argument they
receive; once hidden inputs have come in, the attack says them, compressed and written as digits (or
base64), in every way a kernel can speak: a ``BaseException``, ``SystemExit``,
``KeyboardInterrupt``, ``GeneratorExit``, a built-in ``ValueError`` or ``AssertionError``, a class
named after them; or, by rewriting the kernel's own stand-in machinery, when the grader places a
stand-in or asks what a name is. Nothing of it may reach ``feedback/``, ``grades.csv``, the class
report or Gradescope's ``results.json``: every run of digits or base64 found there is decoded and
must not be the attack's payload. The marker each payload starts with must not appear either.

The speed case (issue 23, item 3): a naive ``learn_bpe_fast`` scores the same with and without a
throw-away call of a stand-in.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
import zlib

import nbformat
import pytest
from bs4 import BeautifulSoup

from adversarial import correct_notebook, insert_after, new_code, replace_in
from autograder.batch.run import grade_folder
from autograder.grading.grade import Settings
from autograder.kernel.session import Limits
from autograder.labs import get_lab, nbgrader_meta
from bpe_labs.examples import make_submission

MARKER = "ZZLEAK"
SETTINGS = Settings(limits=Limits(cell_seconds=20, call_seconds=5, notebook_seconds=240),
                    part_seconds=60)

RECORDER = '''import base64, sys, zlib
RECORDED = []
LEARNED = []  # learn_bpe's calls: its own checks make three, its hidden tests twenty


def record(*args):
    RECORDED.append(repr(args))


def payload(encoding="digits"):
    """Every argument recorded so far, compressed, as digits (or base64)."""
    packed = zlib.compress(repr(RECORDED).encode())
    if encoding == "base64":
        return MARKER + base64.b64encode(packed).decode()
    return MARKER + str(int.from_bytes(packed, "big"))


MARKER = "ZZLEAK"
'''.replace('MARKER = "ZZLEAK"', f'MARKER = "{MARKER}"')

# learn_bpe says what it recorded once hidden inputs have come in (from its eleventh call: the
# notebook's own cells call it three times), after its merges, so that the grader's stand-in has
# answered it first
RAISES = {
    "base-exception": "class Leak(BaseException):\n    pass\n\nLEAK = lambda: Leak(payload())",
    "system-exit": "LEAK = lambda: SystemExit(payload())",
    "keyboard-interrupt": "LEAK = lambda: KeyboardInterrupt(payload())",
    "generator-exit": "LEAK = lambda: GeneratorExit(payload('base64'))",
    "value-error": "LEAK = lambda: ValueError(payload('base64'))",
    "assertion-error": "LEAK = lambda: AssertionError(payload())",
    "class-name": "LEAK = lambda: type('A' + payload()[len(MARKER):], (Exception,), {})()",
}

# the rewritten-machinery route: the kernel's stand-in machinery raises with the recorded arguments
MACHINERY = '''
if "_autograder_codec" in sys.modules:  # only while the autograder grades
    _codec = sys.modules["_autograder_codec"]
    _real_describe = _codec.describe

    class Leak(BaseException):
        pass

    def _leak(*args, **kwargs):
        raise Leak(payload())

    def _describe(namespace, name):
        if len(RECORDED) > 40:
            raise Leak(payload())
        return _real_describe(namespace, name)

    _codec.stand_in = _codec.put_back = _leak
    _codec.describe = _describe
'''


def attack(kind: str) -> nbformat.NotebookNode:
    nb = correct_notebook()
    insert_after(nb, "feedback_helpers",
                 new_code(RECORDER + (MACHINERY if kind == "machinery" else RAISES[kind]),
                          "recorder"))
    blank = next(c.source for c in get_lab("toy_bpe").release_notebook().cells
                 if nbgrader_meta(c).get("grade_id") == "merge_solution")
    next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == "merge_solution").source = blank
    for cell_id, line in [("initialize_solution", "    corpus = ["),
                          ("pair_frequencies_solution", "    counts = Counter()"),
                          ("learn_solution", "    corpus, vocabulary = bpe_initialize(dataset)"),
                          ("tokenize_solution", "    tokens = []")]:
        arguments = (
            "dataset"
            if cell_id.startswith("initialize")
            else "corpus"
            if cell_id.startswith("pair")
            else "dataset, num_merges"
            if cell_id.startswith("learn")
            else "text, merges"
        )
        replace_in(nb, cell_id, line, f"    record({arguments})\n{line}")
    # after the merges: the grader's stand-in for merge_pair_in_word has answered
    if kind != "machinery":
        replace_in(nb, "learn_solution", "    return merges, vocabulary, corpus",
                   "    LEARNED.append(dataset)\n    if len(LEARNED) > 10:\n        raise LEAK()\n "
                   "   return merges, vocabulary, corpus")
    return nb


KINDS = [*RAISES, "machinery"]
# merge_pair_in_word is blank; learn_bpe raises once hidden inputs came in; tokenize is right, and
# earns its points with a reference merge_pair_in_word, except where the attack broke the stand-in
# machinery
# its points with a reference merge_pair_in_word,
# except where the attack broke the stand-in machinery
EXPECTED = {kind: {"initialize": 2, "pair_frequencies": 2, "merge": 0, "learn": 0,
                   "tokenize": 0 if kind == "machinery" else 2}
            for kind in KINDS}


def leaks(text: str) -> list[str]:
    """The attack's payloads found in ``text``: the marker, or a run of digits or base64 that
    decodes to the recorded arguments."""
    found = [MARKER] if MARKER in text else []
    for digits in re.findall(r"\d{25,}", text):
        number = int(digits)
        try:
            found.append(
                zlib.decompress(number.to_bytes((number.bit_length() + 7) // 8, "big")).decode()
            )
        except (zlib.error, UnicodeDecodeError):
            pass
    for chunk in re.findall(r"[A-Za-z0-9+/]{24,}={0,2}", text):
        try:
            found.append(
                zlib.decompress(base64.b64decode(chunk + "=" * (-len(chunk) % 4))).decode()
            )
        except (zlib.error, binascii.Error, UnicodeDecodeError, ValueError):
            pass
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attacks")
    for kind in KINDS:
        nbformat.write(attack(kind), folder / f"leak-{kind}.ipynb")
    out = tmp_path_factory.mktemp("attacks-out")
    results = grade_folder(folder, out, SETTINGS, workers=2, progress=False)
    return out, {result.student_id: result for result in results}


def test_the_attacks_record_hidden_inputs_and_would_say_them():
    """Not vacuous: in plain Python, the attack's learn_bpe raises with the recorded inputs at
    its eleventh call, and its payload decodes back to them."""
    namespace: dict = {}
    nb = attack("system-exit")
    for cell in nb.cells:
        if cell.cell_type == "code" and (cell.id == "recorder"
                                         or nbgrader_meta(cell).get("grade_id") in (
                "setup", "initialize_solution", "pair_frequencies_solution", "learn_solution")):
            exec(cell.source, namespace)
    with pytest.raises(SystemExit) as raised:
        for n in range(50):
            namespace["learn_bpe"]([f"hidden{n}"], 0)
    assert any("hidden10" in payload for payload in leaks(str(raised.value)))


@pytest.mark.parametrize("kind", KINDS)
def test_an_attack_costs_its_parts_and_says_nothing(kind, graded):
    out, results = graded
    result = results[f"leak-{kind}"]
    assert result.status == "graded", result.message
    assert {part_id: part.score for part_id, part in result.parts.items()} == EXPECTED[kind]
    page = BeautifulSoup(
        (out / "feedback" / f"leak-{kind}" / "toy_bpe.html").read_text(encoding="utf-8"),
        "html.parser",
    ).get_text()
    assert not leaks(page), f"the feedback says the hidden inputs: {leaks(page)[:2]}"
    assert "merge_pair_in_word is not written yet" in page, (
        "the notebook's own checks, before any hidden input, are shown"
    )


def test_no_report_of_the_batch_says_them(graded):
    out, _ = graded
    for name in ("grades.csv", "class_report.md"):
        text = (out / name).read_text(encoding="utf-8")
        assert not leaks(text), f"{name} says the hidden inputs: {leaks(text)[:2]}"
    for path in (out / "results").glob("*.json"):
        parts = json.loads(path.read_text(encoding="utf-8")).get("parts", {})
        messages = " ".join(str(part.get("message", "")) for part in parts.values())
        assert not leaks(messages), f"{path.name} keeps the hidden inputs: {leaks(messages)[:2]}"


@pytest.mark.parametrize("kind", ["base-exception", "machinery"])
def test_gradescopes_results_say_nothing(kind, tmp_path):
    from test_gradescope import graded as run_gradescope, hand_in

    from autograder.gradescope import build_zip

    zip_path = build_zip("toy_bpe", tmp_path / "toy_bpe.zip")
    root = hand_in(zip_path, tmp_path / "root",
                   {"toy_bpe.ipynb": nbformat.writes(attack(kind)).encode()})
    results, _ = run_gradescope(root)
    assert [test["score"] for test in results["tests"]] == list(EXPECTED[kind].values())
    text = json.dumps(results, ensure_ascii=False)
    assert not leaks(text), f"results.json says the hidden inputs: {leaks(text)[:2]}"


# -- a stand-in never waives a requirement -------------------------------------------------------
NAIVE = {"learn_fast_solution": [{"old": "    # A Counter keeps the distinct words in the order "
                                  "they first appear, which keeps ties as in learn_bpe.\n",
                                  "new": "    merges, vocabulary, _ = learn_bpe(dataset, "
                                  "num_merges)\n    return merges, vocabulary\n"}]}
BLANK_TOKENIZE = {
    "tokenize_solution": [
        {"old": "    tokens = []\n", "new": "    raise NotImplementedError()\n    tokens = []\n"}
    ]
}
THROW_AWAY = {"old": "    merges, vocabulary, _ = learn_bpe(dataset, num_merges)\n",
              "new": "    try:\n        tokenize(\"a\", [])  # a throw-away call: with tokenize "
              "failing, a stand-in answers it\n"
                     "    except NotImplementedError:\n        pass\n    merges, vocabulary, _ = "
                     "learn_bpe(dataset, num_merges)\n"}
SPEED_CASES = {
    "naive": NAIVE,
    "naive-tokenize-blank": {**NAIVE, **BLANK_TOKENIZE},
    "naive-with-a-stand-in-call": {
        "learn_fast_solution": NAIVE["learn_fast_solution"] + [THROW_AWAY], **BLANK_TOKENIZE,
    },
}


@pytest.fixture(scope="module")
def speed_graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("speed")
    for name, replace in SPEED_CASES.items():
        nbformat.write(make_submission({"lab": "africa_galore", "id": name, "fill": "solution",
                                        "replace": replace, "spec": "-"}), folder / f"{name}.ipynb")
    results = grade_folder(folder, tmp_path_factory.mktemp("speed-out"), workers=2, progress=False)
    return {result.student_id: result for result in results}


def test_a_throw_away_stand_in_call_does_not_buy_the_speed_requirement(speed_graded):
    naive, blank, trick = (speed_graded[name] for name in SPEED_CASES)
    assert (
        naive.parts["learn_fast"].score
        == blank.parts["learn_fast"].score
        == trick.parts["learn_fast"].score
        == 0
    )
    assert (naive.score, blank.score, trick.score) == (10, 8, 8)
    assert (
        "too slow" in trick.parts["learn_fast"].message
        and "the limit is 10×" in trick.parts["learn_fast"].message
    )
