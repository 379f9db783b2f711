"""The grader never does unbounded work on what a kernel sends, and --notebook-timeout holds from
outside the work, in every way of grading.

From a red-team run: a kernel answered a hidden test's call with a tagged ``set`` of 600,000
integers sharing one hash. The grader built that set in ``codec.decode``, quadratic inside a single
C call: a batch with ``--notebook-timeout 30`` ran for hours (``--workers 0``), or 328 s and a
``worker_lost`` row (``--workers 2``); Gradescope's runner wrote no results.json; a Dask worker
missed its heartbeats and was restarted. Now ``decode`` refuses such replies cheaply, and, for a
grader bug that would hang all the same (here: the old decode put back), a watchdog outside the
grading process ends it when the file's time is up and the file gets an ``out_of_time`` row.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from adversarial import cell_of, correct_notebook, dump
from autograder.kernel import codec
from bpe_labs import ROOT as REPO_ROOT

M = 2**61 - 1  # ints congruent modulo this share one hash
COLLIDING = 600_000

# A student's cell: from now on the kernel answers every call of tokenize with a tagged set of
# 600,000 distinct integers sharing one hash, written as compact JSON text (never built as a set in
# the kernel, and small enough to pass the 32 MiB cap on a reply: about 23 MB).
SAME_HASH_REPLY = textwrap.dedent(f'''
    import sys as _sys
    _codec = _sys.modules["_autograder_codec"]
    _half = {COLLIDING} // 2
    _set = '["set",[' + ",".join('["int","%d"]' % (_k * {M} + 7) for _k in range(-_half, \
_half)) + ']]'
    _one = '["returned",' + _set + ']'
    _honest_call, _honest_each = _codec.call_in_namespace, _codec.call_each_in_namespace

    def _call(namespace, name, payload, *more, **keywords):
        return _one if name == "tokenize" else _honest_call(namespace, name, payload, *more, \
**keywords)

    def _each(namespace, name, payload, *more, \
**keywords):  # every other call as the grader made it
        return "[" + _one + "]" if name == "tokenize" else _honest_each(namespace, name, payload, \
*more, **keywords)

    _codec.call_in_namespace, _codec.call_each_in_namespace = _call, _each
''')


def same_hash_notebook() -> bytes:
    nb = correct_notebook()
    cell_of(nb, "tokenize_solution").source += "\n" + SAME_HASH_REPLY
    return dump(nb)


def environment(**extra: str) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "BPE_LABS_DATA"}
    env.update(PYTHONPATH=str(REPO_ROOT), **extra)
    return env


# -- decode: bounded work on anything a kernel sends -----------------------------------------------

@pytest.mark.parametrize("tag", ["set", "frozenset", "list", "tuple", "dict", "Counter"])
def test_values_sharing_one_hash_are_refused_in_linear_time(tag):
    items = [["int", str(k * M + 7)] for k in range(20_000)]
    tagged = [tag,
              [[item, ["int", "1"]] for item in items] if tag in ("dict", "Counter") else items]
    started = time.process_time()
    value = codec.decode(tagged)
    assert time.process_time() - started < 5  # 20,000 of them took 9 s to build, 40,000 took 29 s
    assert (
        isinstance(value, codec.Unsupported) and value != set() and "share one hash" in repr(value)
    )


def test_honest_values_still_decode_exactly():
    honest = {"a": [1, -1, -2, 2.5, "x" * 100], ("t", 1): {frozenset({1, 2}), (3, 4)}, "n": None,
              "b": b"\x00",
              "counts": __import__("collections").Counter("abracadabra"), "big": 10**4000,
              "repeated": ["same"] * 50_000 + [7] * 50_000,
              "keys": {k * 1024: k for k in range(5000)}}
    assert codec.decode(json.loads(json.dumps(codec.encode(honest)))) == honest


@pytest.mark.parametrize("tagged", [
    ["int", "9" * 5000], ["float", "1" * 100_000], ["list", [["none"]] * (codec.MAX_NODES + 1)],
    ["set", [["list", []]]], ["dict", [[["list", []], ["none"]]]], ["tuple", "not a list"],
    ["surprise", 1], [], ["dict", [["int", "1"]]], ["int", 7], {"not": "a list"}])
def test_oversized_or_malformed_replies_become_a_value_equal_to_nothing(tagged):
    value = codec.decode(tagged)
    assert isinstance(value, codec.Unsupported) and value != value


def test_nesting_beyond_the_limit_is_refused():
    tagged = ["none"]
    for _ in range(codec.MAX_DEPTH + 5):
        tagged = ["list", [tagged]]
    assert isinstance(codec.decode(tagged), codec.Unsupported)


# -- a real batch against the real attack
# -----------------------------------------------------------

def test_a_batch_with_the_same_hash_attack_ends_within_the_notebook_timeout(tmp_path):
    """The red-team run, as an instructor runs it: ``--notebook-timeout 30 --workers 2``. It ends in
    about the file's time (it took 328 s and a worker_lost row), with a row for the file: the
    refused part scores 0, the honest parts keep their points."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "eve_toy_bpe.ipynb").write_bytes(same_hash_notebook())
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "sub"),
                          "--out", str(tmp_path / "out"),
                          "--notebook-timeout", "30", "--workers", "2", "--quiet"],
                         cwd=tmp_path, env=environment(), capture_output=True, text=True,
                         timeout=200)
    elapsed = time.monotonic() - started
    assert run.returncode == 0, run.stderr[-3000:]
    # start-up, the probe and reports on top of the file's time
    assert elapsed < 30 + 40, f"the batch took {elapsed:.0f} s"
    import pandas as pd

    row = pd.read_csv(tmp_path / "out" / "grades.csv").set_index("student_id").loc["eve"]
    assert row["status"] == "graded", row["error"]
    assert row["tokenize"] == 0 and row["initialize"] == 2 and row["merge"] == 2, row.to_dict()


