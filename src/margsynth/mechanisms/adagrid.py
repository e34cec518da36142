"""The adaptive-granularity mechanism ("adaptive grid").

Implements the Adaptive Granularity Mechanism of R. McKenna (team Minutemen), the
Sprint 3 winning write-up of the NIST PSCR Differential Privacy Temporal Map Challenge
(2020-21; https://github.com/ryan112358/nist-synthetic-data-2021), cited below as
*AGM*, by section, with the details documented in docs/notes/adaptive_grid.md:

1. **Preprocess** (AGM "Detailed Description — Data preprocessing"): when records
   carry a person id, each record of a person with ``R`` records gets the weight
   ``min(1, C/R)`` (:func:`clipping_weights`), so one person moves any marginal by at
   most ``C`` in L1 (hence L2). Without person ids every record is its own person
   (``R = 1``) and the bound is ``min(1, C)``.
2. **Select** (AGM "Marginal Selection"): caller-given *outer-level* attribute sets
   and their *downward closure* (:func:`downward_closure`). Defaults for the
   registered datasets (:func:`default_marginals`) use only the public schema.
3. **Measure** (AGM "Measurements", "Adaptive Granularity Example"; docs/notes/adaptive_grid.md): in
   rounds ``k = 1..K`` every k-way marginal ``mu`` of the closure is measured as
   ``y = Q mu + N(0, sigma^2 I)`` with the adaptive query matrix of
   :func:`adaptive_query`: identity rows on the cells whose every (k-1)-way parent
   cell was *large* in round k-1, and, for the other cells, ``k`` aggregate rows
   per cell — one per (k-1)-way parent grouping — weighted ``1/sqrt(k)``. Every
   column has L2 norm exactly 1; this is checked at run time and reported.
4. **Account** (AGM "Noise calibration and proof of privacy"): each measurement is
   ``C/sigma``-GDP (Dong, Roth & Su, "Gaussian Differential Privacy", JRSS-B 2022,
   arXiv:1905.02383, Thm 2.7); ``n`` of them compose
   adaptively to ``sqrt(n) C / sigma``-GDP (Cor. 3.3); ``sigma`` is calibrated so
   that this is (eps, delta)-DP by Cor. 2.13
   (:func:`margsynth.privacy.accounting.gdp_sigma`). Every measurement is charged to a
   GDP :class:`~margsynth.privacy.BudgetLedger` before its noise is drawn.
5. **Post-process** (AGM "Post-processing"): Private-PGM
   (:func:`margsynth.inference.pgm.estimate`) on the sparse non-identity measurements,
   then synthetic records (:meth:`~margsynth.inference.pgm.GraphicalModel.synthetic_data`).

"Large" (AGM leaves it open, see docs/notes/adaptive_grid.md; AGM's example calls 300 and 200 "small"): a cell
measured by an identity row is large when its noisy answer exceeds
``threshold * sigma``. With the default ``threshold = 1`` this is the break-even
point of the two kinds of row: a child cell can only hold more than ``sigma``
(weighted) records when every parent does, and a cell below ``sigma`` gains nothing
from an identity row but one noise draw of size ``sigma``. Cells measured only by
aggregate rows in round k-1 are never large.

Seeded noise reproduces papers; it is not meant for production releases.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..dataset import Dataset
from ..domain import Domain
from ..privacy import BudgetLedger, NoisyMarginal, NoisyMarginals
from ..rules import RuleSet
from ..timing import timed
from .base import Mechanism, SynthesisResult, check_generator, check_marginals_fit, check_records
from .generators import Generator, PGMGenerator
from .sampler import pgm_sampler

__all__ = [
    "DEFAULT_OUTER",
    "QUERY_KINDS",
    "AdaptiveGrid",
    "AdaptiveQuery",
    "adaptive_query",
    "clipping_weights",
    "column_norms",
    "default_marginals",
    "downward_closure",
    "identity_grid",
    "large_cells",
    "measure_rounds",
]

#: ``queries=`` of :class:`AdaptiveGrid`: the paper's adaptive matrices, or plain
#: identity queries on the same marginals with the same budget (the comparison of
#: AGM "Adaptive Granularity Example": identity is the special case used before).
QUERY_KINDS = ("adaptive", "identity")

_NORM_TOL = 1e-12

#: Default outer-level sets for the registered datasets, chosen from the public
#: schema and the attributes' meaning only (never from the records), in the spirit of
#: AGM "Marginal Selection" (which always includes the two attributes the scoring
#: cares about most): every adult set contains the prediction target ``income>50K``
#: plus a pair of semantically related attributes; the pairs form a forest, so the
#: model's junction tree has cliques of three attributes (the outer sets). Datasets
#: not listed get :func:`window_marginals` (consecutive triples in schema order).
DEFAULT_OUTER: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "adult": (
        ("age", "hours-per-week", "income>50K"),
        ("education-num", "occupation", "income>50K"),
        ("occupation", "sex", "income>50K"),
        ("relationship", "sex", "income>50K"),
        ("marital-status", "relationship", "income>50K"),
        ("capital-gain", "capital-loss", "income>50K"),
        ("workclass", "fnlwgt", "income>50K"),
        ("race", "native-country", "income>50K"),
    ),
}


# ----------------------------------------------------------------------------- preprocessing
def _check_clip(clip: object) -> float:
    """The clipping value C of AGM "Data preprocessing": finite and > 0, else ``ValueError``."""
    if isinstance(clip, bool) or not isinstance(clip, (int, float, np.integer, np.floating)):
        raise ValueError(f"clip (C) must be a positive number, got {clip!r}")
    c = float(clip)
    if not math.isfinite(c) or c <= 0:
        raise ValueError(f"clip (C) must be finite and > 0, got {clip!r}")
    return c


def clipping_weights(person_ids: Sequence | np.ndarray | None, clip: float, n: int | None = None) -> np.ndarray:
    """Per-record weights ``min(1, C/R)``, ``R`` the number of records of the record's
    person (AGM "Detailed Description — Data preprocessing").

    ``person_ids=None`` is the plain case: every record is its own person (``R = 1``),
    so every weight is ``min(1, C)`` (``n`` records). One person then moves every
    marginal by at most ``min(R, C) <= C`` in L1.

    >>> clipping_weights([7, 7, 7, 8], 2.0).round(3).tolist()
    [0.667, 0.667, 0.667, 1.0]
    """
    c = _check_clip(clip)
    if person_ids is None:
        if n is None:
            raise ValueError("clipping_weights needs person_ids or the number of records n")
        return np.full(int(n), min(1.0, c))
    ids = np.asarray(person_ids)
    if ids.ndim != 1:
        raise ValueError(f"person ids must be a 1-d array, got shape {ids.shape}")
    if n is not None and ids.size != n:
        raise ValueError(f"{ids.size} person ids for {n} records")
    _, inv, counts = np.unique(ids, return_inverse=True, return_counts=True)
    return np.minimum(1.0, c / counts[inv].astype(np.float64))


def contribution_bound(clip: float, has_person_ids: bool) -> float:
    """L1 bound on one person's weighted contribution to any marginal (AGM "Noise
    calibration": the sensitivity of ``Q x`` is ``||Q||_2 * C``): ``C`` with person ids,
    ``min(1, C)`` without (each record its own person)."""
    c = _check_clip(clip)
    return c if has_person_ids else min(1.0, c)


# ----------------------------------------------------------------------------- selection
def downward_closure(outer: Iterable[Sequence[str] | str], domain: Domain) -> tuple[tuple[str, ...], ...]:
    """All non-empty subsets of the outer-level sets, without duplicates (AGM
    "Marginal Selection"), each in domain order, sorted by size then domain order.

    Raises ``ValueError`` for an empty list, an empty set, unknown attributes or a
    repeated attribute within a set.

    >>> d = Domain.from_sizes({"a": 2, "b": 2, "c": 2})
    >>> downward_closure([("a", "b"), ("b", "c")], d)
    (('a',), ('b',), ('c',), ('a', 'b'), ('b', 'c'))
    """
    if isinstance(outer, (str, bytes)):
        raise ValueError(f"marginals must be a list of attribute sets, got {outer!r}")
    sets = []
    for i, s in enumerate(outer):
        s = (s,) if isinstance(s, str) else tuple(s)
        if not s:
            raise ValueError(f"marginals[{i}] is empty")
        sets.append(domain.canonical(domain.check_attrs(s, f"marginals[{i}]")))
    if not sets:
        raise ValueError("marginals is empty: nothing to measure")
    closure = set()
    for s in sets:
        for r in range(1, len(s) + 1):
            closure.update(itertools.combinations(s, r))
    return tuple(sorted(closure, key=lambda c: (len(c), [domain.index(a) for a in c])))


def window_marginals(domain: Domain, width: int = 3, max_cells: int = 250_000) -> tuple[tuple[str, ...], ...]:
    """Consecutive windows of ``width`` attributes in schema order — our public-schema
    heuristic standing in for AGM "Marginal Selection" (whose sets were hard-coded from
    public data): a chain of overlapping triples, so the junction tree's cliques have
    ``width`` attributes. A window with more than ``max_cells`` cells is replaced by
    its consecutive pairs (keeps the model small on large domains). Fewer attributes
    than ``width``: one set of all of them.

    >>> window_marginals(Domain.from_sizes({"a": 2, "b": 2, "c": 2, "d": 2}))
    (('a', 'b', 'c'), ('b', 'c', 'd'))
    """
    names = domain.names
    if len(names) <= width:
        return (tuple(names),)
    out: list[tuple[str, ...]] = []
    for i in range(len(names) - width + 1):
        win = tuple(names[i : i + width])
        parts = [win] if domain.size(win) <= max_cells else [win[j : j + 2] for j in range(width - 1)]
        out += [p for p in parts if p not in out]
    return tuple(out)


def default_marginals(dataset: str, domain: Domain) -> tuple[tuple[str, ...], ...]:
    """Outer-level sets used when the caller gives none: :data:`DEFAULT_OUTER` for the
    datasets listed there, else :func:`window_marginals` — both chosen from the public
    schema only, so selection spends no privacy budget. Without a name (``""``), a
    :data:`DEFAULT_OUTER` entry whose sets cover exactly the domain's attributes is used
    (so ``margsynth synth`` on adult gets adult's sets)."""
    outer = DEFAULT_OUTER.get(dataset)
    if outer is not None and all(a in domain for s in outer for a in s):
        return outer
    if not dataset:
        for sets in DEFAULT_OUTER.values():
            if {a for s in sets for a in s} == set(domain.names):
                return sets
    return window_marginals(domain)


# ----------------------------------------------------------------------------- query matrices
@dataclass(frozen=True, eq=False)
class AdaptiveQuery:
    """The query matrix of one marginal (AGM "Adaptive Granularity Example"; docs/notes/adaptive_grid.md).

    ``matrix`` is CSR, ``rows x cells`` with cells in C order over ``clique``;
    the first ``n_identity`` rows are identity rows (one per cell of ``identity``),
    the remaining ``n_aggregate`` rows are the weighted aggregate rows.
    """

    clique: tuple[str, ...]
    matrix: sp.csr_matrix
    identity: np.ndarray  # bool mask over the clique's cells
    n_identity: int
    n_aggregate: int

    @property
    def cells(self) -> int:
        return int(self.identity.size)


def column_norms(q: sp.spmatrix | np.ndarray) -> np.ndarray:
    """L2 norm of every column of ``Q``; the largest is the L2 sensitivity of ``Q x`` for
    a unit change of one cell (AGM "Noise calibration", ref. [4], Li et al.)."""
    if sp.issparse(q):
        sq = sp.csr_matrix(q).multiply(sp.csr_matrix(q))
        return np.sqrt(np.asarray(sq.sum(axis=0)).ravel())
    q = np.asarray(q, dtype=np.float64)
    return np.sqrt((q * q).sum(axis=0))


def adaptive_query(
    shape: Sequence[int], parent_large: Sequence[np.ndarray] | None, clique: Sequence[str] | None = None
) -> AdaptiveQuery:
    """Adaptive query matrix of a k-way marginal (AGM "Adaptive Granularity Example"; docs/notes/adaptive_grid.md).

    Parameters
    ----------
    shape:
        The marginal's shape ``(n_1, ..., n_k)``; cells in C order.
    parent_large:
        For ``k >= 2``: ``k`` boolean arrays, ``parent_large[j]`` of shape ``shape``
        without axis ``j`` — which cells of the (k-1)-way parent that drops attribute
        ``j`` were measured large. ``None`` (or ``k = 1``): the only parent is the
        total, which is large, so ``Q = I``.

    Notes
    -----
    Construction: cell ``x`` gets an identity row iff ``parent_large[j][x without j]``
    for every ``j``. Every other cell is covered by ``k`` aggregate rows, one per
    parent grouping ``j``: the row of parent cell ``p`` sums, with weight
    ``1/sqrt(k)``, the non-identity cells ``x`` with ``x without j == p`` (steps
    (1)-(3) of the example: re-measure the parents over the finer domain, excluding the
    cells measured finely, reweighted so each column has L2 norm exactly 1). Rows are
    ordered identity rows (cell order), then grouping ``j = 0, 1, ...`` (parent cell
    order). The paper's 4 x 3 example gives 6 identity and 7 aggregate rows.
    """
    shape = tuple(int(s) for s in shape)
    k = len(shape)
    n = int(np.prod(shape, dtype=np.int64))
    clique = tuple(clique) if clique is not None else tuple(f"x{i}" for i in range(k))
    if k == 0:
        raise ValueError("adaptive_query needs at least one attribute")
    if k == 1 or parent_large is None:
        eye = sp.identity(n, format="csr", dtype=np.float64)
        return AdaptiveQuery(clique, eye, np.ones(n, dtype=bool), n, 0)
    if len(parent_large) != k:
        raise ValueError(f"a {k}-way marginal has {k} parents, got {len(parent_large)} masks")
    coords = np.indices(shape).reshape(k, n)
    ident = np.ones(n, dtype=bool)
    parent_index = []
    for j in range(k):
        pshape = shape[:j] + shape[j + 1 :]
        mask = np.asarray(parent_large[j], dtype=bool)
        if mask.shape != pshape:
            raise ValueError(f"parent mask {j} has shape {mask.shape}, expected {pshape}")
        pidx = np.ravel_multi_index(tuple(np.delete(coords, j, axis=0)), pshape)
        parent_index.append(pidx)
        ident &= mask.ravel()[pidx]
    id_cells = np.flatnonzero(ident)
    rows = [np.arange(id_cells.size)]
    cols = [id_cells]
    vals = [np.ones(id_cells.size)]
    rest = np.flatnonzero(~ident)
    n_rows = id_cells.size
    w = 1.0 / math.sqrt(k)
    if rest.size:
        for j in range(k):
            groups, local = np.unique(parent_index[j][rest], return_inverse=True)
            rows.append(n_rows + local)
            cols.append(rest)
            vals.append(np.full(rest.size, w))
            n_rows += groups.size
    q = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_rows, n), dtype=np.float64
    )
    return AdaptiveQuery(clique, q, ident, int(id_cells.size), int(n_rows - id_cells.size))


