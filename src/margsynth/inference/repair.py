"""Synthetic records made to obey rules (:mod:`margsynth.rules`): rejection, conditional redraw and repair.

Generators enforce rules first where their model can hold them exactly (Private-PGM's
structural zeros, :func:`~margsynth.inference.pgm.estimate` with ``rules``); what is left
— rules a model could not hold, or generators without such a model (GUM, PrivPGD, RAP,
GEM, Private-GSD) — is enforced on the records here, keeping their number:

* :func:`reject` — records that break a rule are drawn again, whole, from the generator's
  own distribution (a model's sampler; no mechanism uses it by default), until none breaks
  one or ``max_rounds`` rounds have passed. A record that survives is a draw from that distribution *conditioned on the
  rules*: rejection sampling (von Neumann, "Various techniques used in connection with
  random digits", NBS Applied Mathematics Series 12, 1951) is exact conditioning, so this
  is the right repair when the generator has such a distribution and it gives the allowed
  records most of its mass.
* :func:`redraw` — each offending record gets the attribute its broken rule determines (the
  rule's last attribute: a conditional's consequence, :func:`dependents`) drawn again from
  the generator's full conditional given the record's other attributes (a fitted graphical
  model's, :meth:`~margsynth.inference.pgm.GraphicalModel.log_conditional`), among the
  values every rule allows: one Gibbs step (Geman & Geman, IEEE TPAMI 6, 1984) of the
  distribution conditioned on the rules. The conditioning attributes keep the generator's
  values, so their marginals stay the generator's; rejection, exact as it is, samples the
  model conditioned on the rule, and where the model keeps two attributes nearly
  independent ("no schooling exactly under 3"), that keeps only records in both rare cells
  or in neither — the rare combination the rule describes nearly vanishes. Private-PGM's
  generator uses :func:`redraw` for the rules its model leaves out.
* :func:`repair` — the attributes ``A`` of the broken rules of each offending record are
  drawn again from their conditional distribution given the record's other attributes,
  under every rule that mentions them and independent per-attribute weights (e.g. the
  mechanism's noisy one-way marginals): ``P(x_A | x_rest) ∝ prod_{a in A} w_a(x_a) *
  prod_{rules r touching A} allowed_r(x_r)``. This is exact sampling from a small table
  (beyond :data:`TABLE_CELLS` cells, one attribute at a time from its marginal by variable
  elimination: Koller & Friedman, *Probabilistic Graphical Models*, 2009, §9.3), so one
  pass repairs every record: the rules that do not touch ``A`` held before and are
  unchanged, those that do are enforced by the draw. When a record's other attributes
  leave no allowed value for ``A`` (a further rule pins them), ``A`` is widened by the
  attributes of the rules that touch it and the draw repeated — at worst over a whole
  connected group of rules, which some assignment satisfies because the rule set was
  checked satisfiable (:meth:`~margsynth.rules.RuleSet.check`). Only the offending records
  change, and in them only the attributes the rules need; the others keep the generator's
  values. It is a simple form of the edit-and-imputation step of statistical data editing
  (Fellegi & Holt, "A systematic approach to automatic edit and imputation", JASA 71,
  1976, who change a minimal set of fields; here every field of the failed rules).
* :func:`rebalance` — after the redraw, each changed attribute's one-way counts are moved
  back to the generator's by changing that attribute in records the enforcement left alone,
  largest conditional gain first, only where the record stays lawful: the redraw shifts the
  determined attribute towards the values the rules allow, and a generator that spreads a
  rule's attributes independently within a component (RAP's and GEM's product rows) makes
  that shift systematic. RAP uses it (:meth:`~margsynth.mechanisms.queries.MarginalQueries.sample_obeying`).
* :func:`enforce` — :func:`redraw` when a conditional is given, else :func:`reject` when a
  distribution to draw from is given, :func:`repair` for whatever is left, :func:`rebalance`
  when asked, then the final check (``RuntimeError`` if a record still breaks a rule: a bug).

Every draw comes from the ``rng`` passed in, in a fixed order (same ``rng`` state, same
records). Enforcing public rules is post-processing: no privacy budget.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..dataset import Dataset, _smallest_int_dtype
from ..domain import Domain
from ..rules import RuleSet

__all__ = [
    "MAX_REJECTION_ROUNDS",
    "dependents",
    "enforce",
    "factors_log_conditional",
    "marginals_log_conditional",
    "one_way_weights",
    "rebalance",
    "redraw",
    "reject",
    "repair",
]

#: :func:`reject` stops after this many rounds (then :func:`repair` takes the rest).
MAX_REJECTION_ROUNDS = 20
#: Share of a weight vector's mass given to every value (so a value of weight 0 stays
#: possible when the rules leave nothing else).
WEIGHT_FLOOR = 1e-9
#: :func:`repair` builds the conditional table over the redrawn attributes when it has at
#: most this many cells; beyond, it draws them one at a time by variable elimination.
TABLE_CELLS = 1 << 20
#: :func:`redraw` redraws at most this many joint values of the attributes it changes at once.
REDRAW_CELLS = 1 << 14


def one_way_weights(data: Dataset, attrs: Any) -> dict[str, np.ndarray]:
    """The one-way marginals (counts) of ``data`` over ``attrs``: :func:`repair`'s default weights."""
    return {a: data.marginal((a,)).astype(np.float64) for a in attrs}


