"""Private-PGM measurements: bad input raises ValueError naming the measurement."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import aslinearoperator

from margsynth import Domain
from margsynth.inference.pgm import Measurement, compile_measurements, estimate, estimate_total

DOM = Domain.from_sizes({"age": 3, "sex": 2, "race": 4})


def test_unknown_attribute_names_the_measurement():
    ms = [Measurement(("age",), None, np.ones(3), 1.0), Measurement(("age", "colour"), None, np.ones(6), 1.0)]
    with pytest.raises(ValueError, match=r"measurement 1 on \('age', 'colour'\): unknown attribute\(s\) \['colour'\]"):
        estimate(DOM, ms)


def test_named_measurement_uses_its_name():
    m = Measurement(("sex",), None, np.ones(5), 1.0, name="sex-1way")
    with pytest.raises(
        ValueError, match=r"measurement 'sex-1way': y has length 5 but the marginal over \('sex',\) has 2 cells"
    ):
        compile_measurements(DOM, [m])


def test_wrong_number_of_columns():
    m = Measurement(("age", "sex"), sp.identity(5, format="csr"), np.ones(5), 1.0)
    with pytest.raises(
        ValueError,
        match=r"measurement 0 on \('age', 'sex'\): Q has 5 columns but the marginal over \('age', 'sex'\) has 6 cells",
    ):
        compile_measurements(DOM, [m])
    dense = Measurement(("race",), np.ones((2, 3)), np.ones(2), 1.0)
    with pytest.raises(ValueError, match="Q has 3 columns .* 4 cells"):
        compile_measurements(DOM, [dense])
    op = Measurement(("race",), aslinearoperator(np.ones((2, 3))), np.ones(2), 1.0)
    with pytest.raises(ValueError, match="Q has 3 columns .* 4 cells"):
        compile_measurements(DOM, [op])


def test_callable_query_with_wrong_shape():
    m = Measurement(("race",), lambda v: np.ones((3, 3)) @ v, np.ones(3), 1.0)
    with pytest.raises(
        ValueError,
        match=r"measurement 0 on \('race',\): the query callable failed on a vector of the marginal's 4 cells",
    ):
        compile_measurements(DOM, [m])
    m2 = Measurement(("race",), lambda v: v[:2], np.ones(3), 1.0)
    with pytest.raises(ValueError, match="returns 2 answers but y has length 3"):
        compile_measurements(DOM, [m2])


def test_wrong_y_length():
    with pytest.raises(
        ValueError, match=r"measurement 0 on \('age',\): y has length 4 but the marginal over \('age',\) has 3 cells"
    ):
        compile_measurements(DOM, [Measurement(("age",), None, np.ones(4), 1.0)])
    with pytest.raises(ValueError, match="Q has 2 rows but y has length 3"):
        Measurement(("age",), np.ones((2, 3)), np.ones(3), 1.0)


@pytest.mark.parametrize("sigma", [0.0, -1.0, float("nan"), float("inf"), "abc", None])
def test_bad_sigma(sigma):
    with pytest.raises(ValueError, match=r"measurement on \('age',\): sigma must be"):
        Measurement(("age",), None, np.ones(3), sigma)


def test_bad_y_values_and_cliques():
    with pytest.raises(ValueError, match=r"y\[1\] is nan"):
        Measurement(("age",), None, np.array([1.0, np.nan, 2.0]), 1.0)
    with pytest.raises(ValueError, match="repeats an attribute"):
        Measurement(("age", "age"), None, np.ones(9), 1.0)
    with pytest.raises(ValueError, match="non-empty tuple"):
        Measurement((), None, np.ones(1), 1.0)
    with pytest.raises(ValueError, match="1-D"):
        Measurement(("age",), np.eye(3), np.ones((3, 1)), 1.0)
    with pytest.raises(ValueError, match="expected a Measurement"):
        compile_measurements(DOM, [("age",)])


def test_string_clique_and_table_y_are_accepted():
    m = Measurement("sex", None, np.array([[1.0], [2.0]]).ravel(), 1.0)
    assert m.clique == ("sex",)
    t = Measurement(("age", "sex"), None, np.arange(6.0).reshape(3, 2), 1.0)
    assert t.y.shape == (6,)


def test_canonical_order_and_scaled_identity_compile():
    y = np.arange(6.0)  # over (sex, age): y[s*3 + a]
    (c,) = compile_measurements(DOM, [Measurement(("sex", "age"), 2.0 * sp.identity(6), y, 4.0)])
    assert c.attrs == ("age", "sex") and c.kind == "identity" and c.sigma == 2.0
    np.testing.assert_array_equal(c.y, (y / 2.0).reshape(2, 3).T.ravel())
    # a general matrix keeps its rows but has its columns permuted to (age, sex) order
    Q = np.arange(12.0).reshape(2, 6)
    (d,) = compile_measurements(DOM, [Measurement(("sex", "age"), Q, np.ones(2), 1.0)])
    x = np.random.default_rng(0).normal(size=(2, 3))  # table over (sex, age)
    np.testing.assert_allclose(d.Q @ x.T.ravel(), Q @ x.ravel())


def test_estimate_total_uses_only_informative_queries():
    ms = compile_measurements(
        DOM,
        [
            Measurement(("age",), None, np.array([10.0, 20.0, 30.0]), 1.0),
            Measurement(("sex",), np.array([[1.0, -1.0]]), np.array([5.0]), 1.0),  # no total information
            Measurement(("race",), np.array([[1.0, 1.0, 0, 0], [0, 0, 1.0, 1.0]]), np.array([30.0, 30.0]), 1.0),
        ],
    )
    # age: 60 with variance 3; race: 60 with variance 2 -> 60
    assert estimate_total(ms) == pytest.approx(60.0)
    assert estimate_total(ms[1:2]) is None
