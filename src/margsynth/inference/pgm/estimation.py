"""Private-PGM estimation: fit ``P_theta`` to noisy marginal measurements.

:func:`estimate` solves Eq. (4.2) of McKenna, Miklau & Sheldon ("Winning the NIST Contest: A
scalable and general approach to differentially private synthetic data", JPC 2021,
arXiv:2108.04978, §4.2) — by Fact 1 the same optimum as Eq. (4.1) —

    minimise_theta  L(mu) = sum_m loss((Q_m N mu_m(theta) - y_m) / sigma_m),

``mu_m`` the model's probability marginal over measurement ``m``'s clique, ``N`` the
total, ``loss(r) = 0.5 ||r||_2^2`` (default) or ``||r||_1``, by the entropic mirror descent
of McKenna, Sheldon & Miklau ("Graphical-model based estimation and inference for
differential privacy", ICML 2019, arXiv:1901.09136, Algorithm 1), accelerated by default,
or exactly by an interior point followed by the descent on the optimal face. It is the
driver of four modules, one idea each:

* :mod:`.objective` — the loss compiled onto the junction tree's flat marginal vector;
* :mod:`.descent` — the mirror-descent steps (plain, accelerated, subgradient), the Armijo
  line search and the loop with its stopping rules;
* :mod:`.certificate` — the certified gap ``G >= L(mu) - min_M L`` every fit returns
  (``model.stats["gap"]``; :func:`estimation_summary` gives ``{"loss", "gap",
  "iterations", "method"}``, which every PGM-based mechanism reports as
  ``extras["estimation"]`` and in its sidecar);
* :mod:`.exact` — the interior point of ``method="interior_point"``; this module starts
  the descent on its optimal face (:func:`_face_theta`).

Rules (:mod:`margsynth.rules`, ``estimate(..., rules=...)``) become structural zeros: a rule
whose attributes lie in one clique of the junction tree forbids its cells there
(log-potential ``-inf``: probability exactly 0, never sampled), and the fit is Eq. (4.2)
over ``M_Z``, the distributions with no mass on a forbidden cell. The descent moves finite
log-potentials and adds the zeros before every propagation (:class:`~.objective._Evaluator`),
so its iterates stay in the exponential family of the measured marginals restricted to the
allowed cells and its limit is the maximum-entropy optimum over them; the certificate
minimises over allowed assignments only (:mod:`.certificate`); the interior point fixes the
forbidden cells at 0 (:mod:`.exact`). The attribute set of a rule that lies in no clique is
added to the structure as one more clique (like ``extra_cliques``), cheapest first, while
the junction tree keeps at most ``RULE_GROWTH`` times the cells it has without rules plus
``RULE_SLACK_CELLS`` (:func:`_place_rules`); the others are left to the generator, which
redraws the attribute each broken rule determines from the model's conditional
(``model.stats["rules"]`` says which is which; :func:`margsynth.inference.repair.redraw`).

Every fit runs with BLAS limited to one thread (:func:`~.blas.single_threaded_blas`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...domain import Domain
from ...rules import Rule, RuleSet, as_rules
from ...timing import Stopwatch
from . import kernels
from .blas import single_threaded_blas
from .descent import _STEPS, _descend, _Iterate, _subgradient_step
from .exact import ExactSolution
from .exact import solve as exact_solve
from .factor import align
from .inference import BeliefPropagation, marginal
from .junction_tree import JunctionTree, ModelTooLargeError, build_junction_tree
from .measurement import Measurement, compile_measurements, estimate_total
from .model import GraphicalModel
from .objective import Objective, _Evaluator

__all__ = ["METHODS", "estimate", "estimation_summary", "evaluate_loss"]

METHODS = ("accelerated", "mirror_descent", "interior_point")
#: ``method="interior_point"``: the solver's relative gap and feasibility tolerances; then the
#: descent on the optimal face stops at a certified gap of ``FACE_GAP_TOL * loss`` (unless
#: ``gap_tol`` says otherwise), once its loss stalls (``FACE_RTOL``: at the rounding of the
#: arithmetic, where the certificate cannot close further), or after ``FACE_MAX_ITERS``
INTERIOR_POINT_TOL = 1e-9
FACE_GAP_TOL = 1e-6
FACE_RTOL = 1e-12
FACE_MAX_ITERS = 20_000
#: A rule whose attributes lie in no clique joins the model's structure (cheapest first) when
#: the junction tree then has at most ``RULE_GROWTH * cells + RULE_SLACK_CELLS`` cells
#: (``cells``: the tree's without rules); else it is left to the generator (:func:`_place_rules`).
#: The fit's time grows with the cells; 1.65 keeps MST's run with the NIST excerpts' rules
#: within 1.5x of the run without them and lets the group-quarters rules into its model on
#: ``national2018``, where leaving them to the generator cost the score (docs/notes/rules.md);
#: the slack lets small models hold their rules
RULE_GROWTH = 1.65
RULE_SLACK_CELLS = 64
#: ``log`` of the potential a warm start gives a cell its model held at zero (a finite
#: start for the descent; the zeros of this fit's rules are added on top)
_LOG_TINY = float(np.log(1e-300))


def estimate(
    domain: Domain,
    measurements: Sequence[Measurement],
    *,
    iters: int = 1000,
    total: float | None = None,
    loss: str = "l2",
    method: str = "accelerated",
    warm_start: GraphicalModel | None = None,
    callback: Callable[[int, float, float], bool | None] | None = None,
    progress: bool = False,
    memory_limit_mb: float | None = None,
    extra_cliques: Sequence[Sequence[str]] = (),
    step_size: float | None = None,
    gap_tol: float | None = None,
    rtol: float | None = None,
    rules: RuleSet | Sequence[Rule] | None = None,
    rule_slack_cells: int | None = None,
) -> GraphicalModel:
    """Fit a graphical model to noisy measurements (Private-PGM, Eq. 4.2).

    Parameters
    ----------
    domain:
        The data domain; every attribute gets a (possibly unmeasured) variable.
    measurements:
        :class:`~.measurement.Measurement` objects (validated here; errors
        name the measurement).
    iters:
        Iterations (each: one accepted mirror step; for ``"interior_point"``,
        the cap on the interior point's iterations).
    total:
        Number of records ``N``. ``None``: estimated from the measurements by
        :func:`~.measurement.estimate_total` (inverse-variance weighted); if
        none determines it, the warm-start model's total.
    loss:
        ``"l2"`` (``0.5 sum ||(Q mu - y)/sigma||^2``, the Gaussian
        log-likelihood of Eq. 4.1) or ``"l1"`` (``sum ||(Q mu - y)/sigma||_1``).
    method:
        ``"accelerated"`` (default): mirror descent with Nesterov momentum
        on the log-potentials and adaptive (function-value) restart; same
        step-size rule, reaches the optimum in ~10x fewer iterations on
        MST-like problems, ~2 belief propagations per iteration.
        ``"mirror_descent"``: the plain algorithm of McKenna et al. (2019,
        Alg. 1), ~1.3 belief propagations per iteration. Both are monotone.
        (The L1 loss always uses the subgradient schedule.)
        ``"interior_point"`` (L2 loss only): the exact optimum, certified. An
        interior-point solver (:mod:`.exact`, Clarabel; at most ``iters``
        iterations, ~20-50 are typical; a ``RuntimeError`` if it stops short)
        solves the problem as a quadratic program over the junction tree's
        local polytope; the cells it leaves empty are fixed at zero
        (``theta = log 1e-300``) and the accelerated descent, started from the
        uniform model on the remaining cells, runs until the certified gap is
        at most ``gap_tol * loss`` (default ``FACE_GAP_TOL = 1e-6``), until its
        loss stalls at the rounding of the arithmetic (``FACE_RTOL``), or for
        ``FACE_MAX_ITERS`` iterations. Its limit is the maximum-entropy optimum,
        the model the descent alone converges to (:func:`_face_theta`). On
        AIM's final models of adult the loss ends within ~1e-9 of the
        interior point's and the gap at 3-7e-4 of it (certified, where the
        500 descent iterations of AIM's default stop 7-9% above the optimum,
        uncertified), at a cost that grows quickly with the cells (~7 s for
        12,000 cells, ~45 s for 65,000; docs/notes/aim.md). ``warm_start``
        then only supplies a fallback total; ``step_size`` and ``rtol``
        belong to the descent methods (``ValueError``). ``stats`` add
        ``solver_iterations``, ``solver_seconds``, ``solver_loss`` (the
        interior point's optimum) and ``face_cells`` (the cells of the optimal
        face's support); ``iterations`` are the descent's.
    warm_start:
        A previous model (e.g. AIM's last round): its potentials start the
        descent, and its last step size seeds the line search.
    callback:
        ``callback(iteration, loss, step_size)`` after every iteration;
        returning ``True`` stops early.
    progress:
        Show a tqdm progress bar.
    memory_limit_mb:
        Refuse (``ModelTooLargeError``, a ``ValueError``) if the junction tree
        needs more than this many MiB (see :func:`~.junction_tree.junction_tree_size`).
    extra_cliques:
        Attribute sets to include in the model's structure without measuring them.
    step_size:
        Initial step; default ``1/Lip`` (see :mod:`.descent`).
    gap_tol:
        Stopping rule on the optimality certificate: stop as soon as the
        certified gap (below) is at most ``gap_tol * loss`` (checked before the
        first iteration, then at multiples of ``GAP_EVERY`` iterations spaced by
        ``GAP_SPACING`` of the iterations so far). ``None`` (default): run all
        ``iters``.
    rtol:
        Stopping rule on progress (smooth loss only): stop as soon as the loss fell
        by at most ``rtol * loss`` over the last ``GAP_EVERY`` iterations (the
        descent is monotone, so this is a stall, not a detour). Unlike ``gap_tol``
        it certifies nothing; the returned ``gap`` still does. ``None`` (default):
        no such rule.
    rules:
        Rules the data obeys (:class:`~margsynth.rules.RuleSet`; checked against
        ``domain``, satisfiability included, before anything is fitted). Those whose
        attributes lie in one clique — after adding rule cliques within ``RULE_GROWTH``
        (module docstring) — are structural zeros of the model: their cells have
        probability exactly 0 and the fit is the optimum of Eq. (4.2) over the allowed
        cells (for the descent, its maximum-entropy optimum there). ``stats["rules"]``:
        ``in_model`` (names), ``added_cliques`` (attribute sets added for rules),
        ``left`` (rules the generator must enforce) and ``zero_cells``.
    rule_slack_cells:
        The cells rule cliques may add beyond ``RULE_GROWTH`` times the tree's
        (``None``: ``RULE_SLACK_CELLS``); a model of small cliques (the independence
        model) holds its rules only with more.

    Returns
    -------
    GraphicalModel, with ``stats`` holding ``loss_history`` (loss of the
    iterate after each iteration), ``loss``, ``gap``, ``step_size``,
    ``iterations``, ``evaluations`` (belief propagations), ``restarts``,
    ``method``, ``total_estimated``, ``setup_seconds`` and ``seconds``.

    ``gap`` is the optimality certificate of the returned model: ``loss - LB``
    with ``LB`` a lower bound on ``min_M L`` over the marginal polytope ``M`` of
    the junction tree, so ``loss - gap <= min_M L <= loss``: the estimate is
    certified within ``gap`` of the optimum of Eq. (4.2). ``LB`` is the best of
    the Frank–Wolfe bound ``loss - max_{s in M} <grad L(mu), mu - s>`` and, for
    the L2 loss, two Fenchel-dual bounds (the scaled residual, and the residual
    lifted clique by clique), all from one max-sum calibration on ``-grad L``
    (:mod:`.certificate`; ``docs/api/inference.md``).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    with single_threaded_blas():
        return _estimate(
            domain,
            measurements,
            iters=iters,
            total=total,
            loss=loss,
            method=method,
            warm_start=warm_start,
            callback=callback,
            progress=progress,
            memory_limit_mb=memory_limit_mb,
            extra_cliques=extra_cliques,
            step_size=step_size,
            gap_tol=gap_tol,
            rtol=rtol,
            rules=rules,
            rule_slack_cells=rule_slack_cells,
        )


def _estimate(
    domain,
    measurements,
    *,
    iters,
    total,
    loss,
    method,
    warm_start,
    callback,
    progress,
    memory_limit_mb,
    extra_cliques,
    step_size,
    gap_tol,
    rtol=None,
    rules=None,
    rule_slack_cells=None,
):
    clock = Stopwatch()
    if isinstance(iters, bool) or int(iters) != iters or iters < 0:
        raise ValueError(f"iters must be a non-negative integer, got {iters!r}")
    iters = int(iters)
    if gap_tol is not None and (isinstance(gap_tol, bool) or not np.isfinite(gap_tol) or gap_tol < 0):
        raise ValueError(f"gap_tol must be a finite number >= 0 or None, got {gap_tol!r}")
    if rtol is not None and (isinstance(rtol, bool) or not np.isfinite(rtol) or rtol < 0):
        raise ValueError(f"rtol must be a finite number >= 0 or None, got {rtol!r}")
    if method == "interior_point":
        if loss != "l2":
            raise ValueError(f"method='interior_point' solves the L2 loss only, got loss={loss!r}")
        if iters < 1:
            raise ValueError(f"iters (the interior point's iteration cap) must be >= 1, got {iters!r}")
        for name, value in (("step_size", step_size), ("rtol", rtol)):
            if value is not None:
                raise ValueError(f"{name} applies to the descent methods, not to method='interior_point'")
    compiled = compile_measurements(domain, measurements)
    if not compiled:
        raise ValueError("estimate needs at least one measurement")
    if warm_start is not None and not isinstance(warm_start, GraphicalModel):
        raise ValueError(f"warm_start must be a GraphicalModel, got {type(warm_start).__name__}")
    if warm_start is not None and warm_start.domain != domain:
        raise ValueError("warm_start model is over a different domain")
    total_estimated = total is None
    if total is None:
        total = estimate_total(compiled)
        if total is None:
            if warm_start is None:
                raise ValueError("no measurement determines the total number of records; pass total=")
            total = warm_start.total
        total = max(float(total), 1.0)
    elif not np.isfinite(total) or total <= 0:
        raise ValueError(f"total must be finite and > 0, got {total!r}")
    total = float(total)
    rule_set = as_rules(rules, domain)
    cliques = [m.attrs for m in compiled] + [tuple(c) for c in extra_cliques]
    tree = build_junction_tree(domain, cliques, memory_limit_mb=memory_limit_mb)
    placed: dict | None = None
    if rule_set is not None:
        tree, placed = _place_rules(domain, tree, cliques, rule_set, memory_limit_mb, rule_slack_cells)
    bp = BeliefPropagation(tree)
    masks, zeros = _zeros(bp, domain, rule_set.subset(placed["in_model"]) if placed else None)
    if placed is not None:
        placed["zero_cells"] = 0 if zeros is None else int(np.count_nonzero(np.isneginf(zeros)))
    solver: dict = {}
    if method == "interior_point":  # the optimal face, then the accelerated descent on it
        sol = exact_solve(domain, tree, compiled, total, tol=INTERIOR_POINT_TOL, max_iter=iters, allowed=masks)
        theta0 = _face_theta(bp, sol)
        solver = {
            "solver_iterations": sol.iterations,
            "solver_seconds": sol.seconds,
            "solver_loss": sol.loss,
            "face_cells": int(sum(int(np.count_nonzero(v == 0.0)) for v in bp.views(theta0))),
        }
        iters, warm_start, rtol = FACE_MAX_ITERS, None, FACE_RTOL
        gap_tol = FACE_GAP_TOL if gap_tol is None else gap_tol
    fast = kernels.worth(iters, bp.size)  # compiled kernels (numba) for all but small fits
    obj = Objective(bp, compiled, total, loss, kernel=fast)
    ev = _Evaluator(bp, obj, fast, zeros)

    s = _Iterate(ev, theta0 if solver else _initial_theta(bp, warm_start))
    if step_size is not None:
        s.eta = float(step_size)
        if not np.isfinite(s.eta) or s.eta <= 0:
            raise ValueError(f"step_size must be finite and > 0, got {step_size!r}")
    elif warm_start is not None and "step_size" in warm_start.stats:
        # the last fit's step, but never below the default 1/Lip: a fit that ended at its
        # numerical optimum has halved its step towards zero (Armijo fails on rounding), and
        # the next fit would spend most of its iterations growing it back
        s.eta = max(float(warm_start.stats["step_size"]), 1.0 / max(obj.lipschitz, 1e-300))
    else:
        s.eta = 1.0 / max(obj.lipschitz, 1e-300)
    smooth = obj.loss == "l2"
    s.eta0 = s.eta if step_size is not None else 1.0 / max(float(np.abs(s.G).max()), 1e-300)  # L1 schedule
    setup = clock.elapsed()
    step = _STEPS["accelerated" if solver else method] if smooth else _subgradient_step
    history = _descend(s, step, iters, callback, progress, gap_tol, rtol if smooth else None)
    if not smooth and s.best_theta is not None:  # non-monotone subgradient method: keep the best iterate
        s.theta = ev.adopt(s.best_theta)
        s.val = ev(s.theta, s.p, s.G)  # marginals and gradient of the best iterate, for its certificate
        ev.count -= 1  # not a descent evaluation
        s.gap_stop = False
    gap = s.last_gap if s.gap_stop else s.gap()
    theta, val = s.theta, s.val
    # shift log Z into the root's potential (a tidy, normalised parameter vector)
    th_views = bp.views(theta)
    log_z = bp.calibrate_flat(theta, s.p_new, compiled=fast, zeros=zeros)
    th_views[tree.root] -= log_z
    if zeros is not None:  # the structural zeros: -inf in the model's potentials
        theta += zeros
    model = GraphicalModel(domain, tree, [v.copy() for v in th_views], total)
    model.stats.update(
        loss_history=history,
        loss=float(val),
        gap=float(gap),
        step_size=float(s.eta) if smooth else float(s.eta0),
        iterations=history.size,
        evaluations=ev.count,
        restarts=s.restarts,
        method=method if smooth else "subgradient",
        total_estimated=total_estimated,
        setup_seconds=setup,
        seconds=clock.elapsed(),
        **solver,
    )
    if placed is not None:
        model.stats["rules"] = placed
    return model


def _place_rules(
    domain: Domain,
    tree: JunctionTree,
    cliques: list,
    rules: RuleSet,
    memory_limit_mb: float | None,
    slack_cells: int | None = None,
) -> tuple[JunctionTree, dict]:
    """The junction tree with the rules' attribute sets that fit (module docstring): the
    attribute sets of the rules inside no clique, cheapest first (the cells the tree has
    with that set alone added; ties in rule order), each added when the tree then has at
    most ``RULE_GROWTH * cells + RULE_SLACK_CELLS`` cells (``cells``: ``tree``'s) and stays
    within ``memory_limit_mb`` — so the limit admits the many cheap sets before one dear
    one; ``slack_cells`` replaces ``RULE_SLACK_CELLS`` when given. Returns the tree and
    ``{"in_model", "added_cliques", "left"}``."""
    limit = RULE_GROWTH * tree.cells + (RULE_SLACK_CELLS if slack_cells is None else slack_cells)
    added: list[tuple[str, ...]] = []

    def build(extra: list) -> JunctionTree | None:
        try:
            return build_junction_tree(domain, [*cliques, *added, *extra], memory_limit_mb=memory_limit_mb)
        except ModelTooLargeError:
            return None

    tried: set[frozenset] = set()
    while True:  # again for the sets a new triangulation split (a pair a clique held before)
        outside: dict[frozenset, tuple[str, ...]] = {}
        for r in rules:  # (a rule forbidding nothing holds anyway)
            key = frozenset(r.attrs)
            if r.forbidden_cells and key not in tried and tree.find_clique(r.attrs) is None:
                outside.setdefault(key, r.attrs)
        tried.update(outside)
        alone = [(t.cells, k, attrs, t) for k, attrs in enumerate(outside.values())
                 if (t := build([attrs])) is not None and t.cells <= limit]  # fmt: skip
        grew = False
        for _, _, attrs, t in sorted(alone, key=lambda c: c[:2]):
            if tree.find_clique(attrs) is not None:  # inside a clique an earlier set made
                continue
            bigger = build([attrs]) if grew else t
            if bigger is not None and bigger.cells <= limit:
                added.append(attrs)
                tree, grew = bigger, True
        if not grew:
            break
    inside = [r.name for r in rules if not r.forbidden_cells or tree.find_clique(r.attrs) is not None]
    left = [r.name for r in rules if r.name not in inside]
    return tree, {"in_model": inside, "added_cliques": [list(c) for c in added], "left": left}


def _zeros(
    bp: BeliefPropagation, domain: Domain, rules: RuleSet | None
) -> tuple[list[np.ndarray | None] | None, np.ndarray | None]:
    """Per clique of ``bp``'s tree, the allowed cells under the rules inside it (``None``:
    no rule inside), and the flat structural zeros (``0`` allowed, ``-inf`` forbidden);
    ``(None, None)`` when no cell is forbidden."""
    if rules is None or not len(rules):
        return None, None
    masks = [rules.mask(c, domain) for c in bp.tree.cliques]
    if all(m is None or m.all() for m in masks):
        return None, None
    zeros = np.zeros(bp.size)
    for v, m in zip(bp.views(zeros), masks):
        if m is not None:
            v[~m] = -np.inf
    return masks, zeros


def _initial_theta(bp: BeliefPropagation, warm_start: GraphicalModel | None) -> np.ndarray:
    """The start of the descent (flat log-potentials of ``bp``'s tree): zeros, the uniform
    model, or the potentials of ``warm_start`` carried over to this tree."""
    theta = np.zeros(bp.size)
    if warm_start is None:
        return theta
    tree = bp.tree
    views = bp.views(theta)
    old = warm_start.tree
    if all(tree.find_clique(c) is not None for c in old.cliques):
        for c, th in zip(old.cliques, warm_start.theta):
            i = tree.find_clique(c)
            if warm_start.has_zeros:  # finite for the descent (this fit's own zeros are added on top)
                th = np.maximum(th, _LOG_TINY)
            views[i] += align(th, c, tree.cliques[i])
        return theta
    # the old cliques do not all fit: junction-tree factorisation of the old model's
    # marginals over the new tree (theta_C = log mu_C - log mu_S)
    floor = 1e-300
    for i in tree.order:
        mu = np.maximum(warm_start.probabilities(tree.cliques[i]), floor)
        views[i] += np.log(mu)
        sep = tree.separator(i)
        if sep:
            ms = np.maximum(warm_start.probabilities(sep), floor)
            views[i] -= align(np.log(ms), sep, tree.cliques[i])
    return theta


def _face_theta(bp: BeliefPropagation, sol: ExactSolution) -> np.ndarray:
    """The start of the descent on the optimal face: log-potentials 0 on the cells the
    interior point leaves positive and ``log 1e-300`` on those it drives to zero (flat).

    The optimal residual of Eq. (4.2) is unique, but the optimal clique tables are not
    when cliques hold unmeasured interactions; they form a face of the polytope. An
    interior point ends near the analytic centre of that face, in its relative interior:
    a cell some optimum fills keeps a count ``x`` well above its reduced gradient ``z``,
    a cell every optimum empties the reverse (for linear programs the limit is strictly
    complementary, Güler & Ye, "Convergence behavior of interior-point algorithms", Math.
    Programming 60, 1993; on Private-PGM's problems the two separate by orders of
    magnitude on all but a few degenerate cells, and the certificate checks the end
    result either way), so ``x > z`` is the face's support. The centre itself is an
    arbitrary point of the face; the descent started here keeps its iterates in the
    exponential family of the measured marginals on that support, so its limit is the
    maximum-entropy optimum — the model Private-PGM's descent converges to (Fact 1 of the
    NIST-MST/MST paper) — reached in a few thousand iterations instead of tens of
    thousands."""
    theta = np.zeros(bp.size)
    floor = np.log(1e-300)
    for v, x, z in zip(bp.views(theta), sol.marginals, sol.reduced):
        v[...] = np.where(x > z, 0.0, floor)
    return theta


def estimation_summary(model: GraphicalModel) -> dict:
    """``{"loss", "gap", "iterations", "method"}`` of a model fitted by :func:`estimate`:
    its loss, the certified gap (``loss - gap <= min L <= loss``), the
    iterations run and the method — what every PGM-based mechanism reports as
    ``extras["estimation"]`` (and in its sidecar)."""
    st = model.stats
    return {
        "loss": float(st["loss"]),
        "gap": float(st["gap"]),
        "iterations": int(st["iterations"]),
        "method": str(st["method"]),
    }


def evaluate_loss(model: GraphicalModel, measurements: Sequence[Measurement], loss: str = "l2") -> float:
    """The objective of :func:`estimate` for any model (e.g. to compare estimators)."""
    compiled = compile_measurements(model.domain, measurements)
    val = 0.0
    for m in compiled:
        mu = marginal(model.tree, model.clique_marginals(), m.attrs).ravel() * model.total
        r = (mu - m.y) if m.kind == "identity" else (m.Q @ mu - m.y)
        r = r / m.sigma
        val += float(np.abs(r).sum()) if loss == "l1" else 0.5 * float(r @ r)
    return val
