"""What a file with pathological replies costs under
``--notebook-timeout``, in every way of grading.

The file: the toy lab's correct notebook, whose kernel answers every call of ``tokenize`` with a
tagged set of 600,000 distinct integers sharing one hash (the red-team attack of issue 23). Two
graders:

* ``bounded``: this grader: ``codec.decode`` refuses the reply in linear time;
* ``stuck``: the same grader with the old, unbounded decode put back (standing for any grader bug
  that hangs inside one C call): the watchdog outside the grading process must end it.

For ``--workers 0``, ``--workers 2``, Gradescope's runner (the zip, unpacked as Gradescope does) and
a local Dask cluster (one worker process, one thread), it prints the batch's wall time, the file's
status and the seconds in its row. A report: it asserts nothing.

    .venv/bin/python benchmarks/bench_pathological.py --notebook-timeout 30
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from test_grader_time import HANG, HANG_IN_CODEC, same_hash_notebook  # noqa: E402

CLI = textwrap.dedent('''
    import sys
    if sys.argv[1] == "stuck":
        sys.path.insert(0, sys.argv[2])
        import hang_decode  # noqa: F401
    from autograder.cli import main
    sys.exit(main(sys.argv[3:]))
''')
DASK = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    from distributed import LocalCluster
    from autograder.batch.run import grade_folder
    from autograder.grading.grade import Settings
    from autograder.kernel.session import Limits

    variant, folder, submissions, out = sys.argv[1:5]
    seconds = float(sys.argv[5])
    preload = [str(Path(folder) / "hang_decode.py")] if variant == "stuck" else []
    from distributed.security import Security
    security = Security.temporary()  # TLS with client certificates: the one way to a scheduler
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                      preload=preload, protocol="tls://", security=security) as cluster:
        started = time.monotonic()
        results = grade_folder(Path(submissions), Path(out),
                               Settings(limits=Limits(notebook_seconds=seconds)),
                               scheduler=cluster.scheduler_address, security=security,
                               progress=False)
        print("ELAPSED", time.monotonic() - started)
''')


def environment() -> dict:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("BPE_LABS_DATA", "PYTHONPATH")
    }
    env["PYTHONPATH"] = str(REPO)
    return env


def row_of(out: Path) -> tuple[str, str]:
    with open(out / "grades.csv", encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    return row["status"], row["seconds"]


def local(mode: str, variant: str, work: Path, seconds: float) -> tuple[float, str, str]:
    out = work / f"out-{mode}-{variant}"
    started = time.monotonic()
    subprocess.run(
        [
            sys.executable,
            "-c",
            CLI,
            variant,
            str(work),
            "grade",
            str(work / "sub"),
            "--out",
            str(out),
            "--notebook-timeout",
            f"{seconds:g}",
            "--workers",
            mode.split("-")[1],
            "--quiet",
        ],
        env=environment(),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=seconds * 20 + 300,
    )
    return (time.monotonic() - started, *row_of(out))


def dask(variant: str, work: Path, seconds: float) -> tuple[float, str, str]:
    out = work / f"out-dask-{variant}"
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            DASK,
            variant,
            str(work),
            str(work / "sub"),
            str(out),
            f"{seconds:g}",
        ],
        env=environment(),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=seconds * 20 + 300,
    )
    if done.returncode:
        print(done.stderr[-2000:], file=sys.stderr)
    return (time.monotonic() - started, *row_of(out))


def gradescope(variant: str, work: Path, seconds: float) -> tuple[float, str, str]:
    from autograder.gradescope import build_zip
    from autograder.kernel.session import Limits
    from test_gradescope import run_autograder, unpack

    root = unpack(
        build_zip(
            "toy_bpe",
            work / f"toy-{variant}.zip",
            limits=Limits(notebook_seconds=seconds),
            part_seconds=seconds,
        ),
        work / f"gradescope-{variant}",
    )
    if variant == "stuck":
        codec_file = root / "source" / "autograder" / "kernel" / "codec.py"
        codec_file.write_text(codec_file.read_text() + HANG_IN_CODEC)
    (root / "submission" / "toy_bpe.ipynb").write_bytes(same_hash_notebook())
    started = time.monotonic()
    run = run_autograder(root, timeout=seconds * 20 + 300)
    elapsed = time.monotonic() - started
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    line = next((line for line in run.stdout.splitlines() if line.startswith("graded ")), "")
    status = line.split(": ")[1].split(",")[0] if ": " in line else "?"
    return elapsed, f"{status}, score {results['score']}", str(results.get("execution_time", "?"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebook-timeout", type=float, default=30)
    parser.add_argument(
        "--modes", nargs="+", default=["workers-0", "workers-2", "gradescope", "dask"]
    )
    parser.add_argument("--variants", nargs="+", default=["bounded", "stuck"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-path-") as folder:
        work = Path(folder)
        (work / "hang_decode.py").write_text(HANG)
        (work / "sub").mkdir()
        (work / "sub" / "eve_toy_bpe.ipynb").write_bytes(same_hash_notebook())
        print(
            "a file whose kernel replies with 600,000 values sharing one hash; --notebook-timeout "
            f"{args.notebook_timeout:g} s"
        )
        print(
            f"{'grader':<11} {'decode':<8} {'batch wall s':>12}  {'row: status':<22} "
            f"{'row seconds':>11}"
        )
        for mode in args.modes:
            for variant in args.variants:
                if mode.startswith("workers"):
                    elapsed, status, seconds = local(mode, variant, work, args.notebook_timeout)
                elif mode == "dask":
                    elapsed, status, seconds = dask(variant, work, args.notebook_timeout)
                else:
                    elapsed, status, seconds = gradescope(variant, work, args.notebook_timeout)
                print(
                    f"{mode:<11} {variant:<8} {elapsed:>12.1f}  {status:<22} {seconds:>11}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
