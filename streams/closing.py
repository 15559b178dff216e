"""One definition of `with thing:` for the objects that hold a connection or a file: the block closes them."""

from __future__ import annotations

from typing import Self


class Closing:
    """A `with` block returns the object and calls its `close()` on the way out, whatever happened."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