def _normalised(w: np.ndarray, size: int, attr: str) -> np.ndarray:
    w = np.asarray(w, dtype=np.float64).ravel()
    if w.shape != (size,):
        raise ValueError(f"weights of {attr!r} have {w.size} entries, the attribute has {size} values")
    w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
    s = w.sum()
    w = w / s if s > 0 else np.full(size, 1.0 / size)
    w = w + WEIGHT_FLOOR / size
    return w / w.sum()


def _no_changes(rules: RuleSet) -> dict[str, Any]:
    return {"broken": {n: 0 for n in rules.names}, "repaired": 0, "widened": 0, "resampled": {}}


def repair(
    data: Dataset,
    rules: RuleSet,
    rng: np.random.Generator,
    *,
    weights: Mapping[str, np.ndarray] | None = None,
) -> tuple[Dataset, dict[str, Any]]:
    """Every record of ``data`` that breaks a rule gets the attributes of its broken rules
    drawn again from their conditional given its other attributes (module docstring);
    returns the records (same number, same order) and a report: ``broken`` (per rule, the
    records that broke it), ``repaired`` (records changed), ``widened`` (records whose
    redrawn attributes had to grow) and ``resampled`` (per attribute, the records that
    had it redrawn). ``weights``: per attribute a vector over its values (default: the
    one-way marginals of ``data`` itself), normalised, every value kept possible."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be an explicit numpy.random.Generator, got {type(rng).__name__}")
    dom = data.domain
    rules.validate(dom)
    broken = rules.broken(data)
    bad = np.flatnonzero(broken.any(axis=1))
    report = _no_changes(rules)
    report["broken"] = {n: int(c) for n, c in zip(rules.names, broken.sum(axis=0))}
    if not bad.size:
        return data, report
    attrs = rules.attributes
    raw = one_way_weights(data, attrs) if weights is None else weights
    missing = [a for a in attrs if a not in raw]
    if missing:
        raise ValueError(f"weights: no vector for the rule attribute(s) {missing}")
    w = {a: _normalised(raw[a], dom[a].size, a) for a in attrs}
    codes = np.array(data.codes, dtype=np.int64)
    resampled: dict[str, int] = {}
    # the work list: (attributes to redraw, records); first, records grouped by the pattern
    # of the rules they break (patterns in sorted order: deterministic)
    patterns, inverse = np.unique(broken[bad], axis=0, return_inverse=True)
    inverse = inverse.ravel()
    queue: list[tuple[tuple[str, ...], np.ndarray]] = []
    for k, pat in enumerate(patterns):
        redraw = {a for r, hit in zip(rules, pat) if hit for a in r.attrs}
        queue.append((tuple(a for a in dom.names if a in redraw), bad[inverse == k]))
    widened = 0
    while queue:
        redraw, rows = queue.pop(0)
        touching = [r for r in rules if set(r.attrs) & set(redraw)]
        context = tuple(a for a in dom.names if a not in redraw and any(a in r.attrs for r in touching))
        if context:
            keys, group = np.unique(codes[np.ix_(rows, [dom.index(a) for a in context])], axis=0, return_inverse=True)
            group = group.ravel()
        else:
            keys, group = np.zeros((1, 0), dtype=np.int64), np.zeros(rows.size, dtype=np.int64)
        wider = tuple(a for a in dom.names if a in redraw or a in context)
        for g, key in enumerate(keys):
            members = rows[group == g]
            fixed = dict(zip(context, (int(v) for v in key)))
            factors = _conditional_factors(redraw, fixed, touching, w)
            drawn = _draw(redraw, factors, dom, members.size, rng)
            if drawn is None:  # no allowed value of ``redraw`` given ``fixed``: widen
                if not context:
                    raise RuntimeError(f"rules {[r.name for r in touching]} cannot hold together; they were not checked")
                widened += members.size
                queue.append((wider, members))
                continue
            for j, a in enumerate(redraw):
                codes[members, dom.index(a)] = drawn[:, j]
                resampled[a] = resampled.get(a, 0) + int(members.size)
    report.update(repaired=int(bad.size), widened=widened, resampled=dict(sorted(resampled.items())))
    out = codes.astype(_smallest_int_dtype(max(dom.shape, default=1)))
    return Dataset._trusted(out, dom, data.weights), report


def _conditional_factors(
    redraw: tuple[str, ...], fixed: dict[str, int], touching: list, w: dict[str, np.ndarray]
) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """The factors of ``P(x_redraw | fixed)``: one weight vector per redrawn attribute and
    each touching rule's table sliced at the fixed values (non-negative floats)."""
    factors = [((a,), w[a]) for a in redraw]
    merged: dict[tuple[str, ...], np.ndarray] = {}  # rules over one attribute set: one table (axes in ``redraw`` order)
    for r in touching:
        index = tuple(fixed[a] if a in fixed else slice(None) for a in r.attrs)
        free = tuple(a for a in r.attrs if a not in fixed)
        key = tuple(a for a in redraw if a in free)
        table = r.allowed[index].transpose([free.index(a) for a in key])
        merged[key] = table & merged[key] if key in merged else table
    factors.extend((k, t.astype(np.float64)) for k, t in merged.items())
    return factors


