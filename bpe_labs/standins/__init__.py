"""Stand-in corpora: small files the project writes itself, in the formats of the real corpora.

The real corpora (the Avalon Project's page of the Constitution of New York, DeepMind's
africa_galore.json) cannot be reached from the machines that build and test this kit, and are not
ours to commit. Each lab with an external corpus has a module here with
``write(directory, full_size=False) -> list[Path]``; ``full_size`` makes one as large as the
real corpus, for the benchmarks.
"""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

REAL_CORPORA = {
    "africa_galore.json": "https://storage.googleapis.com/dm-educational/assets/ai_foundations/africa_galore.json",
    "ny01.asp": "https://avalon.law.yale.edu/18th_century/ny01.asp",
    # GPT-2's tokenizer files, as OpenAI publishes them (lab 7 compares the student's Tokenizer with
    # tiktoken on them). They are OpenAI's: never committed (.gitignore); tests use files in their
    # format made from merges the course trains.
    # They are OpenAI's: never committed (.gitignore); tests use
    # files in their format made from merges the course trains.
    "gpt2/encoder.json": "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json",
    "gpt2/vocab.bpe": "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe",
}


def write_all(directory: Path, full_size: bool = False) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for module in pkgutil.iter_modules(__path__):
        written += importlib.import_module(f"{__name__}.{module.name}").write(
            directory, full_size=full_size
        )
    return written


def fetch_real_corpora(directory: Path) -> list[str]:
    """Download the real corpora into ``directory`` (for an instructor's machine with internet)."""
    import requests

    directory.mkdir(parents=True, exist_ok=True)
    lines = []
    for name, url in REAL_CORPORA.items():
        try:
            response = requests.get(url, timeout=60)
            response.raise_for_status()
        except requests.RequestException as error:
            lines.append(f"could not download {url}: {error}")
            continue
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(response.content)
        lines.append(f"wrote {directory / name} ({len(response.content):,} bytes) from {url}")
    return lines
