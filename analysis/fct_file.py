"""Read a campaign's collected FCT table one group of runs at a time, in bounded memory.

A whole-trace campaign's ``fct.parquet`` holds tens of millions of flows (Figure 7 on whole
traces: 51 M rows, 1.0 GB of Parquet, more than 24 GiB as one pandas DataFrame;
``bench/RESULTS.md`` "Figure 7 campaign"). Its readers (the summary, the report's plots,
the Figure 7 tables, the FCT export) need all rows of one *group* at a time (e.g. the runs
that differ only in their seed), never the whole table. :class:`FctFile` gives them that:

- :meth:`FctFile.group_keys` lists the distinct values of some key columns, from the
  Parquet row groups' min/max statistics where a row group holds one value (what
  ``disaggsim.sim.campaign`` writes: one run per row group), else by reading only the key
  columns of that row group;
- :meth:`FctFile.read_group` reads the rows of one group: only the row groups whose
  statistics admit it, only the columns asked for, in file order (so sums and means come
  out bit for bit as over the whole table).

Peak memory is one group's rows plus one Parquet row group (pyarrow writes at most 1 Mi
rows per row group by default), whatever the file's size. A file with one huge row group
(written by hand) is read correctly, only without the pruning.

Source: the Parquet format's column-chunk statistics (apache/parquet-format
``src/main/thrift/parquet.thrift``, ``Statistics``), read through pyarrow
(``pyarrow.parquet.ParquetFile.metadata``, ``read_row_groups``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

#: A group's key: one value per key column, in the order the columns were given.
GroupKey = tuple[Any, ...]


class FctFile:
    """A collected FCT Parquet file (``disaggsim.schemas.CAMPAIGN_FCT`` rows, or any
    table with the key columns asked for), read group by group.

    Args:
        path: the Parquet file (e.g. ``<out_dir>/fct.parquet``).

    Raises:
        FileNotFoundError: no such file. pyarrow.ArrowInvalid: not a Parquet file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: no FCT table")
        self._file = pq.ParquetFile(self.path)
        self.columns: list[str] = list(self._file.schema_arrow.names)

    @property
    def num_rows(self) -> int:
        """Rows (flows) in the file."""
        return int(self._file.metadata.num_rows)

    def _check(self, names: Sequence[str]) -> None:
        missing = [c for c in names if c not in self.columns]
        if missing:
            raise ValueError(f"{self.path}: FCT table lacks columns {missing}")

    def _row_group_values(self, index: int, keys: Sequence[str]) -> GroupKey | None:
        """The key of row group ``index`` if its statistics say it holds a single non-null
        value in every key column, else None."""
        row_group = self._file.metadata.row_group(index)
        values = []
        for key in keys:
            column = row_group.column(self.columns.index(key))
            stats = column.statistics
            if stats is None or not stats.has_min_max or stats.null_count or stats.min != stats.max:
                return None
            if isinstance(stats.min, float) and math.isnan(stats.min):
                return None
            values.append(stats.min)
        return tuple(values)

    def _may_hold(self, index: int, keys: Sequence[str], values: GroupKey) -> bool:
        """False iff row group ``index``'s min/max statistics exclude ``values``."""
        row_group = self._file.metadata.row_group(index)
        for key, value in zip(keys, values, strict=True):
            stats = row_group.column(self.columns.index(key)).statistics
            if stats is None or not stats.has_min_max:
                continue
            try:
                if value < stats.min or value > stats.max:
                    return False
            except TypeError:  # statistics of another type: cannot exclude
                continue
        return True

    def group_keys(self, keys: Sequence[str]) -> list[GroupKey]:
        """Distinct non-null values of the ``keys`` columns, sorted (as pandas'
        ``groupby(keys, sort=True)`` orders its groups).

        Raises:
            ValueError: a key column is missing.
        """
        self._check(keys)
        found: set[GroupKey] = set()
        for index in range(self._file.num_row_groups):
            single = self._row_group_values(index, keys)
            if single is not None:
                found.add(single)
                continue
            table = self._file.read_row_group(index, columns=list(keys))
            distinct = table.group_by(list(keys)).aggregate([])
            for row in zip(*(distinct.column(k).to_pylist() for k in keys), strict=True):
                if not any(v is None or (isinstance(v, float) and math.isnan(v)) for v in row):
                    found.add(tuple(row))
        return sorted(found)

    def read_group(
        self, keys: Sequence[str], values: GroupKey, columns: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """The rows whose ``keys`` columns equal ``values``, in file order.

        Args:
            keys, values: the group (as from :meth:`group_keys`).
            columns: columns to read (the key columns are added); None reads all.

        Returns:
            A DataFrame with ``columns`` (file order) and a fresh RangeIndex; no rows if
            the group is absent.

        Raises:
            ValueError: a key or column is missing.
        """
        self._check(keys)
        wanted = (
            self.columns
            if columns is None
            else [c for c in self.columns if c in set(columns) | set(keys)]
        )
        self._check(list(columns or ()))
        parts: list[pa.Table] = []
        for index in range(self._file.num_row_groups):
            single = self._row_group_values(index, keys)
            if single is not None:
                if single == tuple(values):
                    parts.append(self._file.read_row_group(index, columns=wanted))
                continue
            if not self._may_hold(index, keys, values):
                continue
            table = self._file.read_row_group(index, columns=wanted)
            mask = None
            for key, value in zip(keys, values, strict=True):
                equal = pc.equal(table[key], pa.scalar(value, table.schema.field(key).type))
                mask = equal if mask is None else pc.and_(mask, equal)
            parts.append(table.filter(mask))
        if not parts:
            parts.append(self._file.schema_arrow.empty_table().select(wanted))
        return pa.concat_tables(parts).to_pandas(ignore_metadata=True)

    def iter_groups(
        self, keys: Sequence[str], columns: Sequence[str] | None = None
    ) -> Iterator[tuple[GroupKey, pd.DataFrame]]:
        """``(values, rows)`` of every group of ``keys``, in :meth:`group_keys` order."""
        for values in self.group_keys(keys):
            yield values, self.read_group(keys, values, columns)


__all__ = ["FctFile", "GroupKey"]
