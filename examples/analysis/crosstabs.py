"""Crosstabs and comparisons as pandas DataFrames (deniable.analysis).

    pip install 'deniable[analysis]'
    deniable-aggregator demo --no-serve --keep     # or any aggregator you can read
    python examples/analysis/crosstabs.py http://127.0.0.1:8000 SURVEY ROWS COLUMNS [LATER]

Prints the crosstab of two questions with its simultaneous intervals as a
table (rows x columns, percent), and, given a later survey (a second wave),
what changed in the rows question.  With an operator token in
DENIABLE_OPERATOR_TOKEN, private surveys work too.  The same methods exist on
``Export(path_to_export.jsonl, survey_definition)`` for an operator's raw export.
"""

from __future__ import annotations

import os
import sys

from deniable.analysis import Aggregator


def main(url: str, survey: str, rows: str, columns: str, later: str | None = None) -> None:
    aggregator = Aggregator(url, token=os.environ.get("DENIABLE_OPERATOR_TOKEN"))
    table = aggregator.crosstab(survey, rows, columns)
    print(f"{rows} by {columns}: n = {table.attrs['n']:,} respondents answered both")
    if table.attrs["kind"] == "means":
        print(table[["label", "mean", "simultaneous_lower", "simultaneous_upper"]].round(2))
    else:
        # The tightest family for all cells at once (chosen from n, ε and β only); the raw
        # estimates can be slightly negative: "clipped" is for reading, "estimate" for sums.
        family = table.attrs["simultaneous_tightest"]
        prefix = "" if family == "chebyshev" else f"{family}_"
        low, high = table[prefix + "simultaneous_lower"], table[prefix + "simultaneous_upper"]
        cells = [
            f"{100 * e:.0f}% [{100 * lo:.0f}-{100 * hi:.0f}]"
            for e, lo, hi in zip(table["clipped"], low, high, strict=True)
        ]
        grid = table.assign(cell=cells).pivot(index="row", columns="column", values="cell")
        print(grid.reindex(index=table["row"].unique(), columns=table["column"].unique()))
        print(f"95% intervals, all cells at once ({family} bound)")
    if later:
        changes = aggregator.compare(survey, later, rows)
        for change in changes.itertuples():
            print(f"{rows} = {change.label}: {change.sentence}")


if __name__ == "__main__":
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    main(*sys.argv[1:])
