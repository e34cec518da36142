"""GUM -- the Gradually Update Method of PrivSyn (Zhang et al., USENIX Security 2021, §5).

Given a set of (noisy) marginals, GUM does not sample from a graphical model --
which fails when the marginal graph is dense (§5, first paragraphs) -- but
starts from a random dataset and edits its records until their marginals match:

- **Initialisation** (docs/notes/privsyn.md): ``n`` records drawn attribute by attribute from
  the 1-way marginals (each 1-way distribution is the average of the given
  marginals' projections onto that attribute; an attribute no marginal covers is
  uniform). Counts are rounded to exactly ``n`` (largest remainder) and shuffled,
  so the starting 1-way marginals are as close as integers allow.
- **Rounds** (§5.2; docs/notes/privsyn.md): for each marginal in turn, compare the synthetic
  marginal ``S`` with the target ``T`` (scaled to ``n`` records). Under-counted
  cells ``u`` (``T_u > S_u``) receive ``≈ α_t (T_u - S_u)`` records and as many
  records leave over-counted cells ``o`` (``≈ α_t (S_o - T_o)`` each; the two
  totals are matched), with stochastic rounding so that gaps below one record
  still close on average. A share ``β`` of the moves is made by **duplication**
  -- the leaving record is overwritten by a copy of a random record already in
  the under-counted cell (Figure 3's ``v3``) -- and the rest by **changing** only
  this marginal's attributes of the leaving record (Figure 3's ``v4``). When the
  under-counted cell has no record to copy, the move is a change.
- **Update rate** ``α_t = max(α · decay^t, α_min)`` decays over rounds ``t``.
- **Stopping rule**: stop after the first round in which fewer than ``tol · n``
  records changed, or after ``max_rounds`` rounds.
- **Min-cost flow** (§5.1, the "strawman" MCF; ``update="mcf"``): the moves of a
  marginal are instead the integral min-cost flow from the over-counted to the
  under-counted cells (costs = number of the marginal's attributes that change),
  solved with OR-Tools; records on each arc get only their marginal attributes
  changed. The graph is complete bipartite, so this is for small marginals.

Everything is vectorised with numpy (``bincount``, stable ``argsort`` — a radix sort of
16-bit keys — to rank records within cells); there is no per-record Python loop.

GUM is a generator for *any* set of noisy marginals: pass PrivSyn's consistent
marginals, or the :class:`~margsynth.privacy.measure.NoisyMarginal` log of MST /
NIST-MST / AIM, or ``(clique, counts)`` pairs. Negative noisy cells are handled by
projecting each target onto the non-negative tables with its own total
(:func:`~margsynth.inference.consistency.project_nonnegative`), then rescaling to ``n``.

Rules (:mod:`margsynth.rules`; ``synthesize(..., rules=...)``, not in PrivSyn): a target over
attributes that hold a rule is first projected onto the allowed cells — its forbidden cells
emptied and the allowed ones rescaled to the same total (the closest table in
Kullback-Leibler divergence with those zeros, :meth:`~margsynth.rules.RuleSet.project`), so GUM never pulls records into a forbidden
cell of a marginal it matches. Records that break a rule are fixed as Private-PGM's are:
each offending record gets the attribute each broken rule determines drawn again, among the
values every rule allows, from its conditional given the record's other attributes under
the targets (:func:`~margsynth.inference.repair.redraw`;
:func:`~margsynth.inference.repair.marginals_log_conditional`: the targets that hold the attribute, joined as a
decomposable model whose cliques meet only in it), and a record that leaves unfixed gets
the attributes of its broken rules redrawn weighted by the targets' one-way marginals
(:func:`~margsynth.inference.repair.repair`). **Lawful GUM** (``lawful=True``, the default
with rules) fixes the records once, at the start — the independent 1-way draws break
nearly every rule — and then keeps them lawful: a move that changes a record's values
of the marginal being matched is undone where the record would then break a rule (a
duplicated record copies one that obeys them all). GUM's later moves then match the targets
among lawful records, instead of matching them first and moving records off the targets at
the end (``lawful=False``, where moves across marginals and rules no target holds leave
records to the final fix). The final fix still runs, and finds nothing to do. The number
of records stays ``n``. Rules are public: no budget.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..dataset import Dataset
from ..domain import Domain
from ..rules import RuleSet, as_rules
from ..timing import Stopwatch
from .consistency import project_nonnegative
from .repair import enforce, marginals_log_conditional

__all__ = ["GUM", "GUMResult", "gum", "normalise_marginals"]

_UPDATES = ("gum", "mcf")
_ORDERS = ("random", "given", "error")


@dataclass
class GUMResult:
    """Synthetic data and GUM's convergence trace.

    ``trace`` has one row per round (round 0 = the initial dataset) with columns
    ``round, alpha, changed, changed_fraction, mean_tv, max_tv, seconds``: the update
    rate used, records changed, and the mean/max total-variation distance between the
    synthetic and target marginals at the end of the round.
    """

    synthetic: Dataset
    trace: pd.DataFrame
    rounds: int
    converged: bool
    parameters: dict[str, Any] = field(default_factory=dict)
    #: with rules: the repair's report (:func:`~margsynth.inference.repair.enforce`)
    rules: dict[str, Any] | None = None


def _as_clique(c, i: int) -> tuple[str, ...]:
    if isinstance(c, str):
        return (c,)
    if not isinstance(c, Iterable):
        raise ValueError(f"marginal {i}: clique must be a sequence of attribute names, got {c!r}")
    return tuple(c)


def normalise_marginals(marginals: Any, domain: Domain) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """Accept ``[(clique, counts), ...]``, ``{clique: counts}``, or objects with
    ``.clique`` and ``.estimate`` (:class:`~margsynth.privacy.measure.NoisyMarginal`);
    return ``[(clique, flat float counts)]`` validated against ``domain``."""
    if isinstance(marginals, Mapping):
        items = list(marginals.items())
    elif isinstance(marginals, (str, bytes)) or not isinstance(marginals, Iterable):
        raise ValueError(f"marginals must be a list of (clique, counts) or NoisyMarginal, got {type(marginals).__name__}")
    else:
        items = []
        for i, m in enumerate(marginals):
            if hasattr(m, "clique") and hasattr(m, "estimate"):
                items.append((m.clique, m.estimate))
            elif isinstance(m, (tuple, list)) and len(m) == 2:
                items.append((m[0], m[1]))
            else:
                raise ValueError(f"marginal {i}: expected a (clique, counts) pair or a NoisyMarginal, got {m!r:.80}")
    if not items:
        raise ValueError("no marginals given")
    out = []
    for i, (c, counts) in enumerate(items):
        c = domain.check_attrs(_as_clique(c, i), f"marginal {i}")
        if not c:
            raise ValueError(f"marginal {i}: empty clique")
        size = domain.size(c)
        arr = np.asarray(counts, dtype=np.float64).ravel()
        if arr.size != size:
            raise ValueError(f"marginal {i} over {c}: {arr.size} cells, expected {size} (shape {domain.project(c).shape})")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"marginal {i} over {c}: non-finite entries")
        out.append((c, arr))
    return out


def _target(counts: np.ndarray, n: int) -> np.ndarray:
    """Non-negative table with its own total (projection), rescaled to ``n`` records."""
    total = float(counts.sum())
    p = project_nonnegative(counts, total if total > 0 else float(n))
    s = p.sum()
    if s <= 0:
        return np.full(p.size, n / p.size)
    return p * (n / s)


def _round_to_total(x: np.ndarray, n: int) -> np.ndarray:
    """Largest-remainder rounding of non-negative ``x`` (sum ≈ n) to integers summing to ``n``."""
    x = np.maximum(x, 0.0)
    if x.sum() <= 0:
        x = np.ones_like(x)
    x = x * (n / x.sum())
    base = np.floor(x).astype(np.int64)
    short = n - int(base.sum())
    if short > 0:
        frac = x - base
        base[np.argsort(-frac, kind="stable")[:short]] += 1
    elif short < 0:  # pragma: no cover - rounding of floor never exceeds n
        base[np.argsort(-base, kind="stable")[: -short]] -= 1
    return base


def _stochastic_round(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    f = np.floor(x)
    return (f + (rng.random(x.shape) < (x - f))).astype(np.int64)


def _stable_argsort(keys: np.ndarray, size: int) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for integer ``keys`` in ``[0, size)``: the same
    permutation (a stable sort is unique), by numpy's radix sort of 16-bit keys — one pass,
    or two (low then high 16 bits, least significant first) for up to 2**32 cells."""
    if size <= 1 << 16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    if size <= 1 << 32:
        order = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
        return order[np.argsort((keys[order] >> 16).astype(np.uint16), kind="stable")]
    return np.argsort(keys, kind="stable")  # pragma: no cover - marginals beyond 2**32 cells


