"""Raw tables larger than memory: read in chunks, counted in passes, written in chunks.

Marginal-based synthesis reads the data only to count it, and every count it makes (the
discovery histograms of :mod:`~margsynth.tabular.discovery`, the marginals a mechanism
measures or scores) is a sum over rows. So a table is never held whole: it is read chunk by
chunk, each chunk's counts are added, and peak memory depends on the domain and the chunk
size, not on the number of rows.

- :class:`TableSource`: a CSV or Parquet file, or a folder of parts, read in chunks of at
  most ``chunk_rows`` rows. Each chunk gives, per column, the chunk's distinct cells
  (first-occurrence order) and each row's index into them: every per-cell function of the
  raw path (the checks of :func:`~.encoder.check_table`, the :class:`~.encoder.Encoder`)
  runs once per distinct cell and is gathered to the rows, which gives the same result as
  running it on every cell (and the same first offending row: the first distinct cell
  that fails is the one whose first occurrence comes first).
- :func:`scan`: the pass that checks every cell and sums the tallies discovery reads
  (:class:`~.encoder.ColumnTally`); a second pass counts the distribution histograms once
  their grid is known (:func:`~.encoder.fit_tallies` draws the noise first, in the order of
  the in-memory path, so the releases are the same whatever the chunk size).
- :class:`CodeFiles`: the encoded table on disk, one file per column in the smallest
  unsigned integer type that holds its codes, written in one pass; the mechanism's
  counting passes read it back in chunks.
- :class:`ChunkedDataset`: a :class:`~margsynth.dataset.Dataset` whose
  :meth:`~ChunkedDataset.marginals` counts a whole round of marginals in one pass over the
  chunks (and keeps them: a marginal asked for again costs no pass).
- :class:`DaskTable`: the same counting on a Dask DataFrame (``scheduler=``, as the
  sweeps take it): each partition's counts are computed where the partition is and summed
  before any noise, so a cluster counts what one machine cannot read; the counts are the
  local path's exactly.
- :func:`prepare_stream` / :class:`StreamingRun`: the raw-table run of :mod:`~.api` on a
  table read in chunks, its synthetic table generated and written in blocks of
  :data:`GENERATE_BLOCK` records (CSV or Parquet by the output's suffix), each block from
  its own generator spawned from the run's seed (one block: the run's generator itself, so a
  table that fits one block gets the in-memory path's bytes).

The reader is pyarrow: its CSV reader streams a file in bounded blocks and its Parquet
reader reads row groups, both into columnar arrays that it dictionary-encodes in C++ — which
is what lets the per-cell work above run once per distinct cell — and Dask reads Parquet
with it too. DuckDB would bring an SQL engine whose aggregation we would not use (the counts
are numpy's ``bincount`` over codes) and a second in-memory format to convert from.
"""

from __future__ import annotations

import math
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from dataclasses import fields as dataclass_fields
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pac
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..data.loaders import read_csv_header, read_raw_csv
from ..dataset import Dataset, _smallest_int_dtype
from ..domain import Domain
from ..mechanisms import registry
from ..mechanisms.base import MEMORY_LIMIT_MB, check_records, check_seed
from ..mechanisms.generators import Generated, PGMGenerator
from ..mechanisms.sampler import unsavable_reason
from ..timing import Stopwatch
from .api import PreparedRun, TableError, check_run_arguments
from .encoder import (
    ColumnTally,
    Encoder,
    check_table,
    distribution_counts,
    domain_extremes,
    fit_tallies,
    tally_column,
)
from .schema import Schema

__all__ = [
    "CHUNK_ROWS",
    "GENERATE_BLOCK",
    "ChunkedDataset",
    "CodeFiles",
    "DaskTable",
    "Scan",
    "StreamingRun",
    "TableSource",
    "memory_plan",
    "prepare_stream",
    "scan",
    "table_kind",
    "write_kind",
]

#: Rows read at a time (the default of ``chunk_rows``).
CHUNK_ROWS = 1_000_000
#: Synthetic records generated, decoded and written at a time. Fixed, so that the output's
#: bytes do not depend on the reading chunk size.
GENERATE_BLOCK = 250_000
#: The largest piece of CSV text parsed at a time (a chunk of more rows is read in several):
#: it bounds the text held at once.
BLOCK_BYTES = 32 * 2**20
_CSV = (".csv",)
_POOL = pa.default_memory_pool()
_PARQUET = (".parquet", ".pq")

#: A chunk's column: each row's index into the chunk's distinct cells, and those cells.
Cells = tuple[np.ndarray, pd.Series]


def table_kind(path: str | Path) -> str | None:
    """``"csv"`` or ``"parquet"`` for a file by its suffix or a folder by its parts' suffix
    (``None`` otherwise)."""
    p = Path(path)
    if p.is_dir():
        kinds = {table_kind(f) for f in p.iterdir() if f.is_file() and not f.name.startswith((".", "_"))}
        kinds.discard(None)
        return kinds.pop() if len(kinds) == 1 else None
    suffix = p.suffix.lower()
    return "csv" if suffix in _CSV else "parquet" if suffix in _PARQUET else None


