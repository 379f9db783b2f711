"""Plain values across the process boundary, with their exact types.

Student code runs in a kernel; the hidden tests run in the grader. Values travel between them
as tagged JSON built only from exact built-in types, so whatever a student returns arrives as a
plain ``list``/``dict``/``Counter``/... that the grader built itself. An object whose ``==``
always says True, or any subclass of a built-in, arrives as an :class:`Unsupported` marker that
equals nothing:

    >>> decode(encode((1, ["a"], {"b": 2.5})))
    (1, ['a'], {'b': 2.5})
    >>> class AlwaysEqual(list):
    ...     def __eq__(self, other): return True
    >>> decode(encode(AlwaysEqual())) == []
    False

The other way, the grader's arguments travel to the kernel pickled (:func:`pack`): the kernel
only ever unpickles what the grader made, never the reverse, and unpickling is ~30 times faster
than decoding tagged JSON (a hidden case of 20,000 words: 0.005 s against 0.15 s each way).

    >>> unpack(pack(([("a", "b")], {"n": 1}))) == ([("a", "b")], {"n": 1})
    True

This file is also sent, as source, into the student's kernel (see ``process.py``): it may
import only the standard library.
"""
import base64
import collections
import io
import json
import pickle
import sys

MAX_NODES = 2_000_000
MAX_DEPTH = 200

_MAPPINGS: dict[type, str] = {
    dict: "dict",
    collections.Counter: "Counter",
    collections.OrderedDict: "OrderedDict",
    collections.defaultdict: "defaultdict",
}
_SEQUENCES: dict[type, str] = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset"}


class Unsupported:
    """Stands for a value of a type that does not cross the boundary; equal to nothing."""

    def __init__(self, type_name, text):
        self.type_name, self.text = type_name, text

    def __eq__(self, other):
        return False

    __hash__ = object.__hash__

    def __repr__(self):
        return f"<{self.type_name} object: {self.text}>"


def encode(value):
    """Tagged JSON-able form of ``value``; exact built-in types only."""
    budget = [MAX_NODES]

    def walk(obj, depth):
        budget[0] -= 1
        kind = type(obj)
        if budget[0] < 0 or depth > MAX_DEPTH:
            return ["unsupported", "oversized value", "too large or too deeply nested"]
        if obj is None:
            return ["none"]
        if kind is bool:
            return ["bool", obj]
        if kind is int:
            return ["int", str(obj)]
        if kind is float:
            return ["float", repr(obj)]
        if kind is str:
            return ["str", obj]
        if kind is bytes:
            return ["bytes", obj.hex()]
        if kind in _SEQUENCES:
            return [_SEQUENCES[kind], [walk(item, depth + 1) for item in obj]]
        if kind in _MAPPINGS:
            return [
                _MAPPINGS[kind],
                [[walk(k, depth + 1), walk(v, depth + 1)] for k, v in obj.items()],
            ]
        name = f"{getattr(kind, '__module__', '?')}.{getattr(kind, '__qualname__', '?')}"
        try:
            text = object.__repr__(obj)
        except Exception:
            text = "?"
        return ["unsupported", name, text[:200]]

    return walk(value, 0)


# Bounds on what the grader rebuilds from a kernel's reply (``decode``): a kernel may send anything.
MAX_INT_DIGITS = 4300  # CPython's own default limit on int("...") (sys.get_int_max_str_digits)
MAX_FLOAT_CHARS = 64  # the repr of any float has at most 24 characters
# Distinct values of one container that may share one hash. Many distinct values with one hash
# make a set or dict of them quadratic to build inside a single C call (600,000 integers congruent
# modulo 2**61 - 1 held a grader for hours), whether decode builds it or a hidden test does
# (``set(got)``); honest values almost never share a hash (-1 and -2 do).
MAX_SAME_HASH = 16
# The work decode may do beyond building the values: hashing and comparing items, counted in values.
MAX_CHECK_WORK = 8 * MAX_NODES
_HASHED = (int, float, str, bytes, bool, type(None), tuple, frozenset)
_SMALL = (int, bool)
_MODULUS = 2**61 - 1  # sys.hash_info.modulus on 64-bit builds
# Whose hashes a kernel can choose: strings and bytes hash with a key of this process's own, unless
# hash randomization is off (PYTHONHASHSEED=0).
_PREDICTABLE = _HASHED if not sys.flags.hash_randomization else (int, float, tuple, frozenset)


