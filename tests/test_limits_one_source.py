"""One source for the grader's limits and defaults (autograder/kernel/limits.py): ``grade``,
``serve`` and ``gradescope`` offer the same options with the same defaults, Gradescope's zip
and the service's settings start from them, and docs/GRADING.md states them."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from autograder.cli import build_parser
from autograder.course import current
from autograder.grading.grade import Settings
from autograder.gradescope import GradescopeConfig
from autograder.kernel.limits import GRADER_MEMORY_BYTES, PART_SECONDS, MiB, Limits, limits_from
from autograder.service.settings import ServiceSettings

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = {"grade": ["submissions", "--out", "out"], "serve": [], "gradescope": ["toy_bpe"]}


def subcommand(name: str):
    parser = build_parser(current(), "bpe-labs")
    (commands,) = [action for action in parser._actions if hasattr(action, "_name_parser_map")]
    return commands.choices[name]


@pytest.mark.parametrize("command", ["grade", "serve", "gradescope"])
def test_every_command_defaults_to_the_limits(command):
    parser = subcommand(command)
    args = parser.parse_args(REQUIRED[command])
    assert limits_from(args) == Limits()
    assert args.part_timeout == PART_SECONDS == Settings().part_seconds
    helps = {action.option_strings[0]: " ".join(action.help.split()) for action in parser._actions
             if action.option_strings}
    usual = Limits()
    assert f"(default {usual.cell_seconds:g})" in helps["--cell-timeout"]
    assert f"(default {usual.call_seconds:g})" in helps["--call-timeout"]
    assert f"(default {usual.notebook_seconds:g}" in helps["--notebook-timeout"]
    assert f"(default {usual.memory_bytes / MiB:g}" in helps["--memory-mb"]
    if command != "gradescope":
        assert Settings.from_arguments(args) == replace(Settings(),
                                                        data_dir=Path(args.data_dir).resolve())
        assert (
            args.max_restarts == usual.max_restarts
            and args.grader_memory_mb * MiB == GRADER_MEMORY_BYTES
        )


def test_the_option_changes_the_limit():
    args = subcommand("serve").parse_args(["--cell-timeout", "7", "--memory-mb", "100",
                                           "--max-restarts", "1"])
    assert limits_from(args) == Limits(cell_seconds=7, memory_bytes=100 * MiB, max_restarts=1)


def test_gradescope_and_the_service_start_from_the_same_defaults():
    assert GradescopeConfig("toy_bpe", "data").part_seconds == PART_SECONDS
    service = ServiceSettings(db_url="sqlite://")
    assert service.grading == Settings() and service.grading.limits == Limits()


def test_the_docs_state_the_defaults():
    text = " ".join((ROOT / "docs" / "GRADING.md").read_text(encoding="utf-8").split())
    stated = dict(re.findall(r"`(--[a-z-]+) (\d+)`", text))
    usual = Limits()
    expected = {"--cell-timeout": f"{usual.cell_seconds:g}",
                "--call-timeout": f"{usual.call_seconds:g}", "--part-timeout": f"{PART_SECONDS:g}",
                "--memory-mb": f"{usual.memory_bytes / MiB:g}",
                "--notebook-timeout": f"{usual.notebook_seconds:g}",
                "--max-restarts": f"{usual.max_restarts}",
                "--grader-memory-mb": f"{GRADER_MEMORY_BYTES / MiB:g}"}
    assert {option: stated.get(option) for option in expected} == expected