# -- a grader that hangs all the same is ended from outside
# ------------------------------------------

# The old decode put back, as a grader bug would: the set is built in one C call that never returns.
HANG = textwrap.dedent('''
    import autograder.kernel.codec as _codec

    _bounded = _codec.decode

    def decode(tagged):
        if isinstance(tagged, list) and tagged and tagged[0] == "set" and len(tagged[1]) > 1000:
            return set([int(item[1]) for item in tagged[1]])
        return _bounded(tagged)

    _codec.decode = decode
''')
# The same, written at the end of codec.py itself (Gradescope's runner imports the unpacked zip's).
HANG_IN_CODEC = textwrap.dedent('''

    _bounded_decode = decode


    def decode(tagged):
        if isinstance(tagged, list) and tagged and tagged[0] == "set" and len(tagged[1]) > 1000:
            return set([int(item[1]) for item in tagged[1]])
        return _bounded_decode(tagged)
''')
NOTEBOOK_SECONDS = 8
# When a stuck file's row must be there: its time, the watchdog's grace (deadline.py: 12 s with the
# default limits) and a grader's start-up and reports.
ROW_WITHIN = NOTEBOOK_SECONDS + 12 + 25


BATCH = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import hang_decode  # noqa: F401  (in this process: the grading processes are forks of it)
    from autograder.batch.run import grade_folder
    from autograder.grading.grade import Settings
    from autograder.kernel.session import Limits

    settings = Settings(limits=Limits(notebook_seconds={seconds}), part_seconds={seconds})
    scheduler = None
    if sys.argv[4] == "dask":
        from distributed import LocalCluster

        # threads in this process: the old grader held the GIL here, and the whole cluster with it
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, \
dashboard_address=None)
        scheduler = cluster.scheduler_address
    started = time.monotonic()
    results = grade_folder(Path(sys.argv[2]), Path(sys.argv[3]), settings, workers=0, \
scheduler=scheduler, progress=False)
    print("ELAPSED", time.monotonic() - started)
    for result in results:
        print("ROW", result.student_id, result.status, result.message)
''')


@pytest.mark.parametrize("how", ["workers-0", "dask"])
def test_a_grader_stuck_in_one_c_call_is_ended_at_the_notebook_timeout(tmp_path, how):
    (tmp_path / "hang_decode.py").write_text(HANG)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "eve_toy_bpe.ipynb").write_bytes(same_hash_notebook())
    run = subprocess.run([sys.executable, "-c", BATCH.format(seconds=NOTEBOOK_SECONDS),
                          str(tmp_path), str(tmp_path / "sub"),
                          str(tmp_path / "out"), how], cwd=tmp_path, env=environment(),
                         capture_output=True, text=True, timeout=ROW_WITHIN + 100)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    elapsed = float(next(line.split()[1] for line in lines if line.startswith("ELAPSED")))
    rows = [line.split(" ", 3) for line in lines if line.startswith("ROW")]
    assert [row[1:3] for row in rows] == [["eve", "out_of_time"]], lines
    assert f"--notebook-timeout {NOTEBOOK_SECONDS}" in rows[0][3]
    assert elapsed < ROW_WITHIN, f"{elapsed:.0f} s"


def test_gradescope_writes_results_when_the_time_is_up(tmp_path):
    """Gradescope's runner, with the old decode in the unpacked zip: results.json exists, with
    score 0 and the reason, when the file's time is up (it had none after 400 s)."""
    from test_gradescope import RESULTS_SCHEMA, run_autograder, unpack
    import jsonschema

    from autograder.gradescope import build_zip
    from autograder.kernel.session import Limits

    archive = build_zip("toy_bpe", tmp_path / "toy.zip",
                        limits=Limits(notebook_seconds=NOTEBOOK_SECONDS),
                        part_seconds=NOTEBOOK_SECONDS)
    root = unpack(archive, tmp_path / "autograder")
    codec_file = root / "source" / "autograder" / "kernel" / "codec.py"
    codec_file.write_text(codec_file.read_text() + HANG_IN_CODEC)
    (root / "submission" / "toy_bpe.ipynb").write_bytes(same_hash_notebook())
    started = time.monotonic()
    run = run_autograder(root, timeout=ROW_WITHIN + 100)
    elapsed = time.monotonic() - started
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(results, RESULTS_SCHEMA)
    assert results["score"] == 0 and "time limit" in results["output"], (
        results["output"], run.stdout[-2000:],
    )
    assert elapsed < ROW_WITHIN + 5, f"{elapsed:.0f} s"
