"""Summarise a py-spy raw profile (one `frame;frame;... count` line a stack): where the samples are.

    python benchmarks/profile_top.py PROFILE.txt [--top 25]

Prints each function's inclusive share (in any frame of the stack) and self share (the innermost frame).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

_FRAME = re.compile(r"^(?P<func>[^ ]+) \((?P<file>[^:]+)(?::\d+)?\)$")


def short(frame: str) -> str:
    m = _FRAME.match(frame.strip())
    if m is None:
        return frame.strip()
    parts = Path(m["file"]).parts
    tail = "/".join(parts[-2:])
    return f"{m['func']} ({tail})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in args.profile.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [short(f) for f in stack.split(";")]
        total += n
        own[frames[-1]] += n
        for f in set(frames):
            inclusive[f] += n
    print(f"{total} samples")
    print("inclusive:")
    for f, n in inclusive.most_common(args.top):
        print(f"  {100 * n / total:5.1f} %  {f}")
    print("self:")
    for f, n in own.most_common(args.top):
        print(f"  {100 * n / total:5.1f} %  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