def write_kind(path: str | Path) -> str:
    """The format an output path is written in: Parquet for ``.parquet``/``.pq``, else CSV."""
    return "parquet" if Path(path).suffix.lower() in _PARQUET else "csv"


def _csv_pieces(path: Path, size: int) -> Iterator[bytes]:
    """The rows of a CSV after its header, in pieces of about ``size`` bytes that end at a
    row's end: a newline with an even number of quote characters before it in the piece
    (a newline inside a quoted cell has an odd number). Read as bytes, so that no more than
    a piece and the next block are held at once."""
    with open(path, "rb") as fh:
        header = fh.readline()
        while header.count(b'"') % 2 and header.endswith(b"\n"):  # a quoted name holding a newline
            header += fh.readline()
        rest = b""
        while True:
            block = fh.read(size)
            buf = rest + block
            if not block:
                if buf.strip():
                    yield buf
                return
            cut = buf.rfind(b"\n")
            while cut >= 0 and buf.count(b'"', 0, cut) % 2:
                cut = buf.rfind(b"\n", 0, cut)
            if cut < 0:  # no row ends in it yet: read on
                rest = buf
                continue
            yield buf[: cut + 1]
            rest = buf[cut + 1 :]


def _cells(array: pa.Array | pa.ChunkedArray, dtype: Any) -> Cells:
    """A column of a chunk as its distinct cells (first-occurrence order; a null is a cell)
    and each row's index into them."""
    enc = pac.dictionary_encode(array, null_encoding="encode")
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks() if enc.num_chunks != 1 else enc.chunk(0)
    idx = enc.indices.to_numpy(zero_copy_only=False)
    values = enc.dictionary.to_pandas()
    if dtype is not None:
        values = values.astype(dtype)
    return idx, values.reset_index(drop=True)


def frame_cells(frame: pd.DataFrame) -> dict[str, Cells]:
    """:func:`_cells` of a pandas chunk (a partition of a Dask DataFrame)."""
    out = {}
    for name in frame.columns:
        col = frame[name]
        idx, uniques = pd.factorize(col, use_na_sentinel=False)
        out[str(name)] = (idx, pd.Series(uniques, dtype=col.dtype))
    return out


@dataclass(frozen=True)
class Chunk:
    """Rows ``start .. start + rows - 1`` of a table: per column, :data:`Cells`."""

    start: int
    rows: int
    columns: dict[str, Cells]


class TableSource:
    """A raw table in a CSV or Parquet file, or a folder of parts of one format (read in
    name order, every part with the same columns), read in chunks of at most ``chunk_rows``
    rows (:meth:`chunks`). A CSV is read as text, as :func:`margsynth.data.loaders.read_raw_csv`
    reads it (every cell the string it holds; an empty cell is ``""``); a Parquet file's
    columns keep their types (a null is a missing cell)."""

    def __init__(self, path: str | Path, *, chunk_rows: int = CHUNK_ROWS, option: str = "--dataset") -> None:
        if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, (int, np.integer)) or chunk_rows < 1:
            raise ValueError(f"chunk_rows must be a positive integer, got {chunk_rows!r}")
        self.path = Path(path)
        self.chunk_rows = int(chunk_rows)
        expected = "a CSV or Parquet file, or a folder of CSV or Parquet parts"
        if not self.path.exists():
            raise ValueError(f"{option} {str(path)!r} does not exist; expected {expected}")
        kind = table_kind(self.path)
        if kind is None:
            raise ValueError(f"{option} {str(path)!r}: not {expected} (by the suffix .csv, .parquet or .pq)")
        self.kind = kind
        if self.path.is_dir():
            self.files = sorted(f for f in self.path.iterdir() if f.is_file() and table_kind(f) == kind
                                and not f.name.startswith((".", "_")))  # fmt: skip
        else:
            self.files = [self.path]
        try:
            if kind == "csv":
                heads = [read_csv_header(f) for f in self.files]
                self.dtypes = {c: pd.StringDtype(na_value=np.nan) for c in heads[0]}
            else:
                schemas = [pq.read_schema(f) for f in self.files]
                heads = [s.names for s in schemas]
                empty = schemas[0].empty_table().to_pandas()
                self.dtypes = {str(c): empty[c].dtype for c in empty.columns}
        except (OSError, pa.ArrowException, UnicodeDecodeError) as exc:
            raise ValueError(f"{option} {str(path)!r}: cannot be read ({exc})") from None
        for f, h in zip(self.files, heads):
            if h != heads[0]:
                raise ValueError(f"{option} {str(path)!r}: part {f.name!r} has columns {h}, not {heads[0]}; expected "
                                 "every part with the same columns")  # fmt: skip
        self.columns = [str(c) for c in heads[0]]
        self.option = option

    def __repr__(self) -> str:
        return f"TableSource({str(self.path)!r}, {self.kind}, {len(self.files)} file(s), chunk_rows={self.chunk_rows})"

    def bytes_per_row(self) -> float:
        """The mean size of a row on disk, estimated from the first file's first MiB (CSV) or
        its metadata (Parquet, uncompressed)."""
        f = self.files[0]
        if self.kind == "parquet":
            meta = pq.ParquetFile(f).metadata
            size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
            return max(size / max(meta.num_rows, 1), 1.0)
        with open(f, "rb") as fh:
            head = fh.read(1 << 20)
        lines = max(head.count(b"\n") - 1, 1)
        return max(len(head) / lines, 1.0)

    def _batches(self, f: Path) -> Iterator[pa.RecordBatch]:
        if self.kind == "parquet":
            pf = pq.ParquetFile(f)
            for i in range(pf.num_row_groups):  # one row group at a time: memory bounded by its size
                yield from pf.read_row_group(i).combine_chunks().to_batches(max_chunksize=self.chunk_rows)
            return
        block = int(min(max(self.chunk_rows * self.bytes_per_row() * 1.1, 1 << 16), BLOCK_BYTES))
        opts = {
            "read_options": pacsv.ReadOptions(column_names=self.columns, encoding="utf8"),
            "parse_options": pacsv.ParseOptions(newlines_in_values=True),
            "convert_options": pacsv.ConvertOptions(column_types={c: pa.string() for c in self.columns},
                                                    strings_can_be_null=False, quoted_strings_can_be_null=False),
        }  # fmt: skip
        for piece in _csv_pieces(f, block):
            yield from pacsv.read_csv(pa.BufferReader(piece), **opts).combine_chunks().to_batches()

    def chunks(self) -> Iterator[Chunk]:
        """The table in chunks of at most ``chunk_rows`` rows, in order."""
        start = 0
        for f in self.files:
            try:
                for batch in self._batches(f):
                    for lo in range(0, batch.num_rows, self.chunk_rows):
                        part = batch.slice(lo, self.chunk_rows)
                        cols = {c: _cells(part.column(i), self.dtypes[c]) for i, c in enumerate(self.columns)}
                        yield Chunk(start, part.num_rows, cols)
                        start += part.num_rows
                    del batch
                    _POOL.release_unused()  # arrow's pool keeps what it freed; the next pass's numpy needs it
            except (pa.ArrowException, UnicodeDecodeError) as exc:
                raise ValueError(f"{self.option} {str(f)!r}: cannot be read ({exc})") from None

    def frame(self) -> pd.DataFrame:
        """The whole table in memory, as the in-memory path reads it (small tables, tests)."""
        if self.kind == "csv":
            parts = [read_raw_csv(f) for f in self.files]
            return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        return pd.concat([pq.read_table(f).to_pandas() for f in self.files], ignore_index=True)


