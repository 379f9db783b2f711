"""Calls from the grader into the notebook running in a kernel: a student's function called with
plain values (one call, or many in one round trip), a variable fetched, a name described,
snapshots of what a part's hidden tests can reach, and stand-ins placed and put back
(``codec.py`` is the kernel's side of each).

A call's outcome crosses the boundary as a list that ``codec._outcome`` writes in the kernel and
:meth:`CallOutcome.decode` alone reads here.
"""

from __future__ import annotations

import ast
import builtins
import re
import contextlib
import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from autograder.kernel import codec, shapes
from autograder.course_interface import OWN_CLASS, StudentError, mark_student_error
from autograder.kernel.errors import CallTimeout, KernelDied, StudentRaised
from autograder.kernel.process import CODEC_MODULE, Clock, Kernel
from autograder.kernel.limits import Limits


@dataclass(frozen=True)
class CallOutcome:
    """What one call of a student's function did, as the kernel's codec reported it.

    >>> raised = CallOutcome.decode(["raised", "KeyError", True, "x"])
    >>> raised.kind, raised.class_name, raised.builtin, raised.message
    ('raised', 'KeyError', True, 'x')
    >>> CallOutcome.decode(["timeout"]).kind
    'timeout'
    """

    kind: str  # returned | raised | timeout
    value: Any = None  # returned: the encoded value
    arguments: Any = None  # returned, with_arguments: the encoded arguments as the call left them
    class_name: str = ""  # raised: the exception's class name...
    builtin: bool = False  # ... whether that is the built-in class of that name
    message: str = ""  # ... and its message (a hidden test may read it; feedback never shows it)

    @classmethod
    def decode(cls, outcome: list) -> "CallOutcome":
        if outcome[0] == "returned":
            return cls("returned", outcome[1], outcome[2] if len(outcome) > 2 else None)
        if outcome[0] == "raised":
            _, class_name, builtin, message = outcome
            return cls(
                "raised", class_name=str(class_name), builtin=bool(builtin), message=str(message)
            )
        if outcome[0] == "timeout":
            return cls("timeout")
        raise KernelDied(
            f"the grader's call failed in the kernel: an outcome of kind {str(outcome[0])[:40]!r}"
        )

    def error(self, name: str) -> Exception:
        """The exception to raise in the grader for a call of ``name`` that raised: a built-in class
        again with its message, any other as :class:`StudentRaised`; marked with a
        :class:`StudentError`."""
        kind = getattr(builtins, self.class_name, None) if self.builtin else None
        error: Exception
        if isinstance(kind, type) and issubclass(kind, Exception):
            try:
                # the hidden test may read the message; the feedback never shows it
                error = kind(self.message)
            except Exception:  # a built-in class taking more than a message (UnicodeDecodeError)
                error = StudentRaised(f"{self.class_name}: {self.message}")  # still named
            said = StudentError(name, kind.__name__)
        else:
            # a class the student made: its name is theirs to choose, like a message, so it is
            # not repeated
            error = StudentRaised(f"{OWN_CLASS}: {self.message}")
            said = StudentError(name, OWN_CLASS)
        # What the feedback may say of it, in the grader's words only (verdicts.raised).
        mark_student_error(error, said)
        return error


def _defines(code: str, word: str) -> bool:
    """Whether ``code`` defines the name ``word`` (a regular expression): def, class or ``=``."""
    return re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{word}\b|^\s*{word}\s*=[^=]", code,
                     re.MULTILINE) is not None


