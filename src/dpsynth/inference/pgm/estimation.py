"""Private-PGM estimation: fit ``P_theta`` to noisy marginal measurements.

Solves Eq. (4.2) of the NIST-MST/MST paper (§4.2) — by Fact 1 the same
optimum as Eq. (4.1) —

    minimise_theta  L(mu) = sum_m loss((Q_m N mu_m(theta) - y_m) / sigma_m),

``mu_m`` the model's probability marginal over measurement ``m``'s clique,
``N`` the total, ``loss(r) = 0.5 ||r||_2^2`` (default) or ``||r||_1``, with
the entropic mirror-descent ("proximal") algorithm of McKenna, Sheldon &
Miklau (ICML 2019, Algorithm 1):

    theta_{t+1} = theta_t - eta_t * grad_mu L(mu_t),   mu_{t+1} = M(theta_{t+1}),

i.e. ``P_{t+1} ∝ P_t * exp(-eta_t * grad)`` on the probability simplex. The
gradient with respect to a clique marginal is added to the log-potential of
the junction-tree clique holding it, so the model stays in the family of
Fact 1.

Step size without tuning: the first step is ``1 / Lip``, ``Lip = N^2 sum_m
max_col ||Q_m||^2 / sigma_m^2`` (the l1-smoothness constant of the L2 loss
on the simplex, for which mirror descent provably descends); afterwards a
backtracking (Armijo) line search accepts a step when
``L(mu_new) <= L(mu) - 0.5 <grad, mu - mu_new>`` and otherwise halves it,
and every accepted step lets the next one grow by ``STEP_GROWTH``. Scale-free:
neither ``N``, ``sigma`` nor the domain sizes need per-dataset settings.

Speed: measurements are folded into per-clique quadratic terms once
(identity measurements of the same attribute set become one
``a * mu - b`` gradient, computed over all cliques in two vector
operations); parameters, marginals and gradients live in flat vectors;
belief propagation is the compiled schedule of :class:`~.inference.BeliefPropagation`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ...domain import Domain
from .factor import align
from .inference import BeliefPropagation, marginal
from .junction_tree import build_junction_tree
from .measurement import CompiledMeasurement, Measurement, compile_measurements, estimate_total
from .model import GraphicalModel

__all__ = ["LOSSES", "Objective", "estimate", "evaluate_loss"]

LOSSES = ("l2", "l1")
STEP_GROWTH = 1.25  # growth of the step after an accepted step (Armijo backtracking halves it)
ARMIJO = 0.5
MAX_HALVINGS = 60


@dataclass
class _SubTerm:
    clique: int
    axes: tuple[int, ...]  # axes of the clique summed to get the measured marginal
    a: float | None  # identity/L2: gradient a*mu - b
    b: np.ndarray | None  # keepdims shape over the clique
    const: float
    Q: object = None  # matrix terms: scaled CSR (N/sigma) Q and its transpose
    QT: object = None
    y: np.ndarray | None = None  # y / sigma
    shape: tuple[int, ...] = ()


class Objective:
    """The loss of Eq. (4.1)/(4.2) compiled onto a junction tree's flat marginal vector.

    ``value_and_grad(p_flat, G_flat)`` returns ``L`` and writes ``dL/dmu``
    (per clique, broadcast into the clique's table) into ``G_flat``.
    """

    def __init__(self, bp: BeliefPropagation, compiled: Sequence[CompiledMeasurement], total: float, loss: str = "l2"):
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        self.loss = loss
        tree = bp.tree
        self.bp = bp
        n = float(total)
        self.A = np.zeros(bp.size)
        self.B = np.zeros(bp.size)
        self.const = 0.0
        self.subs: list[_SubTerm] = []
        self.full_l1: list[tuple[np.ndarray, np.ndarray, float]] = []  # (slice idx, y/sigma, N/sigma)
        lip = 0.0
        groups: dict[tuple[int, tuple[str, ...]], list[CompiledMeasurement]] = {}
        for m in compiled:
            c = tree.find_clique(m.attrs)
            if c is None:  # cannot happen: the tree is built from these cliques
                raise ValueError(f"{m.label}: clique {m.attrs} is in no junction-tree clique")
            if m.kind == "identity":
                lip += n * n / m.sigma**2
                groups.setdefault((c, m.attrs), []).append(m)
            else:
                colmax = float(np.max(np.asarray(m.Q.multiply(m.Q).sum(axis=0)))) if m.Q.nnz else 0.0
                lip += n * n * colmax / m.sigma**2
                cl = tree.cliques[c]
                axes = tuple(i for i, a in enumerate(cl) if a not in m.attrs)
                shape = tuple(bp.shapes[c][i] if a in m.attrs else 1 for i, a in enumerate(cl))
                Q = (m.Q * (n / m.sigma)).tocsr()
                self.subs.append(_SubTerm(c, axes, None, None, 0.0, Q, Q.T.tocsr(), m.y / m.sigma, shape))
        for (c, attrs), ms in groups.items():
            cl = tree.cliques[c]
            axes = tuple(i for i, a in enumerate(cl) if a not in attrs)
            shape = tuple(bp.shapes[c][i] if a in attrs else 1 for i, a in enumerate(cl))
            if loss == "l1":
                for m in ms:
                    self.subs.append(_SubTerm(c, axes, n / m.sigma, (m.y / m.sigma).reshape(shape), 0.0))
                continue
            prec = sum(1.0 / m.sigma**2 for m in ms)
            a = n * n * prec
            b = n * sum(m.y / m.sigma**2 for m in ms)
            const = 0.5 * sum(float(m.y @ m.y) / m.sigma**2 for m in ms)
            if not axes:
                o = bp.offsets
                self.A[o[c] : o[c + 1]] += a
                self.B[o[c] : o[c + 1]] += b
                self.const += const
            else:
                self.subs.append(_SubTerm(c, axes, a, b.reshape(shape), const))
        self.lipschitz = lip
        self.has_full = bool(np.any(self.A))

    def value_and_grad(self, p_flat: np.ndarray, p: list[np.ndarray], G_flat: np.ndarray, G: list[np.ndarray]) -> float:
        if self.has_full:
            np.multiply(self.A, p_flat, out=G_flat)
            G_flat -= self.B
            val = 0.5 * (float(p_flat @ G_flat) - float(p_flat @ self.B)) + self.const
        else:
            G_flat.fill(0.0)
            val = 0.0
        l1 = self.loss == "l1"
        for t in self.subs:
            pc = p[t.clique]
            ps = pc.sum(axis=t.axes, keepdims=True) if t.axes else pc
            if t.Q is not None:
                r = t.Q @ ps.ravel() - t.y
                if l1:
                    val += float(np.abs(r).sum())
                    g = t.QT @ np.sign(r)
                else:
                    val += 0.5 * float(r @ r)
                    g = t.QT @ r
                G[t.clique] += g.reshape(t.shape)
            elif l1:  # identity, L1: r = (N mu - y)/sigma, grad = (N/sigma) sign(r)
                r = ps * t.a - t.b
                val += float(np.abs(r).sum())
                G[t.clique] += np.sign(r) * t.a
            else:  # identity, L2, folded: grad = a mu - b
                g = ps * t.a
                g -= t.b
                val += 0.5 * (float(np.vdot(ps, g)) - float(np.vdot(ps, t.b))) + t.const
                G[t.clique] += g
        return val


def _initial_theta(bp: BeliefPropagation, warm_start: GraphicalModel | None) -> np.ndarray:
    theta = np.zeros(bp.size)
    if warm_start is None:
        return theta
    tree = bp.tree
    views = bp.views(theta)
    old = warm_start.tree
    if all(tree.find_clique(c) is not None for c in old.cliques):
        for c, th in zip(old.cliques, warm_start.theta):
            i = tree.find_clique(c)
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


def estimate(
    domain: Domain,
    measurements: Sequence[Measurement],
    *,
    iters: int = 1000,
    total: float | None = None,
    loss: str = "l2",
    warm_start: GraphicalModel | None = None,
    callback: Callable[[int, float, float], bool | None] | None = None,
    progress: bool = False,
    memory_limit_mb: float | None = None,
    extra_cliques: Sequence[Sequence[str]] = (),
    step_size: float | None = None,
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
        Mirror-descent iterations (accepted steps).
    total:
        Number of records ``N``. ``None``: estimated from the measurements by
        :func:`~.measurement.estimate_total` (inverse-variance weighted).
    loss:
        ``"l2"`` (``0.5 sum ||(Q mu - y)/sigma||^2``, the Gaussian
        log-likelihood of Eq. 4.1) or ``"l1"``.
    warm_start:
        A previous model (e.g. AIM's last round): its potentials start the
        descent, and its last step size seeds the line search.
    callback:
        ``callback(iteration, loss, step_size)`` after each accepted step;
        returning ``True`` stops early.
    progress:
        Show a tqdm progress bar.
    memory_limit_mb:
        Refuse (``ModelTooLargeError``) if the junction tree needs more.
    extra_cliques:
        Attribute sets to include in the model's structure without measuring them.
    step_size:
        Initial step; default ``1/Lip`` (see the module docstring).

    Returns
    -------
    GraphicalModel, with ``stats`` holding ``loss_history`` (loss after each
    iteration), ``step_size``, ``iterations``, ``line_search_evaluations``,
    ``setup_seconds`` and ``seconds``.
    """
    t0 = time.perf_counter()
    if isinstance(iters, bool) or int(iters) != iters or iters < 0:
        raise ValueError(f"iters must be a non-negative integer, got {iters!r}")
    compiled = compile_measurements(domain, measurements)
    if not compiled:
        raise ValueError("estimate needs at least one measurement")
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
    tree = build_junction_tree(domain, [m.attrs for m in compiled] + [tuple(c) for c in extra_cliques], memory_limit_mb=memory_limit_mb)
    bp = BeliefPropagation(tree)
    obj = Objective(bp, compiled, total, loss)

    theta = _initial_theta(bp, warm_start)
    theta_new = np.empty_like(theta)
    p, p_new = np.empty(bp.size), np.empty(bp.size)
    G, G_new = np.empty(bp.size), np.empty(bp.size)
    views = {id(a): bp.views(a) for a in (theta, theta_new, p, p_new, G, G_new)}

    bp.calibrate(views[id(theta)], views[id(p)])
    val = obj.value_and_grad(p, views[id(p)], G, views[id(G)])
    if step_size is not None:
        eta = float(step_size)
    elif warm_start is not None and "step_size" in warm_start.stats:
        eta = float(warm_start.stats["step_size"])
    else:
        eta = 1.0 / max(obj.lipschitz, 1e-300)
    history = np.empty(int(iters))
    evals = 1
    setup = time.perf_counter() - t0
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=int(iters), desc="Private-PGM", unit="it", mininterval=0.5)
    done = 0
    for t in range(int(iters)):
        gp = float(G @ p)
        for _ in range(MAX_HALVINGS):
            np.multiply(G, -eta, out=theta_new)
            theta_new += theta
            bp.calibrate(views[id(theta_new)], views[id(p_new)])
            new_val = obj.value_and_grad(p_new, views[id(p_new)], G_new, views[id(G_new)])
            evals += 1
            decrease = gp - float(G @ p_new)  # <grad, mu - mu_new>
            if new_val <= val - ARMIJO * max(decrease, 0.0) or (new_val <= val and decrease <= 0):
                break
            eta *= 0.5
        else:  # no acceptable step: the iterate is (numerically) optimal
            history = history[:t]
            break
        theta, theta_new = theta_new, theta
        p, p_new = p_new, p
        G, G_new = G_new, G
        val = new_val
        history[t] = val
        done = t + 1
        eta *= STEP_GROWTH
        if bar is not None and (t % 50 == 49 or t == iters - 1):
            bar.update(t + 1 - bar.n)
            bar.set_postfix(loss=f"{val:.4g}", refresh=False)
        if callback is not None and callback(t, val, eta):
            history = history[: t + 1]
            break
    if bar is not None:
        bar.close()
    # renormalise the potentials (shift log Z into the root) for a tidy parameter vector
    th_views = bp.views(theta)
    log_z = bp.calibrate(th_views, bp.views(p_new))
    th_views[tree.root] -= log_z
    model = GraphicalModel(domain, tree, [v.copy() for v in th_views], total)
    model.stats.update(
        loss_history=history[:done],
        loss=float(val),
        step_size=float(eta),
        iterations=done,
        line_search_evaluations=evals,
        setup_seconds=setup,
        seconds=time.perf_counter() - t0,
        total_estimated=total_estimated,
    )
    return model


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
