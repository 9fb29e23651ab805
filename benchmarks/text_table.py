"""A plain text table of a benchmark's figures (every column right-aligned).

The benchmark scripts run as ``.venv/bin/python benchmarks/<name>.py``, so this
folder is on ``sys.path`` and they import it as ``text_table``.
"""

from __future__ import annotations


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)
