"""Bring your own data: a raw table (strings, numbers, empty cells) in, a decoded
differentially private table out, with every preprocessing step on the run's ledger.

- :mod:`.schema` — :class:`Schema` / :class:`ColumnSpec` (the JSON schema of a raw table)
  and :func:`draft_schema` (a draft from names and dtypes alone);
- :mod:`.discovery` — the private discovery steps (category sets, bounds, quantile cuts);
- :mod:`.encoder` — :func:`fit_encoder` and the :class:`Encoder` (raw table ⇄ Dataset);
- :mod:`.api` — :func:`synthesize` (:func:`prepare`, then :meth:`PreparedRun.run`):
  schema, discovery, any registered mechanism and decoding on one (ε, δ) budget.
- :mod:`.scoring` — one encoder for a real and a synthetic raw table, to score them
  (not private: it reads the real table).

docs/tabular.md describes the schema format, the methods and their default budget shares.
"""

from .api import (
    DEFAULT_PREPROCESSING_SHARE,
    DELTA_SHARE,
    PreparedRun,
    TableError,
    encoder_of,
    prepare,
    sidecar,
    synthesize,
)
from .encoder import ColumnCoding, Encoder, check_table, describe, fit_encoder, values_frame
from .schema import ColumnSpec, Schema, draft_schema

__all__ = [
    "DEFAULT_PREPROCESSING_SHARE",
    "DELTA_SHARE",
    "ColumnCoding",
    "ColumnSpec",
    "Encoder",
    "PreparedRun",
    "TableError",
    "Schema",
    "check_table",
    "describe",
    "draft_schema",
    "encoder_of",
    "fit_encoder",
    "prepare",
    "sidecar",
    "synthesize",
    "values_frame",
]