def large_cells(q: AdaptiveQuery, y: np.ndarray, sigma: float, threshold: float) -> np.ndarray:
    """Cells measured large (docs/notes/adaptive_grid.md): an identity row whose noisy answer exceeds
    ``threshold * sigma``; cells measured only by aggregate rows are never large.
    Returns a boolean mask over the clique's cells (C order)."""
    large = np.zeros(q.cells, dtype=bool)
    cells = np.flatnonzero(q.identity)
    large[cells] = np.asarray(y)[: q.n_identity] > threshold * sigma
    return large


# ----------------------------------------------------------------------------- measurement
@dataclass
class _Measured:
    query: AdaptiveQuery
    y: np.ndarray
    sigma: float
    sensitivity: float
    max_norm: float
    min_norm: float


def measure_rounds(
    data: Dataset,
    cliques: Sequence[tuple[str, ...]],
    *,
    sigma: float,
    bound: float,
    rng: np.random.Generator,
    ledger: BudgetLedger | None,
    threshold: float = 1.0,
    queries: str = "adaptive",
) -> list[_Measured]:
    """Measure every marginal of ``cliques`` in rounds of k-way marginals (AGM
    "Measurements"): ``y = Q mu + N(0, sigma^2 I)`` with ``Q`` from :func:`adaptive_query`
    (built from the noisy answers of round k-1) or ``Q = I`` (``queries="identity"``).

    ``bound`` is the L1 bound ``C`` on one person's contribution; each measurement's L2
    sensitivity ``C * max column norm`` is charged (``C max|Q_j| / sigma``-GDP, Thm 2.7)
    before its noise is drawn. Raises ``RuntimeError`` if a column norm differs from 1.
    """
    if queries not in QUERY_KINDS:
        raise ValueError(f"queries must be one of {QUERY_KINDS}, got {queries!r}")
    domain = data.domain
    measured: dict[tuple[str, ...], _Measured] = {}
    out = []
    for k in sorted({len(c) for c in cliques}):
        for c in (c for c in cliques if len(c) == k):
            shape = tuple(domain[a].size for a in c)
            parents = None
            if queries == "adaptive" and k > 1:
                parents = []
                for j in range(k):
                    p = c[:j] + c[j + 1 :]
                    if p not in measured:
                        raise ValueError(
                            f"marginal {c} measured before its parent {p}; cliques must be downward closed"
                        )
                    pm = measured[p]
                    parents.append(
                        large_cells(pm.query, pm.y, pm.sigma, threshold).reshape(tuple(domain[a].size for a in p))
                    )
            q = adaptive_query(shape, parents, c)
            norms = column_norms(q.matrix)
            if not np.all(np.abs(norms - 1.0) <= _NORM_TOL):
                bad = int(np.argmax(np.abs(norms - 1.0)))
                raise RuntimeError(f"query matrix of {c}: column {bad} has L2 norm {norms[bad]!r}, not 1")
            max_norm, min_norm = float(norms.max()), float(norms.min())
            sens = bound * max_norm
            if ledger is not None:
                ledger.charge(
                    "gaussian", ledger.cost("gaussian", sigma=sigma, sensitivity=sens), f"round {k}: {'x'.join(c)}",
                    sigma=sigma, sensitivity=sens, round=k, identity_rows=q.n_identity, aggregate_rows=q.n_aggregate,
                )  # fmt: skip
            mu = data.marginal(c, flatten=True).astype(np.float64)
            y = q.matrix @ mu + rng.normal(0.0, sigma, size=q.matrix.shape[0])
            m = _Measured(q, y, sigma, sens, max_norm, min_norm)
            measured[c] = m
            out.append(m)
    return out