class NotebookCalls:
    """The grader's calls into the notebook of one :class:`~autograder.kernel.process.Kernel`."""

    def __init__(self, kernel: Kernel, limits: Limits, clock: Clock):
        self.kernel, self.limits, self.clock = kernel, limits, clock
        # every argument a hidden test passed, to keep them out of feedback
        self.sent_arguments: list = []
        # function name -> the shape of what it returned (shapes.py)
        self.shapes: dict[str, Any] = {}
        # A function that ran out of time once (a call, or a cell calling it): the verdict it
        # got, and the source of the cell that defined it. Its next calls fail at once with that
        # verdict: an infinite loop costs its notebook one time limit, not one per part or cell
        # that calls it (shared by the file's kernels: grading/grade.py).
        self.hung: dict[str, tuple[str, str]] = {}
        self.defined: dict[str, str] = {}  # name -> the source of the last cell that defined it
        self.standing: set[str] = set()  # names a stand-in holds now: the reference, never hung

    @contextlib.contextmanager
    def limits_for(self, call_seconds: float, at_least_usual: bool = True) -> Iterator[None]:
        """Within the block, a call may run ``call_seconds`` (at least the usual time, unless
        ``at_least_usual`` is false: a speed check's cut, at its limit)."""
        usual = self.limits
        if at_least_usual:
            call_seconds = max(call_seconds, usual.call_seconds)
        self.limits = dataclasses.replace(usual, call_seconds=call_seconds)
        try:
            yield
        finally:
            self.limits = usual

    def evaluate(self, expression: str, timeout: float) -> Any:
        """The value of ``expression`` in the kernel (a literal); a dead kernel is restarted
        and raises."""
        try:
            # silent: no execute_input to publish, no post-run events; 10% less per call, measured.
            content = self.kernel.execute(
                "", timeout=timeout, silent=True, expressions={"value": expression}
            )
        except KernelDied:
            self.kernel.restart()
            raise
        self.kernel.drain_output()
        result = content.get("user_expressions", {}).get("value", {})
        if result.get("status") != "ok":
            if result.get("ename") == "KeyboardInterrupt":
                raise CallTimeout(f"did not finish within {timeout:g} s")
            raise KernelDied(
                "the grader's call failed in the kernel: "
                f"{result.get('ename')}: {result.get('evalue')}"
            )
        return ast.literal_eval(result["data"]["text/plain"])

    def _codec(self, function: str, *args: Any) -> str:
        return (
            f"__import__('sys').modules[{CODEC_MODULE!r}].{function}(get_ipython().user_ns, "
            f"{', '.join(map(repr, args))})"
        )

    def _ask(self, function: str, *args: Any) -> Any:
        return self.evaluate(self._codec(function, *args), timeout=self.limits.call_seconds)

    def stand_in(self, name: str) -> None:
        """The notebook's ``name`` becomes a stand-in that asks the grader (see codec.py)."""
        self._ask("stand_in", name)
        self.standing.add(name)

    def put_back(self, name: str) -> None:
        self._ask("put_back", name)
        self.standing.discard(name)

    def _refuse_if_hung(self, name: str) -> None:
        if name in self.hung and name not in self.standing:
            raise CallTimeout(self.hung[name][0])

    def _hang(self, name: str, verdict: str) -> None:
        self.hung.setdefault(name, (verdict, self.defined.get(name, "")))

    def hung_in(self, code: str) -> str:
        """Why a cell using a function that already ran out of time is not run ("" if it uses none).
        A cell that defines the function is run: the same definition again (the second kernel, a
        replay) keeps it hung, another one (fixed, maybe) is called as it now is."""
        for name, (verdict, source) in list(self.hung.items()):
            word = re.escape(name)
            if _defines(code, word):
                if code != source:
                    del self.hung[name]
            elif name not in self.standing and re.search(rf"(?<![\w.]){word}(?!\w)", code):
                return f"not run: it uses {name}, which {verdict} in an earlier cell or part"
        return ""

    def ran(self, code: str) -> None:
        """``code`` is run in the kernel: remember it as the definition of the names it defines."""
        for name in re.findall(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", code, re.MULTILINE):
            self.defined[name] = code

    def note_stopped(self, verdict: str, code: str) -> None:
        """After the cell ``code`` was stopped at its time limit: the notebook's functions that
        were running then (from the interrupt's traceback, in the kernel) and that the cell names
        ran out of time. One it does not name was only called by them (``merge`` in a
        ``tokenize`` that never ends): its own part keeps its points."""
        try:
            names = json.loads(self._ask("running_when_stopped"))
        except (CallTimeout, KernelDied, ValueError):
            return
        for name in map(str, names):
            if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", code):
                self._hang(name, verdict)

    def snapshot(self, key: str, names: Iterable[str]) -> None:
        """Remember, in the kernel, what ``names`` reach now (see ``codec.snapshot``)."""
        self._ask("snapshot", key, json.dumps(list(names)))

    def changed_since(self, keys: list[str]) -> list[str]:
        """The keys whose snapshot no longer holds (or was lost with a restarted kernel)."""
        return json.loads(self._ask("changed_since", json.dumps(list(keys))))

    def describe(self, name: str) -> str:
        return self._ask("describe", name)

    def fetch(self, name: str) -> Any:
        return codec.decode(json.loads(self._ask("fetch", name)))

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """``name(*args, **kwargs)`` in the student's kernel; the result as plain values of
        exact types.

        A built-in exception the function raised is raised again here, with the same class and
        message; any other as :class:`StudentRaised` (:meth:`CallOutcome.error`).
        """
        self._refuse_if_hung(name)
        self.sent_arguments.append([list(args), kwargs])
        self.clock.hidden_input_sent()
        payload = codec.pack((list(args), kwargs))
        return self.result(
            name, CallOutcome.decode(json.loads(self._ask("call_in_namespace", name, payload)))
        )

    def call_each(
        self,
        name: str,
        argument_lists: list,
        within: float | None = None,
        keywords: dict | None = None,
        with_arguments: bool = False,
    ) -> "CallResults":
        """``name(*args, **keywords)`` for each of ``argument_lists``, in one round trip, as a loop
        would call them: each call has its own time limit (``call_seconds``, kept in the kernel),
        the batch stops at the first call that raised, and the results are read lazily, so that the
        error (or time-out) of call k is raised where a loop reaches case k, after the checks of the
        cases before it. ``within`` caps the whole batch (the part's time left). With
        ``with_arguments``, each result is ``(value, the arguments as the call left them)``: a
        hidden test can see whether a function changed its input."""
        self._refuse_if_hung(name)
        argument_lists = [list(args) for args in argument_lists]
        keywords = dict(keywords or {})
        self.sent_arguments.extend(argument_lists)
        self.clock.hidden_input_sent()
        if keywords:
            self.sent_arguments.append([[], keywords])
        payload = codec.pack(([codec.pack(args) for args in argument_lists], codec.pack(keywords)))
        seconds = self.limits.call_seconds
        timeout = seconds * max(1, len(argument_lists)) + self.limits.interrupt_grace_seconds
        if within is not None:
            timeout = min(timeout, max(within, 0.001))
        call = (
            self._codec("call_each_in_namespace", name, payload, seconds, True)
            if with_arguments
            else self._codec("call_each_in_namespace", name, payload, seconds)
        )
        outcomes = [
            CallOutcome.decode(outcome)
            for outcome in json.loads(self.evaluate(call, timeout=timeout))
        ]
        return CallResults(self, name, outcomes, len(argument_lists))

    def result(self, name: str, outcome: CallOutcome) -> Any:
        """What a call that had ``outcome`` gives the hidden test: its value, or the error
        raised."""
        if outcome.kind == "timeout":
            verdict = f"did not finish within {self.limits.call_seconds:g} s"
            if name not in self.standing:
                self._hang(name, verdict)
            raise CallTimeout(self.hung.get(name, (verdict, ""))[0])
        if outcome.kind == "raised":
            raise outcome.error(name)
        value = codec.decode(outcome.value)
        self.shapes[name] = shapes.merged(self.shapes.get(name), shapes.shape_of(value))
        if outcome.arguments is not None:  # call_each(..., with_arguments=True)
            return value, codec.decode(outcome.arguments)
        return value


class CallResults:
    """The results of :meth:`NotebookCalls.call_each`, decoded as they are read: reading the
    result of a call that raised (or ran out of time) raises, and so does reading any result after
    it, since the batch stopped there, as a loop would have."""

    def __init__(
        self, calls: NotebookCalls, name: str, outcomes: list[CallOutcome], requested: int
    ):
        self._calls, self._name, self._outcomes, self._requested = calls, name, outcomes, requested

    def __len__(self) -> int:
        return self._requested

    def __getitem__(self, index: int) -> Any:
        if not -self._requested <= index < self._requested:
            raise IndexError("call_each result index out of range")
        index %= self._requested
        outcome = (
            self._outcomes[min(index, len(self._outcomes) - 1)]
            if self._outcomes
            else CallOutcome("timeout")
        )
        if index >= len(self._outcomes) and outcome.kind == "returned":  # (never: all ran)
            raise KernelDied("the grader's call failed in the kernel: missing results")
        return self._calls.result(self._name, outcome)

    def __iter__(self) -> Iterator[Any]:
        for index in range(self._requested):
            yield self[index]

    def __eq__(self, other: object) -> bool:
        return list(self) == other

    __hash__ = None  # type: ignore[assignment]
