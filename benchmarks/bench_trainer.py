"""How fast is the course's reference BPE trainer (Python and numpy) next to Hugging Face
``tokenizers``?

A report, not a test: it prints figures and asserts nothing about them.

    python benchmarks/bench_trainer.py --sizes 1 5 20 --merges 1000
    python benchmarks/bench_trainer.py --sizes 1 --merges 1000 --with-simple

What exactly is compared, on the same in-memory text (English docstrings of the
installed packages, ``docstring_corpus.py``) and for the same number of merges:

* ``tokenizers``: ``Tokenizer(models.BPE(end_of_word_suffix="</w>"))`` with a
  ``WhitespaceSplit`` pre-tokenizer, trained by ``BpeTrainer(min_frequency=0,
  show_progress=False, end_of_word_suffix="</w>")`` through ``train_from_iterator``.
  Its input is the text cut at whitespace into pieces of about 64 kB (so the word counts
  are exactly those of the whole text); that was its fastest input here: one 5 MB string
  is slower (one thread counts it) and so are lines (per-item overhead). It uses every
  core (``TOKENIZERS_PARALLELISM`` is left alone).
* ``fast``: ``pretokenize.count_words`` (``--parallel-count``: on two cores) then
  ``fast_trainer.train_bpe`` with the course's tie rule, in this process, on one core.

Both timings start from the text and include counting the words. Neither includes
making the text.

One difference cannot be removed: ``tokenizers`` glues ``</w>`` to the last character of a
word (``"w</w>"`` is one initial symbol) where the course keeps it a separate symbol. So its
initial vocabulary is the characters plus each word-final character with ``</w>``, and we
set ``vocab_size`` to that size + ``--merges``, which makes it learn exactly ``--merges``
merges (checked in the table). The course's trainer spends some merges on
``("e", "</w>")``-like pairs that ``tokenizers`` gets for free, so the merges differ; the
``shared`` column says how many of the course's merged tokens ``tokenizers`` also learned.

Times are the best of ``--repeat`` runs: wall clock (``s``) and CPU time of all threads
and child processes (``cpu s``; ``tokenizers`` counts and merges on several threads). The
machine may be shared: the load average is printed with the results, and on a busy
machine the CPU times compare the work done more fairly than the wall times.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bpe_labs.reference import fast_trainer, simple_trainer  # noqa: E402
from benchmarks.fair import ratio  # noqa: E402
from bpe_labs.reference.pretokenize import count_words, count_words_parallel  # noqa: E402
from benchmarks.docstring_corpus import docstring_text  # noqa: E402

PIECE_CHARS = 64_000


def whitespace_pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """``text`` cut into pieces of about ``size`` characters, only at whitespace.

    ``("ab cd ef", 3) -> ["ab", " cd", " ef"]``
    """
    pieces, start = [], 0
    while start < len(text):
        end = min(start + size, len(text))
        while end < len(text) and not text[end].isspace():
            end += 1
        pieces.append(text[start:end])
        start = end
    return pieces


def initial_tokenizers_vocab_size(word_counts: dict[str, int]) -> int:
    """Characters plus word-final characters with ``</w>``: ``tokenizers``' vocabulary before any
    merge.

    ``{"ab": 1, "b": 2} -> 3`` (``a``, ``b``, ``b</w>``)
    """
    return len(set("".join(word_counts))) + len({word[-1] for word in word_counts})


def train_tokenizers(pieces: list[str], vocab_size: int) -> dict:
    """Train ``tokenizers``' BPE; return its model as a dict (``vocab``, ``merges``)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(end_of_word_suffix="</w>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=0, show_progress=False,
                                  end_of_word_suffix="</w>")
    tokenizer.train_from_iterator(pieces, trainer)
    return json.loads(tokenizer.to_str())["model"]


def train_fast(text: str, merges: int, parallel_count: bool) -> list[tuple[str, str]]:
    word_counts = count_words_parallel(text) if parallel_count else count_words(text)
    return fast_trainer.train_bpe(word_counts, merges)


def cpu_seconds() -> float:
    """CPU time of this process and its finished children, all threads, user + system."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def best_time(function, repeat: int):
    """(best wall time, best CPU time, in seconds; the last result)."""
    best_wall = best_cpu = float("inf")
    result = None
    for _ in range(repeat):
        gc.collect()
        wall, cpu = time.perf_counter(), cpu_seconds()
        result = function()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, cpu_seconds() - cpu)
    return best_wall, best_cpu, result


def shared_tokens(ours: list[tuple[str, str]], model: dict) -> int:
    """How many of our merged tokens are also in ``tokenizers``' vocabulary."""
    return sum(a + b in model["vocab"] for a, b in ours)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 5, 20],
                        help="text sizes in MB")
    parser.add_argument("--merges", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    parser.add_argument("--parallel-count", action="store_true", help="count words on two cores")
    parser.add_argument("--with-simple", action="store_true",
                        help="also time the simple trainer (slow: minutes) on --simple-size MB")
    parser.add_argument("--simple-size", type=float, default=1.0)
    args = parser.parse_args(argv)

    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"{args.merges} merges; best of {args.repeat}; "
          f"word counting on {'two cores' if args.parallel_count else 'one core'}")
    header = (f"{'MB':>5} {'words':>10} {'distinct':>9} {'tokenizers s':>13} {'fast s':>7} "
              f"{'fast/tok':>9}"
              f" {'tok cpu s':>10} {'fast cpu s':>11} {'merges tok/fast':>16} {'shared':>7}")
    print(header)
    print("-" * len(header))
    for size in args.sizes:
        text = docstring_text(size)
        word_counts = count_words(text)
        pieces = whitespace_pieces(text)
        vocab_size = initial_tokenizers_vocab_size(word_counts) + args.merges
        # best_time calls each lambda within this round; the defaults bind this round's values
        tokenizers_seconds, tokenizers_cpu, model = best_time(
            lambda pieces=pieces, vocab_size=vocab_size: train_tokenizers(pieces, vocab_size),
            args.repeat,
        )
        fast_seconds, fast_cpu, ours = best_time(
            lambda text=text: train_fast(text, args.merges, args.parallel_count), args.repeat
        )
        print(f"{size:>5g} {sum(word_counts.values()):>10,} {len(word_counts):>9,} "
              f"{tokenizers_seconds:>13.2f} {fast_seconds:>7.2f} "
              f"{fast_seconds / tokenizers_seconds:>9.2f} {tokenizers_cpu:>10.2f} "
              f"{fast_cpu:>11.2f} {len(model['merges']):>7} / {len(ours):<7} "
              f"{shared_tokens(ours, model):>7}",
              flush=True)
    print(f"load average now {os.getloadavg()[0]:.1f}")

    if args.with_simple:
        text = docstring_text(args.simple_size)
        word_counts = count_words(text)
        start = time.perf_counter()
        simple = simple_trainer.train_bpe(word_counts, args.merges)
        simple_seconds = time.perf_counter() - start
        fast_seconds, _, fast = best_time(lambda: fast_trainer.train_bpe(word_counts, args.merges),
                                          args.repeat)
        speedup = ratio(simple_seconds, fast_seconds,
                        None if simple == fast else "the merges differ", "{:.0f}x")
        print(
            f"\nsimple trainer, {args.simple_size:g} MB, {args.merges} merges (word counting "
            f"excluded): {simple_seconds:.1f} s; fast trainer {fast_seconds:.2f} s ({speedup}); "
            f"same merges: {'yes' if simple == fast else 'NO'}"
        )


if __name__ == "__main__":
    main()