class Pathological(ValueError):
    """A reply the grader refuses to rebuild: too large, too deep, or built to be slow to use."""


def decode(tagged):
    """The value ``encode`` described, rebuilt from exact built-in types.

    What a kernel sends is bounded before it is used: at most ``MAX_NODES`` values, nested at most
    ``MAX_DEPTH`` deep, integers of at most ``MAX_INT_DIGITS`` digits, and no container (list,
    tuple, set, dict) with more than ``MAX_SAME_HASH`` distinct values sharing one hash, checked
    before any hashed container is built. Anything else decodes to an :class:`Unsupported` marker
    (equal to nothing), in time linear in the reply's size:

        >>> decode(["set", [["int", str(k * (2**61 - 1))] for k in range(1000)]])
        <refused value object: a set of values that share one hash (built to be slow to use)>
    """
    budget = [MAX_NODES, MAX_CHECK_WORK]
    try:
        return _decode(tagged, 0, budget)
    except Pathological as refused:
        return Unsupported("refused value", str(refused))
    # not what encode makes
    except (IndexError, KeyError, TypeError, ValueError, OverflowError) as malformed:
        return Unsupported("malformed value", type(malformed).__name__)


def _check_hashes(items: list, nodes: int, what: str, budget: list) -> None:
    """Refuse ``items`` (``nodes`` values in all) if more than ``MAX_SAME_HASH`` distinct ones share
    a hash. Cheap: one hash each, counted; only the items of a hash many items share are then put,
    one by one, in a set that never holds more than ``MAX_SAME_HASH`` + 1 of them."""
    if len(items) <= MAX_SAME_HASH:
        return
    budget[1] -= nodes  # hashing a tuple walks it
    if budget[1] < 0:
        raise Pathological("too much work to check")
    try:
        # Distinct ints below 2**61 - 1 in size never share a hash (but -1 and -2), nor do True,
        # False and None: only the rest is hashed (a corpus's counts cost nothing here).
        hashes = [
            hash(item)
            if type(item) in _PREDICTABLE
            and not (type(item) in _SMALL and -_MODULUS < item < _MODULUS)
            else None
            for item in items
        ]
    # a tuple holding a list: never a set item or a dict key, nor hashed by anyone
    except TypeError:
        return
    # Safe to count: equal hashes are equal keys here, and at most 8 distinct 64-bit hashes share a
    # hash.
    crowded = {
        value
        for value, count in collections.Counter(hashes).items()
        if count > MAX_SAME_HASH and value is not None
    }
    groups: dict = {}
    for item, value in zip(items, hashes):
        if value in crowded:
            seen = groups.setdefault(value, set())
            # at most MAX_SAME_HASH comparisons: the set is refused as soon as it outgrows that
            seen.add(item)
            if len(seen) > MAX_SAME_HASH:
                raise Pathological(
                    f"{what} of values that share one hash (built to be slow to use)"
                )


def _decode(tagged, depth: int, budget: list):
    budget[0] -= 1
    if budget[0] < 0:
        raise Pathological(f"more than {MAX_NODES:,} values")
    if type(tagged) is not list or not tagged or type(tagged[0]) is not str:
        raise Pathological("not a value the codec makes")
    tag = tagged[0]
    if tag == "str" or tag == "int" or tag == "float" or tag == "bytes":
        text = tagged[1]
        if type(text) is not str:
            raise Pathological(f"a {tag} that is not text")
        if tag == "str":
            return text
        if tag == "int":
            if len(text) > MAX_INT_DIGITS + 1:
                raise Pathological(f"an integer of more than {MAX_INT_DIGITS} digits")
            return int(text)
        if tag == "float":
            if len(text) > MAX_FLOAT_CHARS:
                raise Pathological(f"a float of more than {MAX_FLOAT_CHARS} characters")
            return float(text)
        return bytes.fromhex(text)
    if tag == "none":
        return None
    if tag == "bool":
        return tagged[1] is True
    if depth >= MAX_DEPTH:
        raise Pathological(f"nested more than {MAX_DEPTH} deep")
    if tag in _SEQUENCE_TYPES:
        if type(tagged[1]) is not list:
            raise Pathological(f"a {tag} that is not a list")
        before = budget[0]
        items = [_decode(item, depth + 1, budget) for item in tagged[1]]
        _check_hashes(items, before - budget[0], f"a {tag}", budget)
        if tag in ("set", "frozenset") and any(type(item) not in _HASHED for item in items):
            raise Pathological(f"a {tag} with an unhashable item")
        return _SEQUENCE_TYPES[tag](items)
    if tag in _MAPPING_TYPES:
        if type(tagged[1]) is not list or any(
            type(pair) is not list or len(pair) != 2 for pair in tagged[1]
        ):
            raise Pathological(f"a {tag} that is not a list of pairs")
        before = budget[0]
        keys = [_decode(key, depth + 1, budget) for key, _ in tagged[1]]
        _check_hashes(keys, before - budget[0], f"a {tag}", budget)
        if any(type(key) not in _HASHED for key in keys):
            raise Pathological(f"a {tag} with an unhashable key")
        before = budget[0]
        values = [_decode(value, depth + 1, budget) for _, value in tagged[1]]
        _check_hashes(values, before - budget[0], f"a {tag}", budget)
        if tag == "defaultdict":
            return collections.defaultdict(None, zip(keys, values))
        built = dict(zip(keys, values))
        return built if tag == "dict" else _MAPPING_TYPES[tag](built)
    if tag == "unsupported" and len(tagged) == 3:
        return Unsupported(str(tagged[1])[:200], str(tagged[2])[:200])
    raise Pathological(f"an unknown tag {tag[:40]!r}")


