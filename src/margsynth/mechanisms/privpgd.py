"""PrivPGD (Donhauser, Abad, Hulkund, Yang — "Privacy-preserving data release leveraging
optimal transport and particle gradient descent", ICML 2024, arXiv:2401.17823), the
mechanism: Algorithm 1 with PrivPGD's particle generator as the generation step::

    SELECT    all k-way marginals (k = degree = 2, §4.1)
    MEASURE   y_C = M_C(D) + N(0, sigma^2 / w^2)  -- Algorithm 1 (margsynth.privacy.measure_marginals),
              one Gaussian mechanism of L2 sensitivity 1 charged to a zCDP BudgetLedger;
              optional constraint target c~ = count + N(0, sigma_c^2) with its own share
              ``constraint_share`` of rho (App. B)
    GENERATE  PrivPGDGenerator (margsynth.inference.privpgd.generator): embedding (Eq. 4)
              -> projection (Eq. 5) -> quantization (Eq. 6) -> optimization (Eq. 7, 8)
              -> finalization (§3.3)

The hyperparameters, their paper defaults and our documented deviations are described in
:mod:`margsynth.inference.privpgd.generator`. Privacy: the project's neighbouring relation
is add/remove-one (sensitivity 1 for the stacked, normalised marginal query), accounted
in zCDP and converted to (eps, delta).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np

from ..dataset import Dataset
from ..inference.privpgd.constraints import ThresholdConstraint, ThresholdPenalty
from ..inference.privpgd.embedding import check_domain
from ..inference.privpgd.generator import PrivPGDGenerator
from ..inference.torch_utils import resolve_device, with_torch_threads
from ..privacy import BudgetLedger, gaussian_mechanism, measure_marginals
from ..privacy.accounting import gaussian_sigma
from ..rules import RuleSet
from ..timing import Stopwatch
from .base import Mechanism, SynthesisResult, check_marginals_fit, check_records, largest

__all__ = ["PRESETS", "PrivPGD"]

_GENERATOR_FIELDS = frozenset(f.name for f in fields(PrivPGDGenerator))


@dataclass(frozen=True)
class PrivPGD(Mechanism):
    """PrivPGD: SELECT all ``degree``-way marginals, MEASURE them, GENERATE with
    :attr:`generator` (defaults = the paper's §4.1; see
    :mod:`margsynth.inference.privpgd.generator`).

    ``synthetic_records`` is the number of records, which are the particles (§3): ``None``
    keeps the generator's ``n_particles``, a number replaces it for the run.
    ``generator`` is the :class:`~margsynth.inference.privpgd.generator.PrivPGDGenerator`
    holding the generation hyperparameters (``n_particles``, the projection and
    optimization steps' settings, ...); :meth:`preset` and the registry route keyword
    arguments naming its fields to it. ``degree`` is the size of the measured marginals.
    ``gamma`` is the penalty strength of Eq. 7 (``constraint`` must be given when
    ``gamma > 0``); ``constraint_share`` the fraction of the zCDP budget spent on the
    constraint's target (App. B splits the budget the same way; the rest measures the
    marginals). ``threads`` sets ``torch.set_num_threads`` during :meth:`run` (restored
    afterwards; ``None`` leaves it): 1 by default, because most kernels here are
    memory-bound or serial (prefix sums, scatter-adds) and on the project's shared 2-core
    machine two threads measured 6x slower per epoch (9.2 s vs 1.5 s) than one.
    """

    generator: PrivPGDGenerator = field(default_factory=PrivPGDGenerator)
    degree: int = 2
    synthetic_records: int | None = None
    # domain-specific constraint (§4.4)
    constraint: ThresholdConstraint | None = None
    gamma: float = 0.0
    constraint_share: float = 0.1
    threads: int | None = 1

    name = "privpgd"

    def __post_init__(self) -> None:
        if not isinstance(self.generator, PrivPGDGenerator):
            raise ValueError(f"generator must be a PrivPGDGenerator, got {type(self.generator).__name__}")
        check_records(self.synthetic_records)
        d = self.degree
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise ValueError(f"degree must be a positive integer, got {d!r}")
        if not (isinstance(self.gamma, (int, float)) and math.isfinite(self.gamma)) or self.gamma < 0:
            raise ValueError(f"gamma (penalty strength) must be a finite number >= 0, got {self.gamma!r}")
        if self.constraint is not None and not isinstance(self.constraint, ThresholdConstraint):
            raise ValueError(f"constraint must be a ThresholdConstraint or None, got {type(self.constraint).__name__}")
        if self.gamma > 0 and self.constraint is None:
            raise ValueError("gamma > 0 needs a constraint")
        if not (isinstance(self.constraint_share, (int, float)) and 0 < self.constraint_share < 1):
            raise ValueError(f"constraint_share must be in (0, 1), got {self.constraint_share!r}")
        if self.threads is not None and (
            isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1
        ):
            raise ValueError(f"threads must be a positive integer or None, got {self.threads!r}")

    # ------------------------------------------------------------------ presets
    @classmethod
    def preset(cls, preset: str = "default", **overrides) -> PrivPGD:
        """``"default"`` (the paper's hyperparameters) or ``"fast"`` (see ``PRESETS``),
        with ``overrides`` replacing fields (the registry's ``privpgd`` factory). An override
        naming a field of the generator rather than of the mechanism (``epochs=…``,
        ``n_particles=…``) replaces that field of the preset's generator (or of the
        ``generator`` override, when one is given; :meth:`override`)."""
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
        return PRESETS[preset].override(**overrides)

    def override(self, **overrides) -> PrivPGD:
        """A copy with ``overrides`` replacing fields; a keyword naming a field of the
        generator rather than of the mechanism replaces that field of :attr:`generator`
        (of the ``generator`` override, when one is given). ``TypeError`` for an unknown name."""
        own = {f.name for f in fields(self)}
        moved = {k: overrides.pop(k) for k in list(overrides) if k not in own and k in _GENERATOR_FIELDS}
        if moved:
            overrides["generator"] = replace(overrides.get("generator", self.generator), **moved)
        return replace(self, **overrides)

    # ------------------------------------------------------------------ validate / run
    def check(self, data: Dataset, budget: BudgetLedger, *, device: str = "cpu", **_: object) -> None:
        """PrivPGD's own checks, before any noise: ``ValueError`` for an attribute of size 1,
        codes that do not match the domain, a degree above the number of attributes or a bad
        device."""
        resolve_device(device)
        _check_data(data)
        if self.degree > len(data.domain):
            raise ValueError(f"degree {self.degree} exceeds the number of attributes ({len(data.domain)})")
        check_marginals_fit(data.domain, [largest(data.domain, self.degree)], f"{self.degree}-way marginal")
        which = "n_particles" if self.synthetic_records is None else "synthetic_records"
        check_records(self._generator().n_particles, which, columns=len(data.domain))

    def _generator(self) -> PrivPGDGenerator:
        """The generator a run uses: :attr:`generator` with ``synthetic_records`` particles when given."""
        if self.synthetic_records is None:
            return self.generator
        return replace(self.generator, n_particles=self.synthetic_records)

    def synthesize(
        self,
        data: Dataset,
        rng: np.random.Generator,
        budget: BudgetLedger,
        *,
        device: str = "cpu",
        rules: RuleSet | None = None,
        **_: object,
    ) -> SynthesisResult:
        """Synthesise ``n_particles`` records from ``data`` spending ``budget``. ``rules``
        (public, no budget): the generator projects its measures onto the allowed cells and
        repairs the records (:class:`~margsynth.inference.privpgd.generator.PrivPGDGenerator`)."""
        dev = resolve_device(device)
        return with_torch_threads(self.threads, lambda: self._run(data, rng, budget, dev, rules))

    def _run(self, data, rng, ledger, dev, rules=None) -> SynthesisResult:
        clock = Stopwatch()
        domain = data.domain
        # SELECT: all degree-way marginals (§4.1)
        names = list(itertools.combinations(domain.names, self.degree))
        # MEASURE (Algorithm 1), budget split named here
        use_constraint = self.constraint is not None
        share_marginals = 1.0 - self.constraint_share if use_constraint else 1.0
        sigma = gaussian_sigma(ledger.portion(share_marginals))
        noisy = measure_marginals(
            data, [(c, 1.0) for c in names], sigma, rng, ledger=ledger, label=f"{self.degree}-way marginals"
        )
        n_hat = max(noisy.mean_total(), 1.0)
        constraint_target = None
        if use_constraint:
            sigma_c = gaussian_sigma(ledger.portion(self.constraint_share))
            c_noisy = gaussian_mechanism(
                [float(self.constraint.count(data))],
                sigma=sigma_c,
                l2_sensitivity=1.0,
                rng=rng,
                ledger=ledger,
                label="constraint target",
            )[0]
            constraint_target = float(np.clip(c_noisy / n_hat, 0.0, 1.0))
        seconds = {"measure": clock.elapsed()}
        # GENERATE (post-processing): PrivPGD's particles, randomness derived from rng
        penalty = None
        if use_constraint and self.gamma > 0:
            penalty = ThresholdPenalty(self.constraint, domain, constraint_target, dev)
        out = self._generator().generate(domain, noisy, rng, device=dev, penalty=penalty, gamma=self.gamma, rules=rules)
        seconds.update(out.seconds)
        seconds["total"] = clock.elapsed()
        params = asdict(self)
        params.update(asdict(self._generator()))  # one flat record of every hyperparameter
        del params["generator"]
        if self.constraint is not None:
            params["constraint"] = {
                "weights": dict(self.constraint.weights),
                "tau": self.constraint.tau,
                "sharpness": self.constraint.sharpness,
                "width": self.constraint.width,
            }
        extras = {"cliques": names, "sigma": sigma, **out.extras}
        if constraint_target is not None:
            extras["constraint_target"] = constraint_target
        return SynthesisResult.from_ledger(out.synthetic, self.name, params, ledger, seconds, extras)


def _check_data(data: Dataset) -> None:
    if not isinstance(data, Dataset):
        raise ValueError(f"data must be a margsynth Dataset, got {type(data).__name__}")
    sizes = np.asarray(check_domain(data.domain))
    codes = data.codes
    if codes.ndim != 2 or codes.shape[1] != sizes.size:
        raise ValueError(
            f"data has {codes.shape[1] if codes.ndim == 2 else '?'} columns but the domain has {sizes.size} attributes"
        )
    if len(data) == 0:
        raise ValueError("data has no records")
    c = codes.astype(np.int64, copy=False)
    bad = np.flatnonzero(((c < 0) | (c >= sizes)).any(axis=0))
    if bad.size:
        j = int(bad[0])
        raise ValueError(
            f"data does not match its domain: column {data.domain.names[j]!r} has codes outside 0..{sizes[j] - 1} "
            f"(max {int(c[:, j].max())})"
        )


#: ``default``: the paper's §4.1 hyperparameters (uniform initialisation, as the authors,
#: no consistency step).
#: ``fast``: 30,000 particles, 200 epochs (lr x0.75 every 13), 300 projection iterations
#: (lr x0.8 every 20), a 256-direction bank, ``init="marginals"`` and ``consistency=True``
#: (the projected measures raked to common 1-way marginals, :func:`margsynth.inference.privpgd.projection.make_consistent`);
#: everything else as the paper. Measured on full adult at eps = 2.5, delta = 1e-5, seed 0
#: (2-core CPU, 1 thread): ~105 s of process CPU (bank 3 s, projection 44 s, optimization
#: 56 s; 6.5 min wall on a machine at load 7), average 2-way TV 0.038 and sliced W1 0.0022
#: (the projected-and-raked targets themselves are at TV 0.038; PGM+MST 0.041). The
#: previous fast preset (150 epochs, lr x0.75 every 10, uniform init, no consistency) gave
#: TV 0.085 / SW1 0.0029 (at eps = 0.2: 0.310 / 0.0256 before, 0.130 / 0.0165 now); on the
#: 80% split, 3 seeds, it beats PGM+MST on SW1, counting queries and TV
#: (benchmarks/bench_privpgd_vs_mst.py). Without the consistency step even 600 epochs stall at TV 0.081:
#: the 13 measures sharing each attribute imply 13 different noisy 1-way marginals, and
#: the particles' coordinate, pulled to conflicting quantiles at every step, never
#: settles into its bin (the particles fit those targets no better than they fit the truth).
PRESETS: dict[str, PrivPGD] = {
    "default": PrivPGD(),
    "fast": PrivPGD(
        generator=PrivPGDGenerator(
            n_particles=30_000,
            projection_iters=300,
            projection_lr_step=20,
            epochs=200,
            lr_step=13,
            direction_bank=256,
            init="marginals",
            consistency=True,
        )
    ),
}