def _einsum(factors: list[tuple[tuple[str, ...], np.ndarray]], out: tuple[str, ...]) -> np.ndarray:
    """Sum over every other attribute of the product of ``factors``, axes ``out``."""
    names = list(dict.fromkeys(a for attrs, _ in factors for a in attrs))
    if len(names) > len(string.ascii_letters):
        raise ValueError(f"repair: {len(names)} attributes redrawn at once (at most 52)")
    letter = {a: string.ascii_letters[i] for i, a in enumerate(names)}
    sub = ",".join("".join(letter[a] for a in attrs) for attrs, _ in factors) + "->" + "".join(letter[a] for a in out)
    return np.einsum(sub, *[t for _, t in factors], optimize=len(factors) > 2)


def _product(factors: list[tuple[tuple[str, ...], np.ndarray]], out: tuple[str, ...], shape: tuple[int, ...]) -> np.ndarray:
    """The product of ``factors`` over every attribute of ``out`` (each factor's attributes
    among them, in ``out``'s order): a table of ``shape``, by broadcasting (nothing is summed)."""
    table = np.ones(shape)
    for attrs, t in factors:
        order = sorted(range(len(attrs)), key=lambda i: out.index(attrs[i]))
        table = table * np.transpose(t, order).reshape([n if a in attrs else 1 for a, n in zip(out, shape)])
    return table