# ----------------------------------------------------------------------------- checks and tallies
_ROW = re.compile(r"^(column .*? row )(\d+)(:)")


class _Checks:
    """The per-cell checks of :func:`~.encoder.check_table`, column by column, on a chunk's
    distinct cells."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.single = {s.name: Schema((s,), null_tokens=schema.null_tokens) for s in schema.columns}

    def columns(self, names: Sequence[str], where: str) -> None:
        """The column checks of :func:`~.encoder.check_table` on a table's header."""
        cols = [str(c) for c in names]
        for name in self.schema.names:
            if name not in cols:
                raise ValueError(f"column {name!r}: in the schema but not in the data; data has {cols}")

    def chunk(self, chunk: Chunk, where: str = "") -> dict[str, tuple[np.ndarray, Any, np.ndarray]]:
        """Per schema column ``(miss, values, counts)`` over the chunk's distinct cells; a
        ``ValueError`` names the offending row of the table (``where`` prefixes its number)."""
        out = {}
        for spec in self.schema.columns:
            idx, values = chunk.columns[spec.name]
            try:
                miss, vals = check_table(pd.DataFrame({spec.name: values}), self.single[spec.name])[spec.name]
            except ValueError as exc:
                m = _ROW.match(str(exc))
                if m is None:  # pragma: no cover - every cell message names its row
                    raise
                first = int(np.argmax(idx == int(m.group(2))))  # the distinct cell's first row
                row = f"{where}{chunk.start + first}"
                raise ValueError(_ROW.sub(lambda g, row=row: f"{g.group(1)}{row}:", str(exc), 1)) from None
            out[spec.name] = (miss, vals, np.bincount(idx, minlength=len(values)))
        return out


@dataclass
class Scan:
    """What :func:`scan` read: the rows, the :class:`~.encoder.ColumnTally` of every schema
    column, the columns' dtypes and the columns left out."""

    rows: int
    tallies: dict[str, ColumnTally]
    dtypes: dict[str, Any]
    left_out: list[str]

    def present(self) -> dict[str, int]:
        """The number of distinct non-null categories of each discovered categorical column."""
        return {n: len(t.categories) for n, t in self.tallies.items() if t.categories}


def _tally_chunk(schema: Schema, chunk: Chunk, where: str = "") -> dict[str, ColumnTally]:
    checked = _Checks(schema).chunk(chunk, where)
    return {s.name: tally_column(s, miss, vals, counts) for s, (miss, vals, counts) in
            ((s, checked[s.name]) for s in schema.columns)}  # fmt: skip


def _add_tallies(a: dict[str, ColumnTally], b: dict[str, ColumnTally]) -> dict[str, ColumnTally]:
    return {k: a[k].add(b[k]) for k in a}


