"""The one typed report every command returns, and every renderer reads.

A ``Document`` holds the answer line, summary lines, tables of typed columns, notes and warnings, and the
structured JSON body. Byte columns hold integers; the renderers apply the units (IEC, SI or bytes) to tables
and Markdown and never to CSV or JSON. Builders (kvplan.report.*) make documents from the library's results;
renderers (kvplan.render.*) only present them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

#: the JSON schema version of every command's output (README, "JSON schema")
SCHEMA_VERSION = 2

Cell = str | int | float | bool | None


class Kind(str, Enum):
    TEXT = "text"
    COUNT = "count"  # an integer shown with thousands separators
    INT = "int"  # an integer shown as it is (a layer number, a flag value)
    BYTES = "bytes"
    RATIO = "ratio"  # 0.531×
    SHARE = "share"  # 12.5%
    FIGURE = "figure"  # a number already written out with its unit ("8.50 GiB", "4 sequences"): right-aligned
    SECONDS = "seconds"  # a duration in seconds: "850 µs", "24.0 ms", "1.25 s"


class Format(str, Enum):
    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"
    CSV = "csv"


ALL_FORMATS = frozenset(Format)
DATA_FORMATS = frozenset({Format.CSV, Format.JSON})  # machine-readable only


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    kind: Kind = Kind.TEXT
    drop: int = 0  # > 0: may be left out of a narrow terminal table, lowest first; 0: always shown
    formats: frozenset[Format] = ALL_FORMATS
    wrap: bool = False  # long text that may wrap inside a narrow terminal table


@dataclass(frozen=True)
class Table:
    name: str  # the JSON key of the rows
    columns: tuple[Column, ...]
    rows: tuple[dict[str, Cell], ...]
    total: dict[str, Cell] | None = None  # a total row, set apart
    title: str | None = None
    csv: bool = True  # the table CSV output carries (one per document)
    json: bool = True  # the rows appear in JSON under ``name``

    def columns_for(self, fmt: Format) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if fmt in c.formats)


@dataclass(frozen=True)
class Series:
    name: str
    values: tuple[int, ...]  # bytes at each point


@dataclass(frozen=True)
class Chart:
    """Bytes against context: one series per cache and the total (last)."""

    title: str
    xs: tuple[int, ...]  # contexts (tokens)
    series: tuple[Series, ...]
    log_x: bool


@dataclass(frozen=True)
class Document:
    kind: str  # estimate, fit, compare, curve, check, models, gpus, error
    headline: str | None = None  # the answer, first line of every human format
    summary: tuple[tuple[str, str], ...] = ()  # labelled lines above the tables
    tables: tuple[Table, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)  # the JSON body besides tables, notes and warnings
    chart: Chart | None = None  # drawn as bars on a terminal (and as an SVG with curve --svg)
    caption: str | None = None  # the Markdown caption when there is no headline
    exit_code: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: schema version, kind, answer, the data, each table's rows, notes, warnings."""
        doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "kind": self.kind}
        if self.headline is not None:
            doc["answer"] = self.headline
        doc.update(self.data)
        for t in self.tables:
            if t.json:
                cols = t.columns_for(Format.JSON)
                doc[t.name] = [{c.key: row.get(c.key) for c in cols} for row in t.rows]
        doc["notes"] = list(self.notes)
        doc["warnings"] = list(self.warnings)
        return doc