_SEQUENCE_TYPES = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}
_MAPPING_TYPES = {
    "dict": dict,
    "Counter": collections.Counter,
    "OrderedDict": collections.OrderedDict,
    "defaultdict": collections.defaultdict,
}


# What may travel to the kernel besides exact instances of None, bool, int, float, str, bytes, list,
# tuple, dict, set and frozenset (which pickle never shows to ``reducer_override``).
_PACKABLE = frozenset(_MAPPINGS) | {
    type,
    type(None),
    bool,
    int,
    float,
    str,
    bytes,
    list,
    tuple,
    dict,
    set,
    frozenset,
}


class _PlainPickler(pickle.Pickler):
    """Pickles plain values only: an argument the kernel could not rebuild from the standard
    library (a function of the grader, a subclass) is refused here, not there."""

    def reducer_override(self, obj):
        if obj in _PACKABLE if type(obj) is type else type(obj) in _PACKABLE:
            return NotImplemented
        raise TypeError(
            f"a hidden test passed a {type(obj).__qualname__}: only plain values reach the "
            "student's code"
        )


def pack(value) -> str:
    """Grader side: ``value`` (plain data) as text for the kernel's :func:`unpack`."""
    buffer = io.BytesIO()
    _PlainPickler(buffer, protocol=4).dump(value)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def unpack(text: str):
    """Kernel side: the value :func:`pack` made, a fresh copy each time."""
    return pickle.loads(base64.b64decode(text))


def _raised(error):
    """``["raised", <exception class>, <is built-in>, <message>]``."""
    import builtins

    kind = type(error)
    builtin = getattr(builtins, kind.__name__, None) is kind
    try:
        message = str(error)[:500]
    except Exception:
        message = "?"
    return ["raised", kind.__name__, builtin, message]


def _outcome(function, args, kwargs, with_arguments=False):
    """``["returned", <encoded value>]`` (with ``with_arguments``, the arguments as the call left
    them too) or ``["raised", <exception class>, <is built-in>, <message>]``."""
    try:
        result = function(*args, **kwargs)
    except Exception as error:
        return _raised(error)
    if with_arguments:
        return ["returned", encode(result), encode(list(args))]
    return ["returned", encode(result)]


def call_in_namespace(namespace, name, payload):
    """Kernel side: call ``namespace[name]`` with the packed ``(args, kwargs)``; its outcome as JSON
    text."""
    args, kwargs = unpack(payload)
    return json.dumps(_outcome(namespace[name], args, kwargs))


class _OverTime(BaseException):
    """Raised into a student's call that ran past its own time limit (BaseException: an
    ``except Exception`` in the student's code does not swallow it)."""


