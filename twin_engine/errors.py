"""Errors of the twin engine and of the document loaders. One root: TwinError."""

from __future__ import annotations


class TwinError(Exception):
    """Root of every error raised by twin_engine."""


class DefinitionError(TwinError):
    """A twin, scenario or manifest document is invalid.

    Rendered as `file:line: path: message`, e.g.
    `twin.yaml:41: spec.tools.refund_payment.handler.effects[0].op: 'incr' is not one of [...]`.
    """

    def __init__(self, message: str, *, path: str = "", file: str | None = None, line: int | None = None):
        self.message = message
        self.path = path
        self.file = file
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        path = f"{self.path}: " if self.path else ""
        return f"{where}{path}{self.message}"

    def located(self, file: str, line: int | None) -> DefinitionError:
        return DefinitionError(self.message, path=self.path, file=file, line=line)