def _header_checks(schema: Schema, columns: Sequence[str]) -> list[str]:
    _Checks(schema).columns(columns, "")
    return [c for c in columns if c not in schema.names]


def scan(source: TableSource, schema: Schema) -> Scan:
    """The checking pass: every cell of ``source`` checked against ``schema`` (the checks of
    :func:`~.encoder.check_table`; ``ValueError`` naming the column, the row of the table
    and the value) and the tallies of discovery summed over the chunks."""
    left = _header_checks(schema, source.columns)
    total: dict[str, ColumnTally] | None = None
    rows = 0
    for chunk in source.chunks():
        if not chunk.rows:
            continue
        t = _tally_chunk(schema, chunk)
        total = t if total is None else _add_tallies(total, t)
        rows += chunk.rows
    if total is None:
        raise ValueError("df has no rows")
    return Scan(rows, total, dict(source.dtypes), left)


def _distribution_chunk(schema: Schema, requests, chunk: Chunk) -> dict[str, np.ndarray]:
    checks = _Checks(Schema(tuple(schema[n] for n in requests), null_tokens=schema.null_tokens))
    checked = checks.chunk(chunk)
    return {n: distribution_counts(checked[n][:2], edges, clip, weights=checked[n][2])
            for n, (edges, clip) in requests.items()}  # fmt: skip


def _add_arrays(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: a[k] + b[k] for k in a}


# ----------------------------------------------------------------------------- encoding
def _column_encoders(encoder: Encoder) -> dict[str, Encoder]:
    return {c.name: Encoder([c]) for c in encoder.columns}


def _encode_chunk(encoders: Mapping[str, Encoder], domain: Domain, chunk: Chunk | dict[str, Cells]) -> list[np.ndarray]:
    """The codes of a chunk, one array per attribute in the smallest unsigned type holding
    its codes: each distinct cell encoded once (:meth:`Encoder.encode`), gathered to the rows."""
    cols = chunk.columns if isinstance(chunk, Chunk) else chunk
    out = []
    for a in domain.attributes:
        idx, values = cols[a.name]
        codes = encoders[a.name].encode(pd.DataFrame({a.name: values})).codes[:, 0]
        out.append(codes.astype(_smallest_int_dtype(a.size))[idx])
    return out


