"""Every registered mechanism runs unchanged on an encoded raw table (tiny settings), and
the run's total — preprocessing plus mechanism, on one ledger — is within the request."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from margsynth.mechanisms import registry
from margsynth.tabular import sidecar, synthesize

from .test_accounting_contract import TINY

SCHEMA = {
    "columns": [
        {"name": "shop", "kind": "categorical", "categories": "discover", "nullable": True},
        {"name": "price", "kind": "numeric", "type": "float", "bounds": "discover", "bins": 4, "nullable": True},
        {"name": "items", "kind": "numeric", "type": "integer", "bounds": [0, 5], "bins": 3},
    ]
}


def tiny_raw(n: int = 120) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    price = rng.uniform(1, 60, n).round(2)
    price[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({
        "shop": rng.choice(np.array(["north", "south", None], dtype=object), n, p=[0.6, 0.35, 0.05]),
        "price": price,
        "items": np.clip(np.nan_to_num(price // 12), 0, 5).astype(int),
    })  # fmt: skip


@pytest.mark.parametrize("name", registry.available())
def test_every_mechanism_runs_on_a_raw_table(name):
    df = tiny_raw()
    kw = dict(TINY.get(name, {}))
    public = df if registry.spec(name).needs_public else None
    out, rep = synthesize(df, SCHEMA, name, epsilon=2.0, delta=1e-6, seed=0, public=public, **kw)
    assert list(out.columns) == ["shop", "price", "items"] and len(out) > 0
    assert out["items"].dtype == np.int64 and out["items"].between(0, 5).all()
    lo, hi = rep["encoder"]["columns"][1]["bounds"]
    assert out["price"].dropna().between(lo, hi).all()
    assert rep["epsilon"] <= 2.0 and rep["delta"] <= 1e-6
    led = rep["ledger"]
    assert math.fsum(c["cost"] for c in led["charges"]) == pytest.approx(led["spent"], rel=1e-12)
    assert led["spent"] <= led["total"] and led["spent_epsilon"] == rep["epsilon"]
    mech = [c for c in led["charges"] if c["label"].startswith(f"{name}:")]
    own = rep["result"].ledger
    assert mech and len(mech) == len(own)
    if rep["mechanism_budget"]["currency"] == "gdp":  # mu-GDP Gaussian measurements cost mu^2/2 zCDP
        assert [c["cost"] for c in mech] == pytest.approx([c["cost"] ** 2 / 2 for c in own], rel=1e-12)
    else:
        assert [c["cost"] for c in mech] == [c["cost"] for c in own]
    assert rep["result"].mechanism and sidecar(rep).keys() == rep.keys() - {"result"}
