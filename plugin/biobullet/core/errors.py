"""Error types. Every user-facing failure is one of these, carrying where it came from."""
from __future__ import annotations

from dataclasses import dataclass


class BiobulletError(Exception):
    """Base class of every error biobullet raises on purpose (bad input, failed solve)."""


class ModelError(BiobulletError):
    """A model file (or model argument) is malformed.

    The message names the file, the element and the attribute, and says what was expected.
    """

    def __init__(self, message: str, *, file: str | None = None, element: str | None = None,
                 attribute: str | None = None, expected: str | None = None, argument: str | None = None) -> None:
        self.file, self.element, self.attribute, self.argument = file, element, attribute, argument
        self.expected, self.detail = expected, message
        where = []
        if file:
            where.append(str(file))
        if element:
            where.append(element)
        if attribute:
            where.append(f"attribute '{attribute}'")
        if argument:
            where.append(f"argument '{argument}'")
        text = ": ".join(where + [message]) if where else message
        if expected:
            text += f" (expected {expected})"
        super().__init__(text)


class SolverError(BiobulletError):
    """A numerical solve failed (assembly, integration, singular configuration)."""


@dataclass(frozen=True)
class SourceRef:
    """Where a piece of a model came from: used to build precise error messages."""

    file: str
    element: str  # e.g. '<joint_function joint="elbow">'

    def error(self, attribute: str | None, message: str, expected: str | None = None) -> ModelError:
        return ModelError(message, file=self.file, element=self.element,
                          attribute=attribute, expected=expected)
