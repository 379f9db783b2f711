"""What one stand-in call costs: the round trip a timed hidden test's cut on the clock allows for
(20 ms each, africa_galore's learn_fast).

A stand-in asks the grader over the kernel's stdin channel and waits for the reference's answer
(autograder/grading/stand_ins.py). This script places a stand-in for a merge function in a real
sandboxed kernel, calls it from the kernel many times in a row, and prints, per call: the time
the kernel saw, the grader's own time answering (taken off a timed call exactly), and the round
trip the grader saw (from its previous answer to the next request: what a timed call's allowance
covers, up to the cap). It prints figures and asserts nothing; run it at the load you grade at.

    .venv/bin/python benchmarks/bench_stand_ins.py --calls 200 500
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from autograder.course import use
from autograder.kernel.session import KernelSession, Limits
from autograder.labs import Upstream
from autograder.grading.stand_ins import STAND_IN_LOG, standing_in

NOTEBOOK = """
def merge(word, pair):
    raise NotImplementedError()

def many(n):
    import time
    started = time.perf_counter()
    for _ in range(n):
        merge(["a", "b", "c", "a", "b", "</w>"], ("a", "b"))
    return time.perf_counter() - started
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[200, 500])
    args = parser.parse_args()
    use("bpe_labs.course:COURSE")
    print(f"load average {os.getloadavg()[0]:.1f}; ms per stand-in call (median, 90th percentile)")
    with tempfile.TemporaryDirectory() as folder:
        with KernelSession(
            Path(folder) / "work", Limits(cell_seconds=60, call_seconds=600)
        ) as session:
            assert session.run_cell(NOTEBOOK).status == "ok"
            with standing_in(session,
                             [Upstream("merge", "merge_part",
                                       "bpe_labs.reference.char_bpe:merge_pair_in_word")]):
                for calls in args.calls:
                    first = len(STAND_IN_LOG)
                    kernel_seconds = session.call("many", calls)
                    log = STAND_IN_LOG[first:]
                    service = [answered - arrived for arrived, answered in log]
                    trips = [arrived - previous
                             for (arrived, _), (_, previous) in zip(log[1:], log)]
                    ms = lambda values, q: 1000 * statistics.quantiles(values, n=10)[q]  # noqa: E731
                    print(f"{calls:5d} calls: kernel {1000 * kernel_seconds / calls:6.2f} ms/call; "
                          "grader's answer "
                          f"{ms(service, 4):5.2f} / {ms(service, 8):5.2f}; round trip seen by the "
                          "grader "
                          f"{ms(trips, 4):5.2f} / {ms(trips, 8):5.2f}")


if __name__ == "__main__":
    main()
