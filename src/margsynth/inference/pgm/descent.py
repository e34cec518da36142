"""The descent of Private-PGM: entropic mirror descent on Eq. (4.2), plain or accelerated.

The loss of :mod:`.objective` (Eq. 4.2 of McKenna, Miklau & Sheldon, "Winning the NIST
Contest: A scalable and general approach to differentially private synthetic data", JPC
2021, arXiv:2108.04978, §4.2) is minimised over the log-potentials ``theta`` of the
junction tree with the entropic mirror-descent ("proximal") algorithm of McKenna, Sheldon
& Miklau ("Graphical-model based estimation and inference for differential privacy",
ICML 2019, arXiv:1901.09136, Algorithm 1):

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
For the non-smooth L1 loss a line search stalls at the kinks, so L1 uses the
classical subgradient schedule ``eta_t = eta_0 / sqrt(t + 1)`` (``eta_0`` =
1 / the largest initial gradient entry) and returns the best iterate.

Acceleration (``method="accelerated"``, the default of :func:`~.estimation.estimate`): the
same mirror step is taken from an extrapolated point ``y = theta_t + k/(k+3) (theta_t -
theta_{t-1})`` (Nesterov momentum in the natural parameters, as in FISTA,
Beck & Teboulle 2009), with the same Armijo line search at ``y`` and an
adaptive restart (momentum reset whenever the loss would increase;
O'Donoghue & Candes 2015), so the loss sequence stays monotone. On adult
with MST's measurements it reaches the optimum of Eq. (4.2) to 1e-5 relative
in 1,000 iterations, where plain mirror descent needs ~30,000
(``benchmarks/bench_pgm.py``). ``method="mirror_descent"`` is the plain
algorithm of the ICML paper.

Stopping rules (:func:`_descend`): ``gap_tol`` stops once the certified gap of
:mod:`.certificate` is at most ``gap_tol * L`` (a certified stop); ``rtol`` once the loss
stalls (an uncertified one, for callers such as AIM's rounds, whose fits stop far from the
optimum — see docs/notes/aim.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from tqdm.auto import tqdm

from . import kernels
from .certificate import certified_gap
from .objective import _Evaluator

__all__ = ["ARMIJO", "GAP_EVERY", "GAP_SPACING", "MAX_HALVINGS", "STEP_GROWTH"]

STEP_GROWTH = 1.1  # growth of the step after an accepted step (Armijo backtracking halves it)
ARMIJO = 0.5
MAX_HALVINGS = 60

#: ``rtol`` checks the loss every ``GAP_EVERY`` iterations; ``gap_tol`` checks the
#: certificate (one max-sum calibration and the lifted bound: a few evaluations' worth) at
#: multiples of ``GAP_EVERY`` spaced by at least ``GAP_SPACING`` times the iterations so far,
#: so the checks cost a bounded share of the fit and a stop comes at most ~10% late.
GAP_EVERY = 10
GAP_SPACING = 0.1


class _Iterate:
    """The state of the descent: the iterate ``theta`` (log-potentials, flat) with its
    marginals ``p``, gradient ``G`` and loss ``val``; the previous iterate (momentum);
    scratch buffers for the trial point ``*_new`` and the extrapolated point ``*_y``;
    the step size ``eta`` and counters. Buffers are swapped, never copied."""

    def __init__(self, ev: _Evaluator, theta: np.ndarray) -> None:
        self.ev = ev
        self.theta = ev.adopt(theta)
        self.theta_prev, self.theta_new, self.theta_y = ev.buffer(), ev.buffer(), ev.buffer()
        self.p, self.p_new, self.p_y = ev.buffer(), ev.buffer(), ev.buffer()
        self.G, self.G_new, self.G_y = ev.buffer(), ev.buffer(), ev.buffer()
        self.val = ev(self.theta, self.p, self.G)
        self.g_ok = True  # G holds the gradient at theta (trial points may skip it: grad())
        self.eta = self.eta0 = 0.0
        self.k = 0  # accepted steps since the last (re)start of the momentum
        self.restarts = 0
        self.best_val, self.best_theta = self.val, None
        self.last_gap: float | None = None
        self.gap_stop = False

    def gap(self) -> float:
        """The certified gap of the iterate (:func:`~.certificate.certified_gap`), after
        making ``G`` its gradient."""
        self.grad()
        return certified_gap(self.ev.bp, self.ev.obj, self.val, self.p, self.G, zeros=self.ev.zeros)

    def grad(self) -> None:
        """Makes ``G`` the gradient at the iterate, if its trial evaluation skipped it."""
        if not self.g_ok:
            self.ev.grad(self.p, self.G)
            self.g_ok = True

    def accept(self, new_val: float, g_ok: bool = True) -> None:
        """The trial point ``*_new`` becomes the iterate (``g_ok``: its gradient is in
        ``G_new``)."""
        self.theta_prev, self.theta, self.theta_new = self.theta, self.theta_new, self.theta_prev
        self.p, self.p_new = self.p_new, self.p
        self.G, self.G_new = self.G_new, self.G
        self.val = new_val
        self.g_ok = g_ok
        self.k += 1


def _armijo(
    s: _Iterate, ty: np.ndarray, py: np.ndarray, Gy: np.ndarray, val_y: float, grad: bool = True
) -> float | None:
    """Backtracking line search for the mirror step from ``y`` (module docstring): the
    trial point ``theta_new = y - eta * grad(y)`` is accepted when ``L(new) <= L(y) -
    ARMIJO * <grad, mu_y - mu_new>``, else ``eta`` is halved. Returns the accepted loss
    (trial point in ``s.*_new``; its gradient in ``s.G_new`` only with ``grad``) or
    ``None`` when no step is acceptable."""
    gp = float(Gy @ py)
    for _ in range(MAX_HALVINGS):
        if s.ev.compiled:
            kernels.mirror_step(Gy, s.eta, ty, s.theta_new)
        else:
            np.multiply(Gy, -s.eta, out=s.theta_new)
            s.theta_new += ty
        new_val = s.ev(s.theta_new, s.p_new, s.G_new if grad else None)
        decrease = gp - float(Gy @ s.p_new)  # <grad, mu_y - mu_new>
        if new_val <= val_y - ARMIJO * max(decrease, 0.0) or (new_val <= val_y and decrease <= 0):
            return new_val
        s.eta *= 0.5
    return None


def _mirror_descent_step(s: _Iterate, t: int) -> bool:
    """One step of entropic mirror descent (McKenna, Sheldon & Miklau, ICML 2019,
    Algorithm 1) with the Armijo step size. ``False``: (numerically) optimal, stop."""
    new_val = _armijo(s, s.theta, s.p, s.G, s.val)
    if new_val is None:
        return False
    s.eta *= STEP_GROWTH
    s.accept(new_val)
    return True


def _accelerated_step(s: _Iterate, t: int) -> bool:
    """The mirror step from the extrapolated point ``y = theta + k/(k+3) (theta -
    theta_prev)`` (Nesterov momentum, as in FISTA, Beck & Teboulle 2009) with adaptive
    restart (O'Donoghue & Candes 2015): a step that would raise the loss is not taken
    and the momentum is reset. ``False``: (numerically) optimal, stop."""
    if s.k > 0:
        if s.ev.compiled:
            kernels.extrapolate(s.theta, s.theta_prev, s.k / (s.k + 3.0), s.theta_y)
        else:
            np.subtract(s.theta, s.theta_prev, out=s.theta_y)
            s.theta_y *= s.k / (s.k + 3.0)
            s.theta_y += s.theta
        val_y = s.ev(s.theta_y, s.p_y, s.G_y)
        ty, py, Gy = s.theta_y, s.p_y, s.G_y
    else:
        s.grad()
        ty, py, Gy, val_y = s.theta, s.p, s.G, s.val
    # the trial point's gradient is needed only after a restart (computed then from its
    # marginals, without another propagation), so the trials skip it
    new_val = _armijo(s, ty, py, Gy, val_y, grad=False)
    if new_val is None:
        return False
    restart = new_val > s.val
    if restart:
        s.k = 0
        s.restarts += 1
    s.eta *= STEP_GROWTH
    if not restart:
        s.accept(new_val, g_ok=False)
    return True


def _subgradient_step(s: _Iterate, t: int) -> bool:
    """One mirror step with the subgradient schedule ``eta_t = eta_0 / sqrt(t + 1)``
    (L1 loss); the best iterate is kept, as the method is not monotone."""
    s.eta = s.eta0 / np.sqrt(t + 1.0)
    np.multiply(s.G, -s.eta, out=s.theta_new)
    s.theta_new += s.theta
    s.accept(s.ev(s.theta_new, s.p_new, s.G_new))
    if s.val < s.best_val:
        s.best_val, s.best_theta = s.val, s.theta.copy()
    return True


#: ``method`` -> step function for the smooth (L2) loss; the L1 loss uses :func:`_subgradient_step`.
_STEPS: dict[str, Callable[[_Iterate, int], bool]] = {
    "accelerated": _accelerated_step,
    "mirror_descent": _mirror_descent_step,
}


def _descend(
    s: _Iterate,
    step: Callable[[_Iterate, int], bool],
    iters: int,
    callback,
    progress: bool,
    gap_tol: float | None = None,
    rtol: float | None = None,
) -> np.ndarray:
    """The loop shared by every method: up to ``iters`` calls of ``step``, the loss after
    each, progress bar and callback; with ``gap_tol``, stops (before the step) at the first
    check (``GAP_SPACING``) where the certified gap is at most ``gap_tol * loss``; with ``rtol``, as soon as the loss
    fell by at most ``rtol * loss`` over the last ``GAP_EVERY`` iterations. Returns the
    loss history."""
    history = np.empty(iters)
    done = 0
    checked = None  # the loss at the last progress check (rtol)
    bar = None
    if progress:
        bar = tqdm(total=iters, desc="Private-PGM", unit="it", mininterval=0.5)
    next_gap = 0
    for t in range(iters):
        if gap_tol is not None and t >= next_gap and t % GAP_EVERY == 0:
            s.last_gap = s.gap()
            if s.last_gap <= gap_tol * max(s.val, 0.0):
                s.gap_stop = True  # last_gap certifies the current iterate
                break
            next_gap = t + max(GAP_EVERY, int(GAP_SPACING * t))
        if rtol is not None and t % GAP_EVERY == 0:
            if checked is not None and checked - s.val <= rtol * abs(s.val):
                break
            checked = s.val
        if not step(s, t):
            break
        history[t] = s.val
        done = t + 1
        if bar is not None and (t % 50 == 49 or t == iters - 1):
            bar.update(t + 1 - bar.n)
            bar.set_postfix(loss=f"{s.val:.6g}", refresh=False)
        if callback is not None and callback(t, s.val, s.eta):
            break
    if bar is not None:
        bar.close()
    return history[:done]