# ----------------------------------------------------------------------------- the mechanism
#: The cells rule cliques may add to AGM's model beyond Private-PGM's growth limit
#: (:class:`~.generators.PGMGenerator`'s ``rule_slack_cells``). Its model is small (grids of
#: one and two attributes), so the default slack, made for MST's trees, would leave most
#: rules to the generator's redraw: on the NIST excerpt ma2018 at ε = 1 (three seeds) 13 of
#: the 43 rules stayed out with 64 or 1,024 cells and the k-marginal score fell 3.3 points
#: below the run without rules; with 2^20 cells every rule is in the model and it is 7.1
#: points above (docs/notes/rules.md). It matters only when a run has rules.
AGM_RULE_SLACK_CELLS = 1 << 20


def _agm_pgm() -> Generator:
    """AGM's post-processing: Private-PGM, 1,000 iterations, room for the rules' cliques."""
    return PGMGenerator(iters=1000, rule_slack_cells=AGM_RULE_SLACK_CELLS)


@dataclass(frozen=True)
class AdaptiveGrid(Mechanism):
    """The adaptive-granularity mechanism (AGM, all sections; docs/notes/adaptive_grid.md).

    The budget split is uniform: every marginal of the closure is one Gaussian
    measurement with the same ``sigma``, as in AGM.

    Parameters
    ----------
    marginals:
        Outer-level attribute sets (AGM "Marginal Selection"); their downward
        closure is measured. ``None``: :func:`default_marginals` for ``dataset``.
    clip:
        The clipping value ``C`` (AGM "Data preprocessing"); must be > 0.
    threshold:
        A parent cell is large when its noisy identity answer exceeds
        ``threshold * sigma`` (module docstring).
    queries:
        ``"adaptive"`` (AGM) or ``"identity"`` (same marginals and budget, ``Q = I``).
    person_column:
        Attribute of the data's domain holding the person id (dropped before
        synthesis); alternatively pass ``person_ids=`` to :meth:`run`.
    dataset:
        Name used to look up default marginals.
    generator:
        The GENERATE step (:mod:`.generators`; it must take non-identity queries):
        by default Private-PGM, ``PGMGenerator(iters=1000, rule_slack_cells=AGM_RULE_SLACK_CELLS)``
        (AGM "Post-processing"; the slack matters only with rules).
    synthetic_records:
        Number of synthetic records (default ``None``: the model's estimated total).
    """

    marginals: tuple[tuple[str, ...], ...] | None = None
    clip: float = 1.0
    threshold: float = 1.0
    queries: str = "adaptive"
    person_column: str | None = None
    dataset: str = ""
    extras_model: bool = field(default=False, compare=False)
    generator: Generator = field(default_factory=_agm_pgm)
    synthetic_records: int | None = None

    name = "adagrid"
    currency = "gdp"  # μ-GDP Gaussian measurements composed by Dong et al. Cor. 3.3 (AGM "Noise calibration")

    def __post_init__(self) -> None:
        _check_clip(self.clip)
        if self.queries not in QUERY_KINDS:
            raise ValueError(f"queries must be one of {QUERY_KINDS}, got {self.queries!r}")
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
            raise ValueError(f"threshold must be a finite number, got {t!r}")
        check_generator(self.generator, allow_none=False)
        check_records(self.synthetic_records)
        if self.marginals is not None:
            if isinstance(self.marginals, (str, bytes)):
                raise ValueError(f"marginals must be a list of attribute sets, got {self.marginals!r}")
            ms = tuple((m,) if isinstance(m, str) else tuple(m) for m in self.marginals)
            if not ms or any(not m for m in ms):
                raise ValueError(f"marginals must be non-empty attribute sets, got {self.marginals!r}")
            object.__setattr__(self, "marginals", ms)

    # ------------------------------------------------------------------ helpers
    def select(self, domain: Domain) -> tuple[tuple[str, ...], ...]:
        """SELECT: the downward closure of the outer-level sets (AGM "Marginal Selection")."""
        outer = self.marginals if self.marginals is not None else default_marginals(self.dataset, domain)
        return downward_closure(outer, domain)

    def noise_scale(self, epsilon: float, delta: float, measurements: int, bound: float) -> float:
        """``sigma = C sqrt(n) / mu`` (AGM "Noise calibration": Thm 2.7, Cor. 3.3,
        Cor. 2.13), ``mu`` the GDP budget of :meth:`BudgetLedger.from_dp` (the largest
        ``mu(eps, delta)`` less its calibration margin; cf.
        :func:`~margsynth.privacy.accounting.gdp_sigma`)."""
        return bound * math.sqrt(int(measurements)) / self.budget(epsilon, delta).total

    # ------------------------------------------------------------------ validate
    def check(
        self,
        data: Dataset,
        budget: BudgetLedger,
        *,
        person_ids: np.ndarray | Sequence | None = None,
        **kwargs: Any,
    ) -> None:
        """The adaptive grid's own checks — weights, person ids, the marginals' attribute
        names and sizes — before any noise (``ValueError`` on bad input)."""
        if kwargs:
            raise ValueError(f"unexpected keyword argument(s) {sorted(kwargs)}")
        if data.weights is not None:
            raise ValueError("data already carries record weights; the adaptive grid sets its own clipping weights")
        domain = data.domain
        if self.person_column is not None:
            if person_ids is not None:
                raise ValueError("give person ids either as person_column or as person_ids=, not both")
            domain.check_attrs((self.person_column,), "person_column")
            domain = domain.project([a for a in domain.names if a != self.person_column])
        elif person_ids is not None:
            clipping_weights(person_ids, self.clip, len(data))
        check_marginals_fit(domain, self.select(domain), "marginal")
        check_records(self.synthetic_records, columns=len(domain))

    # ------------------------------------------------------------------ run
    def synthesize(
        self,
        data: Dataset,
        rng: np.random.Generator,
        budget: BudgetLedger,
        *,
        person_ids: np.ndarray | Sequence | None = None,
        rules: RuleSet | None = None,
        **_: Any,
    ) -> SynthesisResult:
        """Synthesize ``data`` spending the GDP ``budget``; see the class docstring.
        ``rules`` (no budget) are the generator's: Private-PGM's structural zeros, the rest
        enforced on the records (:class:`~.generators.PGMGenerator`).

        ``person_ids`` (or the ``person_column`` attribute) turns on per-person
        clipping; without them each record is its own person. ``extras`` carry
        ``rounds`` (per round: marginals, identity and aggregate rows, column-norm
        range), ``measurements`` (per marginal), ``sensitivity`` (the run-time
        column-norm check), ``sigma``, ``mu`` and ``marginals`` (the closure).
        """
        times: dict[str, float] = {}
        with timed(times, "select"):
            # -- preprocess: person ids and clipping weights (AGM "Data preprocessing")
            if self.person_column is not None:
                person_ids = np.asarray(data.column(self.person_column))
                data = data.project([a for a in data.domain.names if a != self.person_column])
            has_ids = person_ids is not None
            weights = clipping_weights(person_ids, self.clip, len(data))
            bound = contribution_bound(self.clip, has_ids)
            weighted = Dataset._trusted(data.codes, data.domain, weights if np.any(weights != 1.0) else None)
            # -- SELECT (public: outer sets given by the caller or the schema)
            cliques = self.select(data.domain)
        # -- MEASURE (rounds k = 1..K, GDP ledger)
        ledger = budget
        with timed(times, "measure"):
            sigma = bound * math.sqrt(len(cliques)) / ledger.total  # = self.noise_scale(...)
            measured = measure_rounds(
                weighted, cliques, sigma=sigma, bound=bound, rng=rng, ledger=ledger, threshold=self.threshold,
                queries=self.queries,
            )  # fmt: skip
        # -- GENERATE (Private-PGM on the sparse measurements, then records)
        with timed(times, "generate"):
            noisy = NoisyMarginals(
                NoisyMarginal(m.query.clique, m.y, m.sigma, query=None if m.query.n_aggregate == 0 else m.query.matrix)
                for m in measured
            )
            out = self.generator.generate(data.domain, noisy, rng, records=self.synthetic_records, sep="x", rules=rules)
            synth = out.synthetic
            model = out.extras.get("model")
        rounds = _round_table(measured)
        extras: dict[str, Any] = {
            "marginals": cliques,
            "sigma": sigma,
            "mu": ledger.spent,
            "mu_budget": ledger.total,
            "clip": self.clip,
            "contribution_bound": bound,
            "person_ids": has_ids,
            "rounds": rounds,
            "measurements": [
                {
                    "clique": m.query.clique,
                    "round": len(m.query.clique),
                    "cells": m.query.cells,
                    "identity_rows": m.query.n_identity,
                    "aggregate_rows": m.query.n_aggregate,
                    "max_column_norm": m.max_norm,
                    "min_column_norm": m.min_norm,
                    "sensitivity": m.sensitivity,
                }
                for m in measured
            ],  # fmt: skip
            "queries": [m.query for m in measured],
            "sensitivity": {
                "max_column_norm": max(m.max_norm for m in measured),
                "min_column_norm": min(m.min_norm for m in measured),
                "l2_sensitivity": max(m.sensitivity for m in measured),
                "contribution_bound": bound,
                "columns_checked": int(sum(m.query.cells for m in measured)),
                "all_columns_norm_one": True,
            },
            **{k: v for k, v in out.extras.items() if k != "model"},
            "estimated_total": float(model.total) if model is not None else float(len(synth)),
        }
        if self.extras_model:
            extras["model"] = model
        params = asdict(self)
        params.pop("extras_model", None)
        params["generator"] = {"name": self.generator.name, **asdict(self.generator)}
        name = "adagrid" if self.queries == "adaptive" else "adagrid-identity"
        return SynthesisResult.from_ledger(
            synth, name, params, ledger, times, extras, sampler=pgm_sampler(out.extras, rules=rules)
        )

    def check_rules(self, data: Dataset, rules: RuleSet) -> None:
        """Rules may not mention ``person_column``: it identifies people and is not synthesized."""
        if self.person_column is not None and self.person_column in rules.attributes:
            named = [r.name for r in rules if self.person_column in r.attrs]
            raise ValueError(
                f"rules {named} mention person_column={self.person_column!r}, which is not synthesized; "
                "expected rules over the other attributes"
            )


def identity_grid(**kwargs: Any) -> AdaptiveGrid:
    """The comparison variant: same marginals, same budget, identity queries."""
    return AdaptiveGrid(queries="identity", **kwargs)


def _round_table(measured: Sequence[_Measured]) -> list[dict[str, Any]]:
    """Per round k: number of k-way marginals, cells, identity and aggregate rows, and the
    column-norm range (all 1 by construction; AGM "Measurements")."""
    rows = []
    for k in sorted({len(m.query.clique) for m in measured}):
        ms = [m for m in measured if len(m.query.clique) == k]
        rows.append(
            {
                "round": k,
                "marginals": len(ms),
                "cells": int(sum(m.query.cells for m in ms)),
                "identity_rows": int(sum(m.query.n_identity for m in ms)),
                "aggregate_rows": int(sum(m.query.n_aggregate for m in ms)),
                "min_column_norm": min(m.min_norm for m in ms),
                "max_column_norm": max(m.max_norm for m in ms),
            }
        )
    return rows