def call_each_in_namespace(namespace, name, payload, seconds=0.0, with_arguments=False):
    """Kernel side: call ``namespace[name]`` once per packed argument list of the packed
    ``(argument_lists, keywords)`` (the same keywords for every call), as a loop would, stopping
    at the first exception; the outcomes as JSON text. Each call gets arguments of its own (a
    function that changes its input changes nothing for the next call). With ``seconds``, each
    call has that time limit of its own (``["timeout"]`` ends the list), as one call at a time would
    have."""
    import signal

    outcomes = []
    timed = seconds > 0 and hasattr(signal, "setitimer")
    if timed:
        def over_time(signum, frame):
            raise _OverTime()

        previous = signal.signal(signal.SIGALRM, over_time)
    argument_lists, keywords = unpack(payload)
    try:
        for packed in argument_lists:
            args, kwargs = unpack(packed), unpack(keywords)
            outcome = None
            try:
                if timed:
                    signal.setitimer(signal.ITIMER_REAL, seconds)
                outcome = _outcome(namespace[name], args, kwargs, with_arguments)
                if timed:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            except _OverTime:  # (an alarm just after the call returned keeps what it returned)
                outcome = outcome or ["timeout"]
            if timed:
                signal.setitimer(signal.ITIMER_REAL, 0)
            outcomes.append(outcome)
            if outcome[0] != "returned":
                break
    finally:
        if timed:
            signal.signal(signal.SIGALRM, previous)
    return json.dumps(outcomes)


def running_when_stopped(namespace):
    """The notebook's functions that were running when the last cell was interrupted (IPython
    keeps the interrupt's traceback in ``sys.last_traceback``), as JSON."""
    codes = set()
    trace = getattr(sys, "last_traceback", None)
    while trace is not None:
        codes.add(trace.tb_frame.f_code)
        trace = trace.tb_next
    names = [name for name, value in list(namespace.items())
             if not name.startswith("_") and getattr(value, "__code__", None) in codes]
    return json.dumps(sorted(names))


def describe(namespace, name):
    """Kernel side: ``"function"``, ``"value"`` or ``"missing"`` for a name of the notebook."""
    if name not in namespace:
        return "missing"
    return "function" if callable(namespace[name]) else "value"


def fetch(namespace, name):
    """Kernel side: a notebook variable, encoded as JSON text."""
    return json.dumps(encode(namespace[name]))


# -- state snapshots: may a part's hidden tests run after the whole notebook, not at its place? --
# The grader runs the notebook once, with its visible checks, and the hidden tests afterwards, when
# what each part's hidden tests can reach is what it was at the part's test cell: the same objects
# bound to the same names (functions, and the globals they read, followed through their code),
# and the same pickled bytes for plain values. Anything else makes the grader grade the part at
# its place in a second kernel. The student can only fool this into grading their own final code.
_SNAPSHOTS: dict = {}


# The instructions that name a global: not attribute names, which share ``co_names`` with them
# (``text.encode(...)`` reads no global ``encode``).
_GLOBAL_ACCESS = frozenset(
    {"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_FROM_DICT_OR_GLOBALS"}
)


def _global_names(function):
    """The global names a notebook function reads or binds (its code and nested code).

    >>> def f(text):
    ...     return text.encode("utf-8"), len(text)
    >>> sorted(_global_names(f))
    ['len']
    """
    import dis

    names: set[str] = set()
    stack = [getattr(function, "__code__", None)]
    while stack:
        code = stack.pop()
        if code is None:
            continue
        names.update(
            instruction.argval
            for instruction in dis.get_instructions(code)
            if instruction.opname in _GLOBAL_ACCESS
        )
        stack.extend(const for const in code.co_consts if hasattr(const, "co_names"))
    return names


def _state(value):
    """What must not change for a value to count as the same: bytes of plain data, the code of a
    notebook function (its defaults and closure too), the identity of anything else."""
    import pickle
    import types

    if isinstance(value, types.FunctionType):
        extra = (value.__defaults__, value.__kwdefaults__,
                 tuple(getattr(cell, "cell_contents", None) for cell in (value.__closure__ or ())))
        try:
            return ("function", hash(pickle.dumps(extra, protocol=4)))
        except Exception:
            return ("function", None)  # unpicklable defaults: never "unchanged"
    if isinstance(value, (types.ModuleType, type, types.BuiltinFunctionType)):
        return ("object",)
    try:
        return ("value", hash(pickle.dumps(value, protocol=4)))
    except Exception:
        return ("value", None)


def _reachable(namespace, names):
    """``names`` and every notebook global that the notebook functions among them read,
    transitively."""
    import types

    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        value = namespace.get(name, _MISSING)
        functions = [value] if isinstance(value, types.FunctionType) else []
        if isinstance(value, type) and getattr(value, "__module__", "") == "__main__":
            functions = [v for v in vars(value).values() if isinstance(v, types.FunctionType)]
        for function in functions:
            if getattr(function, "__globals__", None) is namespace:
                todo.extend(_global_names(function))
    return seen