def _first_positions(sorted_cells: np.ndarray, size: int) -> np.ndarray:
    """``p[c]`` = the number of entries of ``sorted_cells`` below ``c`` (the position of the
    first ``c``; ``np.searchsorted(sorted_cells, c, side="left")``), for every ``c < size``."""
    counts = np.bincount(sorted_cells, minlength=size)
    return np.cumsum(counts) - counts


def _rank_within_cells(records: np.ndarray, cells: np.ndarray, rng: np.random.Generator, size: int):
    """Shuffle ``records`` and sort them by ``cells`` (stable; cells in ``[0, size)``):
    returns the records, their cells, and each record's rank among the records of its cell."""
    perm = rng.permutation(records.size)
    records, cells = records[perm], cells[perm]
    order = _stable_argsort(cells, size)
    records, cells = records[order], cells[order]
    start = _first_positions(cells, size)[cells]
    return records, cells, np.arange(cells.size) - start


def _pick_leaving(idx: np.ndarray, leave: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``leave[c]`` random records of each cell ``c`` (``leave <= counts``), grouped by
    cell in increasing cell order; returns (records, their cells)."""
    cand = np.flatnonzero(leave[idx] > 0)
    recs, cells, rank = _rank_within_cells(cand, idx[cand], rng, leave.size)
    keep = rank < leave[cells]
    return recs[keep], cells[keep]


def _match_totals(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Trim the larger of two count vectors by random units so both sum to the smaller total."""
    ka, kb = int(a.sum()), int(b.sum())
    if ka > kb:
        a = _trim(a, kb, rng)
    elif kb > ka:
        b = _trim(b, ka, rng)
    return a, b


def _trim(counts: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    units = np.repeat(np.arange(counts.size), counts)
    keep = rng.choice(units.size, size=k, replace=False) if k < units.size else np.arange(units.size)
    return np.bincount(units[keep], minlength=counts.size).astype(np.int64)


@dataclass(frozen=True)
class GUM:
    """Hyperparameters of GUM (PrivSyn §5.2; §5.1 for ``update="mcf"``).

    Attributes
    ----------
    alpha:
        Initial update rate ``α``: the fraction of each cell's gap closed per visit.
    alpha_decay:
        Multiplicative decay of ``α`` per round (``α_t = max(α · decay^t, alpha_min)``).
    alpha_min:
        Floor of the update rate.
    beta:
        Share of the moves made by duplicating a record of the under-counted cell
        (the rest change only the marginal's attributes); PrivSyn's Figure 3 uses 0.5.
    max_rounds:
        Upper bound on rounds (one round visits every marginal once).
    tol:
        Stopping rule: stop after a round that changed fewer than ``tol · n`` records.
    update:
        ``"gum"`` (§5.2) or ``"mcf"`` (§5.1 min-cost flow via OR-Tools).
    order:
        Order in which a round visits the marginals: ``"random"`` (fresh each round),
        ``"given"``, or ``"error"`` (largest current TV first, as the authors' public
        code does).
    growth_cap:
        If set, a non-empty under-counted cell gains at most ``growth_cap`` times its
        current count per visit (the authors' public code caps the relative growth at
        ``α``, i.e. ``growth_cap=1`` at ``α = 1``), which makes the duplication step a
        multiplicative, IPF-like rescaling of the cell; empty cells still receive
        ``α`` times their gap by changing records. ``None``: no cap.
    max_mcf_arcs:
        Refuse an MCF update whose bipartite graph would have more arcs than this.
    lawful:
        With rules: start from records that obey them and undo every change of a move that
        would make its record break one (module docstring). ``False``: GUM as published,
        the records fixed only at the end. Without rules it has no effect.
    """

    alpha: float = 1.0
    alpha_decay: float = 0.85
    alpha_min: float = 0.02
    beta: float = 0.5
    max_rounds: int = 50
    tol: float = 1e-3
    update: str = "gum"
    order: str = "random"
    growth_cap: float | None = None
    max_mcf_arcs: int = 4_000_000
    lawful: bool = True

    def __post_init__(self) -> None:
        def num(name, lo, hi, lo_open=True):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
                raise ValueError(f"GUM {name} must be a finite number, got {v!r}")
            if (v <= lo if lo_open else v < lo) or v > hi:
                raise ValueError(f"GUM {name} must be in {'(' if lo_open else '['}{lo}, {hi}], got {v!r}")

        num("alpha", 0.0, 1.0)
        num("alpha_decay", 0.0, 1.0)
        num("alpha_min", 0.0, 1.0, lo_open=False)
        num("beta", 0.0, 1.0, lo_open=False)
        num("tol", 0.0, 1.0, lo_open=False)
        if self.growth_cap is not None:
            v = self.growth_cap
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
                raise ValueError(f"GUM growth_cap must be None or a finite number > 0, got {v!r}")
        for name in ("max_rounds", "max_mcf_arcs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"GUM {name} must be a positive integer, got {v!r}")
        if self.order not in _ORDERS:
            raise ValueError(f"GUM order must be one of {_ORDERS}, got {self.order!r}")
        if self.update not in _UPDATES:
            raise ValueError(f"GUM update must be one of {_UPDATES}, got {self.update!r}")
        if not isinstance(self.lawful, (bool, np.bool_)):
            raise ValueError(f"GUM lawful must be True or False, got {self.lawful!r}")

    # ------------------------------------------------------------------ public
    def synthesize(
        self,
        domain: Domain,
        marginals: Any,
        n: int,
        rng: np.random.Generator,
        *,
        initial: Dataset | None = None,
        rules: RuleSet | None = None,
    ) -> GUMResult:
        """Generate ``n`` records over ``domain`` whose marginals approach ``marginals``.

        ``marginals``: see :func:`normalise_marginals`. ``initial``: start from these
        records instead of the 1-way initialisation (``n`` must equal its size).
        ``rules``: targets projected onto the allowed cells, records repaired at the end
        (module docstring; the report in :attr:`GUMResult.rules`).
        """
        if not isinstance(domain, Domain):
            raise ValueError(f"domain must be a Domain, got {type(domain).__name__}")
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n (number of synthetic records) must be a positive integer, got {n!r}")
        n = int(n)
        margs = normalise_marginals(marginals, domain)
        rules = as_rules(rules, domain)
        targets = [(c, _target(m, n)) for c, m in margs]
        if rules is not None:
            targets = [(c, rules.project(t, c, domain)) for c, t in targets]
        if initial is not None:
            if not isinstance(initial, Dataset) or initial.domain != domain:
                raise ValueError("initial must be a Dataset over the same domain")
            if len(initial) != n:
                raise ValueError(f"initial has {len(initial)} records but n={n}")
            codes = np.asarray(initial.codes, dtype=np.int64, order="F").copy()
        else:
            codes = self._initialise(domain, targets, n, rng)
        plans = [self._plan(domain, c) for c, _ in targets]
        def fix(data: Dataset) -> tuple[Dataset, dict[str, Any] | None]:
            """The records made to obey the rules: redraw under the targets, then the repair."""
            return enforce(
                data, rules, rng,
                weights=lambda: {a: self._one_way(domain, targets, a, n) for a in rules.attributes},
                conditional=marginals_log_conditional(domain, targets),
            )  # fmt: skip

        obeys, start, undone = None, None, [0]
        if rules is not None and self.lawful:
            test = rules.row_check(domain)

            def obeys(rows: np.ndarray) -> np.ndarray:  # the row test, counting the moves it undoes
                ok = test(rows)
                undone[0] += int(ok.size - np.count_nonzero(ok))
                return ok

            fixed, start = fix(Dataset._trusted(codes, domain))
            codes = np.asarray(fixed.codes, dtype=np.int64, order="F").copy()

        rows = []
        clock = Stopwatch()
        tvs = self._tvs(codes, plans, targets, n)
        rows.append(self._row(0, float("nan"), 0, n, tvs, clock))
        converged = False
        r = 0
        for r in range(1, self.max_rounds + 1):
            alpha = max(self.alpha * self.alpha_decay ** (r - 1), self.alpha_min)
            if self.order == "random":
                order = rng.permutation(len(targets))
            elif self.order == "error":
                order = np.argsort(-np.asarray(tvs), kind="stable")
            else:
                order = range(len(targets))
            changed = 0
            for k in order:
                changed += self._update(codes, plans[k], targets[k][1], alpha, rng, obeys)
            tvs = self._tvs(codes, plans, targets, n)
            rows.append(self._row(r, alpha, changed, n, tvs, clock))
            if changed < self.tol * n:
                converged = True
                break
        codes = np.ascontiguousarray(codes)
        dtype = np.uint8 if max(domain.shape) <= 255 else np.uint16 if max(domain.shape) <= 65535 else np.int64
        synthetic = Dataset._trusted(codes.astype(dtype), domain)
        report = None
        if rules is not None:
            synthetic, report = fix(synthetic)
            if start is not None:  # lawful: the start's fix, and the moves undone on the way
                report = {**report, "lawful": {"start": start, "undone": undone[0]}}
        return GUMResult(synthetic, pd.DataFrame(rows), r, converged, asdict(self), report)

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _plan(domain: Domain, clique: tuple[str, ...]):
        cols = np.array([domain.index(a) for a in clique], dtype=np.intp)
        shape = tuple(domain[a].size for a in clique)
        strides = np.array([int(np.prod(shape[i + 1 :], dtype=np.int64)) for i in range(len(shape))], dtype=np.int64)
        return cols, shape, strides

    @staticmethod
    def _cells(codes: np.ndarray, plan) -> np.ndarray:
        cols, _, strides = plan
        idx = codes[:, cols[0]] * strides[0]
        for c, s in zip(cols[1:], strides[1:]):
            idx = idx + codes[:, c] * s
        return idx

    @staticmethod
    def _one_way(domain: Domain, targets, name: str, n: int) -> np.ndarray:
        """The 1-way distribution of ``name`` the targets imply: the mean of their projections
        onto it (uniform when no target covers it), ``n`` records."""
        views = []
        for c, t in targets:
            if name in c:
                tab = t.reshape(domain.project(c).shape)
                axis = tuple(i for i, a in enumerate(c) if a != name)
                views.append(tab.sum(axis=axis) if axis else tab)
        size = domain[name].size
        return np.mean(views, axis=0) if views else np.full(size, n / size)

    @classmethod
    def _initialise(cls, domain: Domain, targets, n: int, rng: np.random.Generator) -> np.ndarray:
        codes = np.empty((n, len(domain)), dtype=np.int64, order="F")
        for j, attr in enumerate(domain.attributes):
            counts = _round_to_total(cls._one_way(domain, targets, attr.name, n), n)
            codes[:, j] = rng.permutation(np.repeat(np.arange(attr.size), counts))
        return codes

    def _tvs(self, codes, plans, targets, n) -> list[float]:
        return [
            0.5 * float(np.abs(np.bincount(self._cells(codes, p), minlength=t.size) - t).sum()) / n
            for p, (_, t) in zip(plans, targets)
        ]

    @staticmethod
    def _row(r, alpha, changed, n, tvs, clock: Stopwatch) -> dict[str, Any]:
        return {
            "round": r,
            "alpha": alpha,
            "changed": int(changed),
            "changed_fraction": changed / n,
            "mean_tv": float(np.mean(tvs)),
            "max_tv": float(np.max(tvs)),
            "seconds": clock.elapsed(),
        }

    @staticmethod
    def _set(codes: np.ndarray, rows: np.ndarray, cols: np.ndarray, vals, obeys) -> int:
        """``codes[rows, cols] = vals``; with a row test ``obeys``, the rows it then rejects get
        their old values back (lawful GUM). Returns how many rows changed."""
        old = codes[np.ix_(rows, cols)] if obeys is not None else None
        for j, c in enumerate(cols):
            codes[rows, c] = vals[j]
        if obeys is None:
            return int(rows.size)
        bad = ~obeys(codes[rows])
        if bad.any():
            codes[np.ix_(rows[bad], cols)] = old[bad]
        return int(rows.size - bad.sum())

    def _update(
        self, codes: np.ndarray, plan, target: np.ndarray, alpha: float, rng: np.random.Generator, obeys=None
    ) -> int:
        if self.update == "mcf":
            return self._update_mcf(codes, plan, target, alpha, rng, obeys)
        cols, shape, _ = plan
        idx = self._cells(codes, plan)
        syn = np.bincount(idx, minlength=target.size)
        gap = target - syn
        want = alpha * np.maximum(gap, 0.0)
        if self.growth_cap is not None:
            want = np.where(syn > 0, np.minimum(want, self.growth_cap * syn), want)
        add = _stochastic_round(want, rng)
        leave = np.minimum(_stochastic_round(alpha * np.maximum(-gap, 0.0), rng), syn)
        add, leave = _match_totals(add, leave, rng)
        k = int(add.sum())
        if k == 0:
            return 0
        movers = rng.permutation(_pick_leaving(idx, leave, rng)[0])  # k records leaving over-counted cells
        dest = rng.permutation(np.repeat(np.arange(add.size), add))  # k destination cells
        n_dup = int(round(self.beta * k))
        dup_dest = dest[:n_dup]
        change = np.ones(k, dtype=bool)
        if n_dup:
            # donors: a random record currently in each destination cell (if any)
            has = syn[dup_dest] > 0
            need = np.zeros(target.size, dtype=bool)
            need[dup_dest[has]] = True
            cand = np.flatnonzero(need[idx])
            cand = cand[_stable_argsort(idx[cand], target.size)]
            start = _first_positions(idx[cand], target.size)[dup_dest[has]]
            pick = start + np.floor(rng.random(start.size) * syn[dup_dest[has]]).astype(np.int64)
            donors = cand[pick]
            rows = movers[:n_dup][has]
            codes[rows, :] = codes[donors, :]
            change[np.flatnonzero(has)] = False
        ch = np.flatnonzero(change)
        if ch.size:
            # a copy of a record already in the cell obeys the rules as that record does;
            # a change of the marginal's attributes is undone where it breaks one
            kept = GUM._set(codes, movers[ch], cols, np.unravel_index(dest[ch], shape), obeys)
            return k - (ch.size - kept)
        return k

    def _update_mcf(self, codes, plan, target, alpha, rng, obeys=None) -> int:
        from ortools.graph.python import min_cost_flow  # heavy (~0.15 s to import), and only update="mcf" needs it

        cols, shape, _ = plan
        idx = self._cells(codes, plan)
        syn = np.bincount(idx, minlength=target.size)
        gap = target - syn
        add = _stochastic_round(alpha * np.maximum(gap, 0.0), rng)
        leave = np.minimum(_stochastic_round(alpha * np.maximum(-gap, 0.0), rng), syn)
        add, leave = _match_totals(add, leave, rng)
        diff = leave - add  # > 0: supply (over-counted), < 0: demand (under-counted)
        over = np.flatnonzero(diff > 0)
        under = np.flatnonzero(diff < 0)
        if over.size == 0:
            return 0
        if over.size * under.size > self.max_mcf_arcs:
            raise ValueError(
                f"min-cost-flow update over {tuple(shape)} needs {over.size * under.size} arcs "
                f"(> max_mcf_arcs={self.max_mcf_arcs}); use update='gum' for large marginals"
            )
        tails = np.repeat(np.arange(over.size), under.size)
        heads = np.tile(np.arange(under.size), over.size) + over.size
        ov = np.stack(np.unravel_index(over, shape), axis=1)
        un = np.stack(np.unravel_index(under, shape), axis=1)
        cost = (ov[:, None, :] != un[None, :, :]).sum(axis=2).ravel().astype(np.int64)
        cap = np.repeat(diff[over], under.size).astype(np.int64)
        smcf = min_cost_flow.SimpleMinCostFlow()
        smcf.add_arcs_with_capacity_and_unit_cost(tails, heads, cap, cost)
        supplies = np.concatenate([diff[over], diff[under]]).astype(np.int64)
        smcf.set_nodes_supplies(np.arange(supplies.size), supplies)
        status = smcf.solve()
        if status != smcf.OPTIMAL:  # pragma: no cover - balanced, uncapacitated in effect
            raise RuntimeError(f"min-cost flow failed with status {status}")
        flows = smcf.flows(np.arange(tails.size)).astype(np.int64)
        movers, _ = _pick_leaving(idx, leave, rng)  # grouped by increasing cell = arc tail order
        dest = np.repeat(under[heads - over.size], flows)
        return GUM._set(codes, movers, cols, np.unravel_index(dest, shape), obeys)


def gum(
    domain: Domain,
    marginals: Any,
    n: int,
    rng: np.random.Generator,
    *,
    initial: Dataset | None = None,
    **params: Any,
) -> GUMResult:
    """Functional form: ``GUM(**params).synthesize(domain, marginals, n, rng, initial=initial)``."""
    return GUM(**params).synthesize(domain, marginals, n, rng, initial=initial)

