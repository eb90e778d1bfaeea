"""Reading pandas tables without per-row pandas work.

The event table's text columns (``input``, ``kind``, ``operation`` ...) are categoricals
with a handful of categories and up to millions of rows. Converting one with
``astype(str)`` builds a string per row; :func:`category_mask` and :func:`str_values` work
on the categories and expand the answer with the integer codes. :func:`row_dicts` walks
the rows of a small table like ``iterrows`` without building a Series per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["category_mask", "row_dicts", "str_values", "with_dtypes"]


def category_mask(column: pd.Series, pred: Callable[[str], bool]) -> np.ndarray:
    """``pred`` applied to each value of a (categorical) column, evaluated per category."""
    cat = column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")
    codes = cat.cat.codes.to_numpy()
    table = np.array(
        [bool(pred(str(c))) for c in cat.cat.categories.tolist()] + [False], dtype=bool
    )
    return table[codes]  # code -1 (missing) picks the trailing False


def row_dicts(frame: pd.DataFrame) -> Iterator[tuple[Any, dict[str, Any]]]:
    """``(label, {column: value})`` per row: the values ``iterrows`` gives, minus a Series each."""
    columns = frame.columns.tolist()
    for label, values in zip(frame.index, frame.values, strict=True):
        yield label, dict(zip(columns, values, strict=True))


def with_dtypes(frame: pd.DataFrame, dtypes: Mapping[str, str]) -> pd.DataFrame:
    """``frame.astype(dtypes)``, without converting the columns that have their dtype already."""
    todo = {c: t for c, t in dtypes.items() if frame[c].dtype != t}
    return frame.astype(todo) if todo else frame


def str_values(column: pd.Series) -> np.ndarray:
    """The values of ``column.astype(str).to_numpy()``, each category converted once: a
    category as ``str`` makes it, a missing value NaN (as ``astype(str)`` leaves it in a
    categorical). Built from a plain list, not a Series: this runs some 15 times for each
    run a fleet worker analyses, and a Series' conversion costs ten times the list's."""
    if not isinstance(column.dtype, pd.CategoricalDtype):
        return column.astype(str).to_numpy()
    table = np.array([np.nan, *map(str, column.cat.categories.tolist())], dtype=object)
    return table[column.cat.codes.to_numpy() + 1]