def snapshot(namespace, key, names_json):
    """Kernel side: remember what the part ``key``'s hidden tests could reach now."""
    taken = {}
    for name in _reachable(namespace, json.loads(names_json)):
        value = namespace.get(name, _MISSING)
        taken[name] = (value, _state(value) if value is not _MISSING else None)
    _SNAPSHOTS[key] = taken
    return "ok"


def changed_since(namespace, keys_json):
    """Kernel side: the keys (as JSON) whose snapshot no longer holds, or that were never taken."""
    changed = []
    for key in json.loads(keys_json):
        taken = _SNAPSHOTS.get(key)
        if taken is None or any(
            namespace.get(name, _MISSING) is not value
            or (
                value is not _MISSING
                and (state is None or state[-1] is None or _state(value) != state)
            )
            for name, (value, state) in taken.items()
        ):
            changed.append(key)
    return json.dumps(changed)


# -- stand-ins: a student's helper replaced, for one part, by the grader's reference ---------------
# The stand-in holds no reference code: it sends its arguments to the grader through the kernel's
# stdin channel (an input request) and returns the grader's answer. The grader answers only while
# the part that needs it is being graded, so a copy kept for later is worth nothing.
STAND_IN_REQUEST = "\x00autograder-stand-in "
_ORIGINALS: dict = {}
_MISSING = object()


def _stand_in(name):
    def stand_in(*args, **kwargs):
        from IPython import get_ipython

        request = STAND_IN_REQUEST + json.dumps([name, encode([list(args), kwargs])])
        outcome = json.loads(get_ipython().kernel.raw_input(request))
        if outcome[0] == "returned":
            # The calling convention of the task: an argument the reference changed in place is
            # changed here too, and a reference that returned its argument returns this one.
            changes = outcome[2] if len(outcome) > 2 else {}
            for index, value in changes.get("changed", []):
                _update_in_place(args[index], decode(value))
            if changes.get("same") is not None:
                return args[changes["same"]]
            return decode(outcome[1])
        import builtins

        kind = getattr(builtins, outcome[1], None)
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            kind = RuntimeError
        raise kind(outcome[3])

    stand_in.__name__ = stand_in.__qualname__ = name
    return stand_in


def _update_in_place(target, value):
    """Make the list, dict or set ``target`` hold what ``value`` holds, keeping its identity."""
    if isinstance(target, list) and isinstance(value, list):
        target[:] = value
    elif isinstance(target, dict) and isinstance(value, dict):
        target.clear()
        target.update(value)
    elif isinstance(target, set) and isinstance(value, (set, frozenset)):
        target.clear()
        target.update(value)


def stand_in(namespace, name):
    """Kernel side: replace the notebook's ``name`` by a stand-in; the original is kept to be put
    back."""
    if name not in _ORIGINALS:
        _ORIGINALS[name] = namespace.get(name, _MISSING)
    namespace[name] = _stand_in(name)
    return "ok"


def put_back(namespace, name):
    """Kernel side: the notebook's own ``name`` again (nothing to do after a kernel restart)."""
    original = _ORIGINALS.pop(name, None)
    if original is _MISSING:
        namespace.pop(name, None)
    elif original is not None:
        namespace[name] = original
    return "ok"


def answer_stand_in(prompt, references):
    """Grader side: the reply to a stand-in's input request, running ``references[name]`` on its
    arguments; any other request (say, the student's own ``input()``) gets an error."""
    try:
        if not prompt.startswith(STAND_IN_REQUEST):
            raise ValueError("input() is not available while grading")
        name, payload = json.loads(prompt[len(STAND_IN_REQUEST):])
        if name not in references:
            raise ValueError(f"the reference {name} is not available here")
        args, kwargs = decode(payload)
        args = list(args)
        before = [
            json.dumps(encode(arg)) if isinstance(arg, (list, dict, set)) else None for arg in args
        ]
        try:
            result = references[name](*args, **dict(kwargs))
        except Exception as error:
            return json.dumps(_raised(error))
        changed = [[index, encode(arg)] for index, arg in enumerate(args)
                   if before[index] is not None and json.dumps(encode(arg)) != before[index]]
        same = next(
            (
                index
                for index, arg in enumerate(args)
                if arg is result and before[index] is not None
            ),
            None,
        )
        return json.dumps(["returned", encode(result), {"changed": changed, "same": same}])
    except Exception as error:
        return json.dumps(["raised", "RuntimeError", True, str(error)[:200]])
