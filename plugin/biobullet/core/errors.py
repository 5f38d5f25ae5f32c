"""Error types. Every user-facing failure is one of these, carrying where it came from.

Messages quote text from model files and configs written by strangers: every quoted value goes through
`shown()` (control characters escaped, long values truncated) and the assembled message through
`clean_message()`, so an error is always one line of bounded length — a name containing "&#10;Traceback" cannot
forge extra lines, and a 20 MB invalid value is not echoed in full.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable

#: characters of a quoted value kept in a message (the rest is summarised)
VALUE_LIMIT = 80
#: characters of a whole message
MESSAGE_LIMIT = 2000


def _escape(text: str) -> str:
    """Control characters (C0, DEL, C1, line/paragraph separators) as visible escapes; the rest unchanged."""
    out = []
    for ch in text:
        code = ord(ch)
        # and the invisible direction marks/overrides, which make a terminal show a message reordered
        if code < 0x20 or 0x7F <= code < 0xA0 or code in (0x2028, 0x2029, 0x061C, 0x200E, 0x200F) \
                or 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch, f"\\x{code:02x}" if code < 0x100
                                                                  else f"\\u{code:04x}"))
        else:
            out.append(ch)
    return "".join(out)


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def shown(value: object, limit: int = VALUE_LIMIT) -> str:
    """A value quoted for a message: `'text'` with control characters escaped and at most `limit` characters."""
    text = value if isinstance(value, str) else repr(value)
    return "'" + _escape(_truncate(text, limit)) + "'"


def bare(value: object, limit: int = VALUE_LIMIT) -> str:
    """Like `shown` without the quotes (for names placed inside an element description)."""
    return _escape(_truncate(value if isinstance(value, str) else repr(value), limit))


def clean_message(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """One line of at most about `limit` characters: control characters escaped, the tail summarised."""
    return _escape(_truncate(str(text), limit))


def did_you_mean(value: object, options: Iterable[object]) -> str:
    """" (did you mean 'x'?)" for the option nearest to a mistyped name, else "": an option equal to it but for
    case first, then the nearest by difflib ratio ≥ 0.6 as written, then ignoring case. Names stay case-sensitive;
    only the suggestion ignores case, so 'J1' (ratio 0.5 to 'j1' as written) and 'ELBOW' suggest 'j1' and 'elbow'."""
    text, names = str(value), [str(o) for o in options]
    folded: dict[str, str] = {}
    for name in names:
        folded.setdefault(name.casefold(), name)
    if text.casefold() in folded:
        return f" (did you mean {shown(folded[text.casefold()])}?)"
    close = difflib.get_close_matches(text, names, n=1, cutoff=0.6)
    if not close:
        close = [folded[k] for k in difflib.get_close_matches(text.casefold(), list(folded), n=1, cutoff=0.6)]
    return f" (did you mean {shown(close[0])}?)" if close else ""


class BiobulletError(Exception):
    """Base class of every error biobullet raises on purpose (bad input, failed solve)."""

    def __str__(self) -> str:
        return clean_message(super().__str__())


class ModelError(BiobulletError):
    """A model file (or model argument) is malformed.

    The message names the file, the element and the attribute, and says what was expected.
    """

    def __init__(self, message: str, *, file: str | None = None, element: str | None = None,
                 attribute: str | None = None, expected: str | None = None, argument: str | None = None) -> None:
        # (an argument's name is its `attribute` too: callers read either — `Bridge(dt=0)`'s error named dt there)
        self.file, self.element, self.argument = file, element, argument
        self.attribute = attribute if attribute is not None else argument
        self.expected, self.detail = expected, message
        where = []
        if file:
            where.append(_truncate(str(file), 300))
        if element:
            where.append(_truncate(element, 200))
        if attribute:
            where.append(f"attribute '{_truncate(attribute, VALUE_LIMIT)}'")
        if argument:
            where.append(f"argument '{_truncate(argument, VALUE_LIMIT)}'")
        text = ": ".join(where + [message]) if where else message
        if expected:
            text += f" (expected {_truncate(expected, 400)})"
        super().__init__(clean_message(text))


class SolverError(BiobulletError):
    """A numerical solve failed (assembly, integration, singular configuration)."""


class EvaluationError(SolverError):
    """A model function was evaluated outside its domain or at a pole (log of a negative number, 1/(t - 0.1) at
    t = 0.1) or overflowed: the message names the function, its inputs and the time."""


def interrupted(exc: BaseException) -> bool:
    """Whether `exc` is Ctrl-C: a KeyboardInterrupt, or one caught while a compiled kernel called back into Python,
    which numba's dispatcher reports as SystemError("... returned a result with an exception set") caused by it."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


class KernelCompileError(RuntimeError):
    """A kernel of the library failed to compile: a bug in biobullet, not bad input (not a BiobulletError, so the
    CLI reports it as an internal error). The message names the kernel (module.function) and numba's first error
    line. A plug-in's kernel that fails to compile is not an error: `core.jit.function_address` gives None and its
    model runs on the callback stage."""

    def __init__(self, kernel: str, reason: str, callee: str | None = None, library: bool = True) -> None:
        self.kernel, self.reason, self.callee = kernel, reason, callee
        inside = f" (in the kernel it calls, {callee})" if callee and callee != kernel else ""
        blame = ("this is a bug in biobullet, not in your input; please report it with this message" if library
                 else "a kernel defined outside biobullet: check its code")
        super().__init__(clean_message(f"{'library ' if library else ''}kernel {kernel} failed to compile{inside}: "
                                       f"{reason} — {blame}"))


@dataclass(frozen=True)
class SourceRef:
    """Where a piece of a model came from: used to build precise error messages."""

    file: str
    element: str  # e.g. '<joint_function joint="elbow">'

    def error(self, attribute: str | None, message: str, expected: str | None = None) -> ModelError:
        return ModelError(message, file=self.file, element=self.element,
                          attribute=attribute, expected=expected)
