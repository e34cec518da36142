"""Accounting never over the request: for every registered mechanism and a grid of
(epsilon, delta) including the extremes (epsilon near 1e-15, delta near 1), the
(epsilon, delta) a ``margsynth synth`` sidecar reports as spent is at most the one
requested, exactly in floating point; its ``budget`` section is complete; and the
ledger's charges compose to the spend it reports."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from margsynth.commands.synth import run_synth
from margsynth.mechanisms import registry
from margsynth.privacy import BudgetLedger, accounting

SIZES = {"a": 3, "b": 4, "c": 2}
#: Tiny hyperparameters (via ``-p``) so that a run takes well under a second.
TINY = {
    "mst": {"iters": 5, "select_iters": 5, "synthetic_records": 40},
    "mst-prop4": {"iters": 5, "select_iters": 5, "synthetic_records": 40},
    "mst-gum": {"select_iters": 5, "synthetic_records": 40, "max_rounds": 2},
    "nist-mst": {"iters": 5, "synthetic_records": 40},
    "aim": {"rounds": 6, "iters": 3, "generator.iters": 3, "synthetic_records": 40},
    "independent": {"iters": 5, "synthetic_records": 40},
    "adagrid": {"iters": 5, "synthetic_records": 40},
    "adaptive-grid": {"iters": 5, "synthetic_records": 40},
    "privsyn": {"synthetic_records": 40, "max_rounds": 2},
    "privsyn-pgm": {"synthetic_records": 40, "iters": 5},
    "privpgd": {"preset": "fast", "n_particles": 40, "epochs": 1, "projection_iters": 2, "projection_lr_step": 1,
                "lr_step": 1, "consistency_iters": 2},
    "rap": {"n_rows": 8, "iters": 3, "synthetic_records": 40, "progress": False},
    "gem": {"rounds": 2, "batch_size": 8, "embedding_dim": 4, "hidden": [8], "iters": 2, "synthetic_records": 40,
            "progress": False},
    "private-gsd": {"synthetic_rows": 20, "generations": 50, "synthetic_records": 40, "progress": False},
}  # fmt: skip
GRID = [
    (1.0, 1e-9),
    (1e-15, 1e-9),
    (1e-15, 1 - 1e-9),
    (3e-15, 0.5),
    (0.7, 1 - 1e-12),
    (2.0, 1e-300),
    (50.0, 1e-6),
]
BUDGET_KEYS = {"currency", "total", "spent", "conversion", "spent_epsilon", "delta"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("acct")
    rng = np.random.default_rng(0)
    n = 80
    codes = np.stack([rng.integers(0, s, n) for s in SIZES.values()], 1)
    codes[:, 1] = (codes[:, 0] + rng.integers(0, 2, n)) % 4
    csv = d / "data.csv"
    csv.write_text(",".join(SIZES) + "\n" + "\n".join(",".join(map(str, r)) for r in codes) + "\n")
    dom = d / "domain.json"
    dom.write_text(json.dumps(SIZES))
    return d, str(csv), str(dom)


def _composed(records, currency):
    costs = [r["cost"] for r in records]
    return math.fsum(costs) if currency == "zcdp" else math.sqrt(math.fsum(c * c for c in costs))


@pytest.mark.parametrize("epsilon,delta", GRID)
@pytest.mark.parametrize("name", registry.available())
def test_spent_never_above_requested(inputs, name, epsilon, delta):
    d, csv, dom = inputs
    out = d / f"{name}-{epsilon:g}-{delta:g}.csv"
    public = csv if registry.spec(name).needs_public else None
    side = run_synth(name, csv, domain=dom, public=public, epsilon=epsilon, delta=delta, out=str(out), seed=1,
                     params=dict(TINY.get(name, {})))  # fmt: skip
    assert side["epsilon_spent"] <= epsilon and side["delta"] <= delta  # exactly, no tolerance
    budget = side["budget"]
    assert BUDGET_KEYS <= set(budget) and all(budget[k] is not None for k in BUDGET_KEYS)
    assert budget["spent_epsilon"] == side["epsilon_spent"]
    assert budget["spent"] <= budget["total"] * (1 + 1e-12)
    assert _composed(side["ledger"], budget["currency"]) == pytest.approx(budget["spent"], rel=1e-12)
    on_disk = json.loads(out.with_name(out.name + ".json").read_text())
    assert on_disk["epsilon_spent"] == side["epsilon_spent"] and on_disk["budget"] == budget


@pytest.mark.parametrize("currency,conversion", [("zcdp", "prop4"), ("zcdp", "cks"), ("gdp", "prop4")])
@pytest.mark.parametrize("epsilon,delta", GRID + [(1e-15, 1e-300), (1e6, 1e-9), (0.1, 1 - 1e-15)])
@pytest.mark.parametrize("parts", [1, 3, 7, 91])
def test_ledger_spent_in_equal_shares_never_exceeds_epsilon(currency, conversion, epsilon, delta, parts):
    """Any split of a ledger's whole budget into equal shares converts back to at most the
    requested epsilon (the calibration margin absorbs the rounding of shares and conversions)."""
    led = BudgetLedger.from_dp(epsilon, delta, currency=currency, conversion=conversion)
    share = led.portion(1 / parts)
    for i in range(parts):
        if currency == "zcdp":
            sigma = accounting.gaussian_sigma(share)
            led.charge("gaussian", led.cost("gaussian", sigma=sigma, sensitivity=1.0), f"m{i}", sigma=sigma,
                       sensitivity=1.0)  # fmt: skip
        else:
            led.charge("gaussian", share, f"m{i}")
    eps, d = led.spent_dp()
    assert 0 <= eps <= epsilon and d == delta
    if epsilon > 1e-3 and delta < 0.5:  # away from the degenerate corners the margin costs almost nothing
        assert eps >= epsilon * (1 - 1e-8)