class CodeFiles:
    """An encoded table on disk: one file of codes per attribute, each in the smallest
    unsigned integer type that holds its codes, read back in chunks of ``chunk_rows``."""

    def __init__(self, folder: Path, domain: Domain, rows: int, chunk_rows: int) -> None:
        self.folder, self.domain, self.rows, self.chunk_rows = Path(folder), domain, int(rows), int(chunk_rows)
        self.dtypes = [_smallest_int_dtype(a.size) for a in domain.attributes]

    def _path(self, j: int) -> Path:
        return self.folder / f"{j:04d}.codes"

    @classmethod
    def write(cls, folder: Path, domain: Domain, chunks: Iterator[list[np.ndarray]], chunk_rows: int) -> CodeFiles:
        """Write the code chunks (lists of per-attribute arrays) in order."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        handles = [open(folder / f"{j:04d}.codes", "wb") for j in range(len(domain))]
        rows = 0
        try:
            for cols in chunks:
                for fh, col in zip(handles, cols):
                    fh.write(np.ascontiguousarray(col).tobytes())
                rows += cols[0].size if cols else 0
        finally:
            for fh in handles:
                fh.close()
        return cls(folder, domain, rows, chunk_rows)

    def chunks(self) -> Iterator[list[np.ndarray]]:
        handles = [open(self._path(j), "rb") for j in range(len(self.domain))]
        try:
            for lo in range(0, self.rows, self.chunk_rows):
                n = min(self.chunk_rows, self.rows - lo)
                yield [np.fromfile(fh, dtype=dt, count=n) for fh, dt in zip(handles, self.dtypes)]
        finally:
            for fh in handles:
                fh.close()

    def map_sum(self, fn: Callable[[list[np.ndarray]], list[np.ndarray]]) -> list[np.ndarray]:
        """``fn`` of every chunk, summed."""
        total = None
        for cols in self.chunks():
            part = fn(cols)
            total = part if total is None else [a + b for a, b in zip(total, part)]
        return total

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


# ----------------------------------------------------------------------------- the chunked dataset
def _count_chunk(maps: tuple[np.ndarray | None, ...], plan: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...],
                 cols: list[np.ndarray]) -> list[np.ndarray]:  # fmt: skip
    """The marginals of ``plan`` (``(attribute positions, shape)`` each) on one chunk of
    codes, after the recoding ``maps`` (``None``: unchanged)."""
    mapped = [c if m is None else m[c] for c, m in zip(cols, maps)]
    n = cols[0].size if cols else 0
    out = []
    for pos, shape in plan:
        size = math.prod(shape)
        if not pos:
            out.append(np.array([n], dtype=np.int64))
            continue
        idx = mapped[pos[0]].astype(np.intp)
        for p, s in zip(pos[1:], shape[1:]):
            idx *= s
            idx += mapped[p]
        out.append(np.bincount(idx, minlength=size).astype(np.int64, copy=False))
    return out


class ChunkedDataset(Dataset):
    """Records read in chunks: a :class:`~margsynth.dataset.Dataset` that counts its
    marginals over an ``engine``'s chunks (:class:`CodeFiles`, or a :class:`DaskTable`'s
    partitions) and holds no codes. :meth:`marginals` counts a round in one pass and keeps
    every table it counted; :meth:`recode` is lazy (applied chunk by chunk). What needs the
    records themselves (``codes``, ``take``, ``project``...) is refused."""

    __slots__ = ("_cache", "_counter", "_engine", "_maps", "_rows")

    def __init__(self, engine: Any, domain: Domain, rows: int, maps: tuple[np.ndarray | None, ...] | None = None,
                 counter: list[int] | None = None) -> None:  # fmt: skip
        self._engine, self.domain, self._rows, self.weights = engine, domain, int(rows), None
        self._maps = maps if maps is not None else (None,) * len(domain)
        self._codes = None
        self._cache: dict[tuple[str, ...], np.ndarray] = {}
        self._counter = counter if counter is not None else [0]

    @property
    def passes(self) -> int:
        """The passes over the data made so far (by this dataset and its recodings)."""
        return self._counter[0]

    @property
    def codes(self) -> np.ndarray:
        raise ValueError("this dataset is read in chunks and holds no codes in memory; expected a mechanism that "
                         "reads its data through marginals (mechanisms.registry: streams=True)")  # fmt: skip

    def __len__(self) -> int:
        return self._rows

    def __repr__(self) -> str:
        return f"ChunkedDataset({self._rows} records, {self.domain!r})"

    def marginal(self, attrs, *, flatten: bool = False) -> np.ndarray:
        return self.marginals([attrs], flatten=flatten)[0]

    def marginals(self, cliques, *, flatten: bool = False) -> list[np.ndarray]:
        """The marginal of each of ``cliques`` (as :meth:`Dataset.marginal`), those not
        counted before all in one pass over the chunks."""
        cliques = [self.domain.check_attrs(c, "marginal attributes") for c in cliques]
        todo = list(dict.fromkeys(c for c in cliques if c not in self._cache))
        if todo:
            plan = tuple((tuple(self.domain.index(a) for a in c), tuple(self.domain[a].size for a in c)) for c in todo)
            if self._engine is None:
                counts = [np.zeros(math.prod(s), dtype=np.int64) for _, s in plan]
            else:
                counts = self._engine.map_sum(partial(_count_chunk, self._maps, plan))
                self._counter[0] += 1
            for c, t in zip(todo, counts):
                self._cache[c] = t
        out = []
        for c in cliques:
            t = self._cache[c]
            out.append(t.copy() if flatten else t.reshape(tuple(self.domain[a].size for a in c)).copy())
        return out

    def recode(self, maps: Mapping[str, np.ndarray], domain: Domain) -> ChunkedDataset:
        new = tuple(np.asarray(maps[a.name]) if m is None else np.asarray(maps[a.name])[m]
                    for a, m in zip(self.domain.attributes, self._maps))  # fmt: skip
        return ChunkedDataset(self._engine, domain, self._rows, new, self._counter)

    def total(self) -> float:
        return float(self._rows)

    def _refuse(self, *_: Any, **__: Any):
        raise ValueError("this dataset is read in chunks: it counts marginals but cannot select, split or copy records")

    column = project = take = sample = split = equals = _refuse

    @property
    def df(self) -> pd.DataFrame:
        return self._refuse()


# ----------------------------------------------------------------------------- Dask
def _dask_partition(fn: Callable[[dict[str, Cells]], Any], frame: pd.DataFrame) -> Any:
    return fn(frame_cells(frame))


def _dask_tally(schema: Schema, cells: dict[str, Cells]) -> dict[str, ColumnTally]:
    n = len(next(iter(cells.values()))[0]) if cells else 0
    return _tally_chunk(schema, Chunk(0, n, cells), "(within its partition) ") if n else None


def _dask_codes(encoders, domain, fn, cells: dict[str, Cells]) -> list[np.ndarray]:
    return fn(_encode_chunk(encoders, domain, cells))


class DaskTable:
    """A raw table as a Dask DataFrame (text columns, as :class:`TableSource` reads a CSV,
    or typed as a Parquet file's), counted partition by partition on the Dask scheduler
    ``scheduler`` (an address such as ``tcp://host:8786``; ``None``: dask's default):
    each partition's counts are computed where it is and only the counts travel, summed
    before any noise. Same checks, tallies and counts as :class:`TableSource`'s pass; a
    bad cell is named by its row within its partition."""

    def __init__(self, frame: Any, scheduler: str | None = None) -> None:
        self.frame, self.scheduler = frame, scheduler
        self.columns = [str(c) for c in frame.columns]
        self.dtypes = {str(c): t for c, t in frame.dtypes.items()}
        self.kind = "dask"

    @classmethod
    def read(cls, path: str | Path, scheduler: str | None = None, blocksize: int | str = "64MB") -> DaskTable:
        """A CSV (as text) or Parquet file or folder read by ``dask.dataframe``."""
        import dask.dataframe as dd  # optional: only the distributed path needs dask

        p = Path(path)
        kind = table_kind(p)
        target = str(p / "*") if p.is_dir() else str(p)
        if kind == "csv":
            frame = dd.read_csv(target, dtype=str, keep_default_na=False, na_filter=False, blocksize=blocksize,
                                encoding="utf-8-sig")  # fmt: skip
        elif kind == "parquet":
            frame = dd.read_parquet(target)
        else:
            raise ValueError(f"--dataset {str(path)!r}: expected a CSV or Parquet file or folder")
        return cls(frame, scheduler)

    def map_reduce(self, fn: Callable[[dict[str, Cells]], Any], add: Callable[[Any, Any], Any]) -> Any:
        """``fn`` of each partition's cells, added up pairwise (a tree) on the scheduler."""
        import dask  # optional: only the distributed path needs dask

        parts = [dask.delayed(_dask_partition)(fn, p) for p in self.frame.to_delayed()]

        def add_some(a, b):
            return b if a is None else a if b is None else add(a, b)

        while len(parts) > 1:
            parts = [dask.delayed(add_some)(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                     for i in range(0, len(parts), 2)]  # fmt: skip
        if self.scheduler:
            from distributed import Client  # optional: a cluster's address was given

            with Client(self.scheduler) as client:
                return client.compute(parts[0]).result()
        return parts[0].compute()

    def scan(self, schema: Schema) -> Scan:
        left = _header_checks(schema, self.columns)
        total = self.map_reduce(partial(_dask_tally, schema), _add_tallies)
        if total is None:
            raise ValueError("df has no rows")
        return Scan(next(iter(total.values())).rows, total, dict(self.dtypes), left)

    def distribution(self, schema: Schema, requests) -> dict[str, np.ndarray]:
        def fn(cells):
            n = len(next(iter(cells.values()))[0])
            return _distribution_chunk(schema, requests, Chunk(0, n, cells))

        return self.map_reduce(fn, _add_arrays)

    def codes(self, encoder: Encoder, domain: Domain) -> DaskCodes:
        return DaskCodes(self, _column_encoders(encoder), domain)


@dataclass
class DaskCodes:
    """The engine of a :class:`ChunkedDataset` over a :class:`DaskTable`: each partition
    encoded and counted where it is."""

    table: DaskTable
    encoders: dict[str, Encoder]
    domain: Domain

    def map_sum(self, fn: Callable[[list[np.ndarray]], list[np.ndarray]]) -> list[np.ndarray]:
        return self.table.map_reduce(partial(_dask_codes, self.encoders, self.domain, fn),
                                     lambda a, b: [x + y for x, y in zip(a, b)])  # fmt: skip


# ----------------------------------------------------------------------------- generation
class DeferredPGM(PGMGenerator):
    """Private-PGM fitted as the mechanism's generator fits it, its records left to be
    drawn later from the run's sampler (:meth:`StreamingRun.run` draws them in blocks).
    Draws nothing from ``rng``."""

    def generate(self, domain: Domain, marginals, rng: np.random.Generator, *, records: int | None = None,
                 **kw: Any) -> Generated:  # fmt: skip
        model, extras = self.fitted(domain, marginals, **kw)
        empty = Dataset._trusted(np.zeros((0, len(domain)), dtype=_smallest_int_dtype(max(domain.shape))), domain)
        return Generated(empty, extras)


def deferred(mechanism: Any) -> Any:
    """``mechanism`` with its Private-PGM generator replaced by :class:`DeferredPGM` and no
    ``synthetic_records`` (the run draws them), or ``ValueError`` when it does not generate
    with Private-PGM (:func:`~margsynth.mechanisms.sampler.unsavable_reason`)."""
    reason = unsavable_reason(mechanism)
    if reason is not None:
        raise ValueError(f"mechanism {mechanism.name!r}: a table read in chunks is written in blocks drawn from a "
                         f"fitted Private-PGM model, and {reason}; expected a mechanism that generates with Private-PGM")  # fmt: skip
    gen = mechanism.generator
    fields = {f.name: getattr(gen, f.name) for f in dataclass_fields(gen)}
    return replace(mechanism, generator=DeferredPGM(**fields), synthetic_records=None)


def _block_generators(rng: np.random.Generator, records: int) -> list[tuple[int, np.random.Generator]]:
    """``(records, generator)`` of each block: one block of all the records with ``rng``
    itself, or blocks of :data:`GENERATE_BLOCK` with generators spawned from ``rng``."""
    if records <= GENERATE_BLOCK:
        return [(records, rng)]
    sizes = [GENERATE_BLOCK] * (records // GENERATE_BLOCK) + ([records % GENERATE_BLOCK] if records % GENERATE_BLOCK else [])
    return list(zip(sizes, rng.spawn(len(sizes))))


class TableWriter:
    """The synthetic table written block by block: CSV (the bytes ``DataFrame.to_csv`` gives
    the whole table) or Parquet (text columns), by ``kind``."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path, self.kind, self._pq, self._first = Path(path), kind, None, True

    def write(self, text: pd.DataFrame) -> None:
        if self.kind == "csv":
            text.to_csv(self.path, index=False, header=self._first, mode="w" if self._first else "a")
        else:
            table = pa.Table.from_pandas(text.astype(object), preserve_index=False,
                                         schema=pa.schema([(c, pa.string()) for c in text.columns]))  # fmt: skip
            if self._pq is None:
                self._pq = pq.ParquetWriter(self.path, table.schema)
            self._pq.write_table(table)
        self._first = False

    def close(self) -> None:
        if self._pq is not None:
            self._pq.close()
            self._pq = None


# ----------------------------------------------------------------------------- memory
_MIB = float(2**20)


def memory_plan(domain: Domain, columns: int, chunk_rows: int, bytes_per_row: float) -> dict[str, float]:
    """The largest allocations of a streamed MST-like run, in MiB, from the largest domain
    discovery can give and the chunk size (no data read): ``chunk`` (a chunk's cells, its
    row indices, its codes and one marginal's cell index), ``marginals`` (every 1- and 2-way
    marginal, kept: a mechanism that scores every pair counts them all), ``model`` (a junction
    tree of ``columns - 1`` of the largest pairs, with its working copies), ``generate`` (a
    block of records: codes, decoded values and text), and ``total``, their sum."""
    sizes = sorted((a.size for a in domain.attributes), reverse=True)
    d = len(sizes)
    pairs = sum(sizes[i] * sizes[j] for i in range(d) for j in range(i + 1, d)) + sum(sizes)
    chunk = chunk_rows * (3.0 * bytes_per_row + 4.0 * columns + 8.0 * d + 16.0)
    model = 4.0 * 8.0 * max(d - 1, 1) * (sizes[0] * sizes[1] if d > 1 else sizes[0])
    generate = GENERATE_BLOCK * d * 100.0
    plan = {"chunk": chunk / _MIB, "marginals": 8.0 * pairs / _MIB, "model": model / _MIB, "generate": generate / _MIB}
    plan["total"] = sum(plan.values())
    return plan


# ----------------------------------------------------------------------------- the run
@dataclass(frozen=True)
class StreamingRun(PreparedRun):
    """A :class:`~margsynth.tabular.api.PreparedRun` over a table read in chunks
    (:func:`prepare_stream`): the same ledger, discovery and mechanism, its counts summed
    over chunks and its synthetic table drawn, decoded and written in blocks."""

    table: Any = None
    scanned: Scan | None = None
    records: int | None = None
    workdir: str | None = None
    memory: dict[str, float] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return self.scanned.rows

    def placeholder(self, domain: Domain) -> Dataset:
        return ChunkedDataset(None, domain, self.rows)

    def extremes(self) -> tuple[Domain, Domain]:
        return domain_extremes(self.schema, present=self.scanned.present())

    def _distribution(self, requests) -> dict[str, np.ndarray]:
        if isinstance(self.table, DaskTable):
            return self.table.distribution(self.schema, requests)
        total = None
        for chunk in self.table.chunks():
            if chunk.rows:
                part = _distribution_chunk(self.schema, requests, chunk)
                total = part if total is None else _add_arrays(total, part)
        return total

    def _dataset(self, encoder: Encoder, folder: Path) -> tuple[ChunkedDataset, CodeFiles | None]:
        dom = encoder.domain
        if isinstance(self.table, DaskTable):
            return ChunkedDataset(self.table.codes(encoder, dom), dom, self.rows), None
        encoders = _column_encoders(encoder)
        files = CodeFiles.write(folder, dom, (_encode_chunk(encoders, dom, c) for c in self.table.chunks() if c.rows),
                                self.table.chunk_rows)  # fmt: skip
        return ChunkedDataset(files, dom, files.rows), files

    def run(self, seed: int, write: Callable[[pd.DataFrame], None] | None = None) -> tuple[pd.DataFrame | None, dict]:
        """Discovery (two passes), encoding (one pass, to :class:`CodeFiles`), the mechanism
        (its rounds of marginals one pass each), then the records in blocks: drawn, decoded,
        turned to text (:meth:`~.encoder.Encoder.to_text`) and handed to ``write`` (kept
        and returned as one table when ``write`` is ``None``: small tables, tests). Returns
        ``(table or None, report)``; the report is :func:`~.api.synthesize`'s, with
        ``"stream"``: rows, chunk size, passes over the data, blocks, memory plan."""
        seed = check_seed(seed)
        clock = Stopwatch()
        ledger = self.ledger()
        _, delta_cat = self.deltas()
        rng = np.random.default_rng(int(seed))
        encoder, prep = fit_tallies(self.schema, self.scanned.tallies, self.scanned.dtypes, self.scanned.left_out,
                                    self._distribution, ledger=ledger, rng=rng, share=self.preprocessing_share,
                                    delta=delta_cat if self.category_steps else None)  # fmt: skip
        t_pre = clock.elapsed()
        folder = Path(tempfile.mkdtemp(prefix="margsynth-codes-", dir=self.workdir))
        try:
            data, files = self._dataset(encoder, folder)
            t_encode = clock.elapsed() - t_pre
            budget = ledger.sub(ledger.remaining, self.mechanism_name, currency=self.mechanism.currency)
            result = self.mechanism.run(data, rng=rng, budget=budget)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        sampler = result.sampler
        n = self.records if self.records is not None else int(round(sampler.total))
        order = [c for c in self.scanned.dtypes if c in self.schema.names]
        kept: list[pd.DataFrame] = []
        blocks = _block_generators(rng, n)
        t_gen = clock.elapsed()
        for size, g in blocks:
            synth = sampler.sample(size, g) if size else Dataset._trusted(np.zeros((0, len(encoder.domain)), np.uint8),
                                                                          encoder.domain)  # fmt: skip
            frame = encoder.decode(synth, g)[order]
            text = encoder.to_text(frame)[order] if write is not None else frame
            (write or kept.append)(text)
        t_gen = clock.elapsed() - t_gen
        report = self.report(result, prep, encoder, ledger, budget, seed, n,
                             {"preprocessing": t_pre, "encode": t_encode, **result.seconds, "write": t_gen,
                              "total": clock.elapsed()})  # fmt: skip
        report["parameters"] = {**result.parameters, "synthetic_records": self.records}
        report["stream"] = {"rows": self.rows, "chunk_rows": getattr(self.table, "chunk_rows", None),
                            "engine": "dask" if isinstance(self.table, DaskTable) else self.table.kind,
                            "counting_passes": data.passes, "blocks": len(blocks), "block_records": GENERATE_BLOCK,
                            "memory_plan_mb": dict(self.memory)}  # fmt: skip
        if write is not None:
            return None, report
        return (pd.concat(kept, ignore_index=True) if len(kept) > 1 else kept[0]), report


def prepare_stream(
    source: TableSource | DaskTable | str | Path,
    schema: Schema | Mapping[str, Any] | str,
    mechanism: str = "mst",
    *,
    epsilon: float,
    delta: float,
    preprocessing_share: float | None = None,
    chunk_rows: int = CHUNK_ROWS,
    workdir: str | None = None,
    memory_limit_mb: float | None = None,
    **hyperparameters: Any,
) -> StreamingRun:
    """Every check of a raw-table run on a table read in chunks (a path, a
    :class:`TableSource` or a :class:`DaskTable`), before any charge or draw: those of
    :func:`~.api.prepare` (the arguments, the schema, every cell — in one checking pass
    that also sums discovery's tallies —, the mechanism and its ``validate`` against the
    smallest and the largest domain discovery can give), that the mechanism generates with
    Private-PGM (its records are drawn in blocks), and that the run's largest allocations
    (:func:`memory_plan`) fit ``memory_limit_mb`` (default
    :data:`~margsynth.mechanisms.base.MEMORY_LIMIT_MB`). ``workdir``: where the encoded
    table is kept during the run (default: the system's temporary folder).
    ``synthetic_records=N`` may exceed the table's rows (blocks of :data:`GENERATE_BLOCK`)."""
    if not isinstance(source, (TableSource, DaskTable)):
        source = TableSource(source, chunk_rows=chunk_rows)
    records = hyperparameters.pop("synthetic_records", None)
    if records is not None:
        check_records(records)
    if workdir is not None and not Path(workdir).is_dir():
        raise ValueError(f"workdir {workdir!r} is not a folder; expected a folder for the encoded table")
    schema = check_run_arguments(schema, epsilon, delta, preprocessing_share)
    if schema.rules:
        raise ValueError(f"schema: {len(schema.rules)} rule(s); a table read in chunks is generated in blocks without "
                         "rules (they are enforced on the whole table in memory); expected a schema without rules")  # fmt: skip
    if registry.spec(mechanism).needs_public:
        raise ValueError(f"mechanism {mechanism!r} needs a public table; a table read in chunks takes none")
    mech = deferred(registry.create(mechanism, **hyperparameters))
    try:
        scanned = source.scan(schema) if isinstance(source, DaskTable) else scan(source, schema)
    except ValueError as exc:
        raise TableError(str(exc)) from None
    run = StreamingRun(None, schema, {}, mechanism, mech, float(epsilon), float(delta), preprocessing_share, None,
                       table=source, scanned=scanned, records=records, workdir=workdir)  # fmt: skip
    limit = MEMORY_LIMIT_MB if memory_limit_mb is None else float(memory_limit_mb)
    _, largest = run.extremes()
    bpr = source.bytes_per_row() if isinstance(source, TableSource) else 64.0 * len(source.columns)
    rows = getattr(source, "chunk_rows", CHUNK_ROWS)
    plan = memory_plan(largest, len(scanned.dtypes), rows, bpr)
    if plan["total"] > limit:
        parts = ", ".join(f"{k} {v:,.0f}" for k, v in plan.items() if k != "total")
        raise ValueError(f"memory: the run's largest allocations come to {plan['total']:,.0f} MiB ({parts} MiB), more "
                         f"than the {limit:,.0f} MiB memory limit; expected a smaller chunk_rows or smaller attributes")  # fmt: skip
    object.__setattr__(run, "memory", plan)
    run.check_discovery()
    return run