def _pick(p: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` draws of an index with probabilities proportional to ``p`` (>= 0, positive sum),
    by inverse CDF; a drawn index always has positive weight."""
    cdf = np.cumsum(p)
    idx = np.searchsorted(cdf, rng.random(k) * cdf[-1], side="right")
    last = int(np.flatnonzero(p > 0)[-1])
    return np.minimum(idx, last)


def _draw(
    redraw: tuple[str, ...], factors: list, dom, k: int, rng: np.random.Generator
) -> np.ndarray | None:
    """``k`` draws of the attributes ``redraw`` from the product of ``factors`` (an array of
    ``k`` rows, one column per attribute), or ``None`` when the product is 0 everywhere."""
    shape = tuple(dom[a].size for a in redraw)
    if math.prod(shape) <= TABLE_CELLS:
        table = _product(factors, redraw, shape).ravel()
        if not table.sum() > 0:
            return None
        return np.stack(np.unravel_index(_pick(table, k, rng), shape), axis=1)
    # large: one attribute at a time (its marginal by variable elimination), record by record
    if not _einsum(factors, ()).sum() > 0:
        return None
    out = np.empty((k, len(redraw)), dtype=np.int64)
    for i in range(k):
        fs = list(factors)
        for j, a in enumerate(redraw):
            marg = _einsum(fs, (a,))
            v = int(_pick(marg, 1, rng)[0])
            out[i, j] = v
            fs = [(tuple(b for b in attrs if b != a), t[tuple(v if b == a else slice(None) for b in attrs)])
                  for attrs, t in fs]  # fmt: skip
    return out


def factors_log_conditional(
    domain: Domain, factors: Iterable[tuple[Sequence[str], np.ndarray]], attrs: Sequence[str], codes: np.ndarray
) -> np.ndarray:
    """The conditional a :func:`redraw` takes, from log-factors: per record (``codes``: one
    column per attribute of ``domain``, ``k`` rows) the sum over the factors ``(clique,
    log table)`` that meet ``attrs`` of their value at the record's values of the clique's
    other attributes — ``log P(x_attrs | x_rest)`` up to a constant per record for ``P ∝
    exp(sum of the factors)``, since the factors that miss ``attrs`` do not depend on them.
    Shape ``(k, *sizes of attrs)``, axes in the order given."""
    attrs = tuple(attrs)
    out = np.zeros((codes.shape[0], *(domain[a].size for a in attrs)))
    for clique, table in factors:
        clique = tuple(clique)
        inside = [a for a in attrs if a in clique]
        if not inside:
            continue
        rest = [a for a in clique if a not in inside]
        t = table.transpose([clique.index(a) for a in (*rest, *inside)])
        sliced = t[tuple(codes[:, domain.index(a)].astype(np.intp) for a in rest)] if rest else t[None]
        out += sliced.reshape((sliced.shape[0], *(domain[a].size if a in clique else 1 for a in attrs)))
    return out


def marginals_log_conditional(domain: Domain, targets: Iterable[tuple[Sequence[str], np.ndarray]]):
    """``conditional(attrs, codes)`` for :func:`~margsynth.inference.repair.redraw`: per record
    (``codes``: one column per attribute of ``domain``) the log weight of each joint value of
    ``attrs`` given the record's other attributes, under the marginals ``targets`` (``(clique,
    table)``, each table counting the same records). With ``T_a`` the targets that hold an
    attribute ``a`` of ``attrs``, the weight is ``prod_{C in T} t_C(x_C) / prod_a t_a(x_a)^(|T_a| - 1)``
    over the targets ``T`` that meet ``attrs`` (``t_a``: the one-way marginal they imply, their
    mean): the full conditional of the decomposable model whose cliques are those targets
    and meet only in ``a`` (Lauritzen, *Graphical Models*, 1996, §4.4: ``p = prod p_C /
    prod p_S``), the closest the targets alone say to a graphical model's conditional. A cell
    a target holds at zero (or below: noisy counts) gets a weight ``1e-12`` of the table's
    mass, not zero: the targets are noisy, and the rules themselves mark the impossible values.
    Each table's axes follow its clique's order."""
    items = [
        (tuple(c), np.maximum(np.asarray(t, dtype=np.float64), 0.0).reshape(tuple(domain[a].size for a in c)))
        for c, t in targets
    ]
    floor = 1e-12
    logs = [(c, np.log(np.maximum(t / max(float(t.sum()), 1e-300), floor))) for c, t in items]
    one_way: dict[str, np.ndarray] = {}
    holders: dict[str, int] = {}
    for c, t in items:
        for i, a in enumerate(c):
            m = t.sum(axis=tuple(j for j in range(len(c)) if j != i))
            one_way.setdefault(a, np.zeros(domain[a].size))
            one_way[a] += m / max(float(m.sum()), 1e-300)
            holders[a] = holders.get(a, 0) + 1
    log_one = {a: np.log(np.maximum(v / holders[a], floor)) for a, v in one_way.items()}

    def conditional(attrs: tuple[str, ...], codes: np.ndarray) -> np.ndarray:
        attrs = tuple(attrs)
        sizes = tuple(domain[a].size for a in attrs)
        out = factors_log_conditional(domain, logs, attrs, codes)
        for k, a in enumerate(attrs):
            extra = holders.get(a, 0) - 1
            if extra > 0:
                shape = [1] * (len(attrs) + 1)
                shape[k + 1] = sizes[k]
                out -= extra * log_one[a].reshape(shape)
        return out

    return conditional


def dependents(rules: RuleSet) -> dict[str, str]:
    """Per rule, the attribute :func:`redraw` changes when a record breaks it: the rule's
    last attribute — a conditional's (last) consequence, a functional dependency's target,
    the right-hand side of an order, the last of a forbidden combination; the tabular
    schema's rules list their premise's columns first (:mod:`margsynth.tabular.constraints`).
    "If age under 3 then no schooling" redraws the schooling, so the age keeps the
    generator's value and every other rule on age keeps holding."""
    return {r.name: r.attrs[-1] for r in rules}


def redraw(
    data: Dataset,
    rules: RuleSet,
    rng: np.random.Generator,
    conditional: Callable[[tuple[str, ...], np.ndarray], np.ndarray],
    *,
    broken: np.ndarray | None = None,
    whole: bool = False,
) -> tuple[Dataset, dict[str, Any]]:
    """Every record that breaks a rule gets the dependent attributes of its broken rules
    (:func:`dependents`; with ``whole``, all their attributes) drawn again from
    ``conditional(attrs, codes)`` — per record a log
    weight over the attributes' joint values given the record's other attributes (``-inf``:
    impossible, like a forbidden value), e.g. a
    graphical model's full conditional
    (:meth:`~margsynth.inference.pgm.GraphicalModel.log_conditional`) — restricted to the
    values every rule on them allows given the rest of the record: one Gibbs step
    (Geman & Geman, "Stochastic relaxation, Gibbs distributions, and the Bayesian
    restoration of images", IEEE TPAMI 6, 1984) of the distribution conditioned on the
    rules, started at the record. The other attributes keep their values, so their
    marginals are the generator's (rejection would thin out every value the rule makes
    rare in combination). Where the rules leave a record no allowed value, the redrawn set
    grows by the dependents of the rules that touch it, else by all their attributes, up to
    :data:`REDRAW_CELLS` joint values; records still left are returned for :func:`repair`. Attributes are redrawn one
    after the other (domain order), each under every rule on it, so the rules on an
    attribute already redrawn keep holding. ``whole``: every attribute of the broken rules is
    redrawn that way, in domain order (a sweep of Gibbs steps), so the premise may move as
    well as the consequence; a record the sweep cannot fix is left for :func:`repair`. A product
    distribution that spreads age and schooling independently (RAP's and GEM's rows) makes
    children with degrees, and whether such a record is a child or an adult is what its other
    attributes (income, marital status) say; the dependent alone always lowers the schooling.
    Returns the records and a
    report: ``redrawn`` (records changed), ``left`` (records still breaking a rule) and
    ``resampled`` (per attribute, the records that had it redrawn). ``broken``:
    ``rules.broken(data)`` when the caller has it."""
    dom = data.domain
    broken = rules.broken(data) if broken is None else broken
    bad = np.flatnonzero(broken.any(axis=1))
    if not bad.size:
        return data, {"redrawn": 0, "left": 0, "resampled": {}}
    dep = dependents(rules)
    codes = np.array(data.codes, dtype=np.int64)
    chosen = np.zeros((len(data), len(dom)), dtype=bool)  # per record, the attributes to redraw
    for j, r in enumerate(rules):
        for a in r.attrs if whole else (dep[r.name],):
            chosen[broken[:, j], dom.index(a)] = True
    resampled: dict[str, int] = {}
    failed = np.zeros(len(data), dtype=bool)
    for a in dom.names:  # one attribute at a time, each draw under every rule on it
        rows = np.flatnonzero(chosen[:, dom.index(a)] & ~failed)
        attrs: tuple[str, ...] = (a,)
        while rows.size:
            done = _redraw_set(codes, rows, attrs, rules, dom, rng, conditional)
            for b in attrs:
                resampled[b] = resampled.get(b, 0) + int(done.sum())
            rows = rows[~done]
            touching = [r for r in rules if set(r.attrs) & set(attrs)]
            wider = [tuple(b for b in dom.names if b in attrs or any(dep[r.name] == b for r in touching)),
                     tuple(b for b in dom.names if b in attrs or any(b in r.attrs for r in touching))]  # fmt: skip
            wider = [w for w in wider if w != attrs and math.prod(dom[b].size for b in w) <= REDRAW_CELLS]
            if not wider:
                break
            attrs = wider[0]
        failed[rows] = True
    still = int(failed.sum())
    out = Dataset._trusted(codes.astype(_smallest_int_dtype(max(dom.shape, default=1))), dom, data.weights)
    return out, {"redrawn": int(bad.size) - still, "left": still, "resampled": dict(sorted(resampled.items()))}


def _redraw_set(codes, rows, attrs, rules, dom, rng, conditional) -> np.ndarray:
    """Redraw ``attrs`` of the records ``rows`` of ``codes`` in place (:func:`redraw`);
    returns which rows got an allowed value (the others are unchanged)."""
    shape = tuple(dom[a].size for a in attrs)
    cells = math.prod(shape)
    ok = np.zeros(rows.size, dtype=bool)
    if cells > REDRAW_CELLS:
        return ok
    touching = [r for r in rules if set(r.attrs) & set(attrs)]
    chunk = max(1, (1 << 22) // cells)
    for lo in range(0, rows.size, chunk):
        sel = rows[lo : lo + chunk]
        rec = codes[sel]
        allowed = np.ones((sel.size, *shape), dtype=bool)
        for r in touching:
            inside = [a for a in attrs if a in r.attrs]
            rest = [a for a in r.attrs if a not in inside]
            t = r.allowed.transpose([r.attrs.index(a) for a in (*rest, *inside)])
            cut = t[tuple(rec[:, dom.index(a)] for a in rest)] if rest else t[None]
            allowed &= cut.reshape((cut.shape[0], *(dom[a].size if a in r.attrs else 1 for a in attrs)))
        logw = np.asarray(conditional(attrs, rec), dtype=np.float64).reshape(sel.size, cells)
        allowed = allowed.reshape(sel.size, cells) & ~np.isneginf(logw)  # -inf: impossible, as a rule says
        feasible = allowed.any(axis=1)
        logw = np.where(allowed, logw, -np.inf)
        top = np.where(feasible, logw.max(axis=1), 0.0)[:, None]
        w = np.exp(logw - top)
        p = np.where(allowed, w / w.sum(axis=1, keepdims=True).clip(min=1e-300) + WEIGHT_FLOOR / cells, 0.0)
        cdf = np.cumsum(p, axis=1)
        u = rng.random(sel.size) * cdf[:, -1]
        pick = np.minimum((cdf <= u[:, None]).sum(axis=1), cells - 1)
        values = np.unravel_index(pick, shape)
        for a, v in zip(attrs, values):
            codes[sel[feasible], dom.index(a)] = v[feasible]
        ok[lo : lo + sel.size] = feasible
    return ok


def rebalance(
    generated: Dataset,
    data: Dataset,
    rules: RuleSet,
    conditional: Callable[[tuple[str, ...], np.ndarray], np.ndarray],
) -> tuple[Dataset, dict[str, int]]:
    """``data`` (``generated`` after :func:`redraw` and :func:`repair`) with each changed
    attribute's one-way counts moved back towards ``generated``'s, by changing that attribute
    in records the enforcement left alone. The redraw gives an offending record a value its
    rules allow, so the values the rules forbid in combination lose records and the allowed
    ones gain them; where the generator spreads a rule's attributes independently (a product
    row of RAP or GEM gives its children the adults' schooling), that shift is systematic and
    every marginal holding the attribute carries it. Per attribute ``a`` (domain order), with
    ``s[v]`` the records ``data`` has with ``a = v`` beyond ``generated``'s count (``s[v] >
    0``: a surplus, ``< 0``: a deficit): each untouched record ``i`` with a surplus value
    ``v`` may move to a deficit value ``u`` that keeps it within every rule, at the gain
    ``log conditional(a | i's other attributes)[u] - [...][v]``; the moves are taken greedily,
    largest gain first (ties: record order, then value order), each record at most once over
    all attributes, while both its value's surplus and the target's deficit last — a greedy
    solution of the transportation problem between surplus and deficit values (Hitchcock,
    "The distribution of a product from several sources to numerous localities", J. Math.
    Phys. 20, 1941). Like GUM's moves (Zhang et al., "PrivSyn: Differentially Private Data
    Synthesis", USENIX Security 2021, arXiv:2012.15128, §5.2) a move changes one attribute of
    a record to bring a marginal back; here the target is the generator's own one-way count
    and only lawful records result. Deterministic (no rng). Returns the records and, per
    attribute, the records moved."""
    dom = data.domain
    before = np.asarray(generated.codes, dtype=np.int64)
    codes = np.array(data.codes, dtype=np.int64)
    if before.shape != codes.shape or generated.domain != dom:
        raise ValueError(f"generated has {before.shape} records over {generated.domain!r}, data {codes.shape} over {dom!r}")
    fixed = (before != codes).any(axis=1)  # the records the enforcement changed, and those moved here
    obeys = rules.row_check(dom)
    moved: dict[str, int] = {}
    for j, a in enumerate(dom.names):
        k = dom[a].size
        surplus = np.bincount(codes[:, j], minlength=k) - np.bincount(before[:, j], minlength=k)
        deficit = np.flatnonzero(surplus < 0)
        cand = np.flatnonzero(~fixed & (surplus[codes[:, j]] > 0))
        if not deficit.size or not cand.size:
            continue
        rec = codes[cand]
        logc = np.asarray(conditional((a,), rec), dtype=np.float64).reshape(cand.size, k)
        here = logc[np.arange(cand.size), rec[:, j]]
        gain = np.empty((cand.size, deficit.size))
        for t, u in enumerate(deficit):
            trial = rec.copy()
            trial[:, j] = u
            with np.errstate(invalid="ignore"):
                g = logc[:, u] - here
            gain[:, t] = np.where(obeys(trial) & np.isfinite(g), g, -np.inf)
        order = np.argsort(-gain, axis=None, kind="stable")
        order = order[np.isfinite(gain.ravel()[order])]
        count = 0
        for flat in order.tolist():
            i, t = divmod(flat, deficit.size)
            v, u = rec[i, j], deficit[t]
            if fixed[cand[i]] or surplus[v] <= 0 or surplus[u] >= 0:
                continue
            codes[cand[i], j] = u
            fixed[cand[i]] = True
            surplus[v] -= 1
            surplus[u] += 1
            count += 1
            if not (surplus[deficit] < 0).any():
                break
        if count:
            moved[a] = count
    out = Dataset._trusted(codes.astype(_smallest_int_dtype(max(dom.shape, default=1))), dom, data.weights)
    return out, moved


def reject(
    data: Dataset,
    rules: RuleSet,
    draw: Callable[[int], Dataset],
    *,
    max_rounds: int = MAX_REJECTION_ROUNDS,
) -> tuple[Dataset, dict[str, Any]]:
    """Records of ``data`` that break a rule are replaced by fresh i.i.d. draws ``draw(k)``
    (``k`` records over ``data``'s domain from the generator's distribution, e.g. a model's
    :meth:`~margsynth.inference.pgm.GraphicalModel.synthetic_data` with ``method="sample"``),
    round after round, until none breaks one or after ``max_rounds`` rounds (module
    docstring). Returns the records and a report: ``rejected`` (draws thrown away),
    ``rounds`` and ``left`` (records still breaking a rule)."""
    dom = data.domain
    bad = np.flatnonzero(rules.broken(data).any(axis=1))
    codes = np.array(data.codes)
    rejected = rounds = 0
    while bad.size and rounds < max_rounds:
        rounds += 1
        rejected += int(bad.size)
        fresh = draw(int(bad.size))
        if fresh.domain != dom or len(fresh) != bad.size:
            raise ValueError(f"draw({bad.size}) returned {len(fresh)} records over {fresh.domain!r}, expected {dom!r}")
        codes[bad] = fresh.codes
        bad = bad[rules.broken(fresh).any(axis=1)]
    out = Dataset._trusted(codes, dom, data.weights) if rounds else data
    return out, {"rejected": rejected, "rounds": rounds, "left": int(bad.size)}


def enforce(
    data: Dataset,
    rules: RuleSet | None,
    rng: np.random.Generator,
    *,
    draw: Callable[[int], Dataset] | None = None,
    weights: Mapping[str, np.ndarray] | Callable[[], Mapping[str, np.ndarray]] | None = None,
    conditional: Callable[[tuple[str, ...], np.ndarray], np.ndarray] | None = None,
    keep_counts: bool = False,
    whole: bool = False,
) -> tuple[Dataset, dict[str, Any] | None]:
    """``data`` made to obey ``rules``: :func:`redraw` with ``conditional`` (when given; ``whole``:
    every attribute of the broken rules, not only their dependents), or
    else :func:`reject` with ``draw`` (when given), then :func:`repair` (``weights``: its
    per-attribute weights, or a function returning them, called only when needed) for the
    records still breaking a rule, then, with ``keep_counts`` (and ``conditional``),
    :func:`rebalance` back to ``data``'s one-way counts, then the final check —
    ``RuntimeError`` naming the rule if a record still breaks one. Returns the records
    (same number) and a report (``None`` without rules): ``broken`` (per rule, records
    breaking it as generated), ``redrawn``, ``rejected``, ``rejection_rounds``,
    ``repaired``, ``widened``, ``resampled`` (per attribute, by :func:`redraw` and
    :func:`repair` together), ``rebalanced`` (with ``keep_counts``: per attribute, the
    records :func:`rebalance` moved) and ``violations`` (per rule, 0)."""
    if rules is None or not len(rules):
        return data, None
    matrix = rules.broken(data)
    broken = {n: int(c) for n, c in zip(rules.names, matrix.sum(axis=0))}
    generated, moved = data, {}
    rej: dict[str, Any] = {"rejected": 0, "rounds": 0}
    red: dict[str, Any] = {"redrawn": 0, "left": 0, "resampled": {}}
    if matrix.any():
        if conditional is not None:
            data, red = redraw(data, rules, rng, conditional, broken=matrix, whole=whole)
        elif draw is not None:
            data, rej = reject(data, rules, draw)
        rep = _no_changes(rules)
        # records still breaking a rule: those redraw or rejection left (neither: all of them)
        still = red["left"] if conditional is not None else rej["left"] if draw is not None else 1
        if still:
            data, rep = repair(data, rules, rng, weights=weights() if callable(weights) else weights)
        if keep_counts and conditional is not None:
            data, moved = rebalance(generated, data, rules, conditional)
        violations = rules.violations(data)
    else:
        rep, violations = _no_changes(rules), dict(broken)
    left = {n: c for n, c in violations.items() if c}
    if left:
        raise RuntimeError(f"records still break rules after the repair: {left}")
    resampled = dict(red["resampled"])
    for a, c in rep["resampled"].items():
        resampled[a] = resampled.get(a, 0) + c
    return data, {
        "broken": broken,
        "redrawn": red["redrawn"],
        "rejected": rej["rejected"],
        "rejection_rounds": rej["rounds"],
        "repaired": rep["repaired"],
        "widened": rep["widened"],
        "resampled": dict(sorted(resampled.items())),
        **({"rebalanced": moved} if keep_counts else {}),
        "violations": violations,
    }
