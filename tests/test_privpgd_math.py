"""PrivPGD building blocks: closed forms (Eq. 2, 3, 8), sliced distances vs POT, the
direction bank, the projection gradient, quantization (Eq. 6) and finalization."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment
from scipy.stats import wasserstein_distance

from margsynth.domain import Domain
from margsynth.inference.privpgd import (
    DirectionBank,
    attribute_centres,
    clique_centres,
    directions,
    finalize,
    kernels,
    nearest_codes,
    quantize,
    sliced_wasserstein,
    w1_cdf,
    w2_squared_sorted,
)
from margsynth.inference.privpgd.projection import _bank_w1_grad, _Flat, init_measure, sliced_w1_bank

ot = pytest.importorskip("ot")


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_sorting_formula_equals_brute_force_w2(n):
    """Eq. 8 (sort both samples) == optimal assignment by brute force (Hungarian)."""
    rng = np.random.default_rng(n)
    for _ in range(5):
        a, b = rng.normal(size=n), rng.standard_t(3, size=n)
        cost = (a[:, None] - b[None, :]) ** 2
        r, c = linear_sum_assignment(cost)
        brute = cost[r, c].mean()
        assert w2_squared_sorted(a, b) == pytest.approx(brute, rel=1e-12, abs=1e-12)
        got_t = w2_squared_sorted(torch.tensor(a), torch.tensor(b)).item()
        assert got_t == pytest.approx(brute, rel=1e-12, abs=1e-12)


def test_sorting_formula_brute_force_permutations():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=6), rng.normal(size=6)
    best = min(np.mean((a - b[list(p)]) ** 2) for p in itertools.permutations(range(6)))
    assert w2_squared_sorted(a, b) == pytest.approx(best, rel=1e-12)


def test_vallender_w1_matches_scipy_for_probability_measures():
    rng = np.random.default_rng(1)
    for _ in range(10):
        v = rng.uniform(size=12)
        a, b = rng.dirichlet(np.ones(12)), rng.dirichlet(np.ones(12))
        assert w1_cdf(v, a, b) == pytest.approx(wasserstein_distance(v, v, a, b), rel=1e-10)


def test_vallender_w1_signed_is_a_norm_of_the_difference():
    """Eq. 3 depends on alpha - beta only and extends to signed measures."""
    v = np.array([0.0, 0.5, 2.0])
    assert w1_cdf(v, [0.5, -0.2, 0.7], [0.0, 0.0, 0.0]) == pytest.approx(0.5 * 0.5 + 0.3 * 1.5)
    assert w1_cdf(v, [1, 0, 0], [0, 0, 1]) == pytest.approx(2.0)


@pytest.mark.parametrize("p", [1, 2])
def test_sliced_distance_agrees_with_pot_same_projections(p):
    rng = np.random.default_rng(2)
    x, y = rng.uniform(size=(30, 2)), rng.uniform(size=(45, 2))
    a, b = rng.dirichlet(np.ones(30)), rng.dirichlet(np.ones(45))
    dirs = directions(2, 16, rng)
    ours = sliced_wasserstein(x, y, dirs, p=p, x_weights=a, y_weights=b)
    pot = ot.sliced_wasserstein_distance(x, y, a, b, p=p, projections=dirs.T)
    assert ours == pytest.approx(float(pot), rel=1e-9)


def test_sliced_distance_equal_size_matches_sorting_formula():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(50, 3)), rng.normal(size=(50, 3))
    dirs = directions(3, 8, rng)
    via_sort = np.mean([w2_squared_sorted(x @ t, y @ t) for t in dirs])
    assert sliced_wasserstein(x, y, dirs, p=2) ** 2 == pytest.approx(via_sort, rel=1e-10)
    pot = ot.sliced_wasserstein_distance(x, y, p=2, projections=dirs.T)
    assert float(pot) ** 2 == pytest.approx(via_sort, rel=1e-9)


def test_directions_are_unit_and_golden_angles_spread():
    rng = np.random.default_rng(4)
    for k in (1, 2, 3, 5):
        d = directions(k, 64, rng)
        assert np.allclose(np.linalg.norm(d, axis=1), 1.0)
    phi = np.sort(np.arctan2(*directions(2, 10, rng).T[::-1]) % np.pi)
    gaps = np.diff(np.concatenate([phi, [phi[0] + np.pi]]))
    assert gaps.max() < 2.7 * np.pi / 10  # 10 consecutive golden angles cover [0, pi) evenly


@pytest.fixture
def small_bank():
    sizes = [(2, 3), (4, 2), (3,)]
    centres = [clique_centres(s) for s in sizes]
    return centres, DirectionBank.build(centres, 12, np.random.default_rng(5))


def test_bank_rows_sort_each_clique(small_bank):
    centres, bank = small_bank
    for s, c in enumerate(centres):
        a, b = bank.cell_offsets[s], bank.cell_offsets[s + 1]
        for m in range(bank.M):
            order = bank.local_order(s, [m])[0]
            assert sorted(order.tolist()) == list(range(len(c)))
            th = bank.dirs[s][m % len(bank.dirs[s])]
            v = c[order] @ th
            assert np.all(np.diff(v) >= -1e-12)
            assert np.allclose(bank.gap[m, a : b - 1], np.diff(v), atol=1e-6)
            assert bank.gap[m, b - 1] == 0


def test_compiled_bank_equals_numpy_twin():
    rng = np.random.default_rng(11)
    for shape in [(2, 3), (5,), (3, 4, 2), (7, 6)]:
        c = clique_centres(shape)
        ds = directions(len(shape), 9, rng)  # one row for a 1-way marginal
        got = (np.zeros((len(ds), len(c)), dtype=np.int32), np.zeros((len(ds), len(c)), dtype=np.float32))
        want = (np.zeros_like(got[0]), np.zeros_like(got[1]))
        kernels.bank_rows(ds, c, *got)
        kernels.bank_rows_numpy(ds, c, *want)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def _autograd_w1(centres, bank, u, y, rows):
    """``sum_rows W_1`` per Eq. 3 by sorting with torch, and its gradient w.r.t. ``u - y`` (autograd)."""
    d = torch.tensor(np.concatenate(u) - np.concatenate(y), dtype=torch.float64, requires_grad=True)
    total = 0
    for s, c in enumerate(centres):
        seg = d[bank.cell_offsets[s] : bank.cell_offsets[s + 1]]
        for th in bank.dirs[s][np.asarray(rows) % len(bank.dirs[s])]:
            v = torch.tensor(c @ th)
            order = torch.argsort(v)
            total = total + (torch.cumsum(seg[order], 0)[:-1].abs() * torch.diff(v[order])).sum()
    total.backward()
    return d.grad.numpy()


def test_bank_w1_and_gradient_match_autograd(small_bank):
    """The torch code's prefix sums, restarted at every clique, give Eq. 3 per clique, and the
    closed-form gradient (torch code and compiled loop) equals autograd's up to a constant per clique."""
    centres, bank = small_bank
    flat = _Flat(bank, torch.device("cpu"))
    rng = np.random.default_rng(6)
    u = [rng.dirichlet(np.ones(len(c))) for c in centres]
    y = [rng.normal(size=len(c)) * 0.3 + 1.0 / len(c) for c in centres]
    delta = torch.tensor(np.concatenate(u) - np.concatenate(y), dtype=torch.float32)
    rows = slice(2, 9)
    got = sliced_w1_bank(flat, delta, rows)
    got_c = np.zeros(len(centres))
    kernels.sliced_w1(bank.order, bank.gap, bank.cell_offsets, delta.numpy(), 2, 7, got_c)
    for s, c in enumerate(centres):
        dirs = bank.dirs[s][np.arange(2, 9) % len(bank.dirs[s])]
        want = np.mean([w1_cdf(c @ th, u[s], y[s]) for th in dirs])
        assert got[s] == pytest.approx(want, rel=1e-5, abs=1e-6)
        assert got_c[s] == pytest.approx(want, rel=1e-5, abs=1e-6)
    ref = _autograd_w1(centres, bank, u, y, np.arange(2, 9))
    g_torch = _bank_w1_grad(flat, delta, 2, 7, 3, torch.zeros(flat.n_cells)).double().numpy()
    g_comp = np.zeros(bank.n_cells, dtype=np.float32)
    kernels._compiled("projection_run")  # compiles the gradient loop it inlines
    kernels._COMPILED["_w1_grad_rows"](bank.order, bank.gap, bank.cell_offsets, delta.numpy(), 2, 7, g_comp)
    for g in (g_torch, g_comp.astype(np.float64)):
        for s in range(len(centres)):
            a, b = bank.cell_offsets[s], bank.cell_offsets[s + 1]
            diff = g[a:b] - ref[a:b]
            assert np.allclose(diff, diff[0], atol=1e-5)


def test_init_measure_clips_and_renormalises():
    assert np.allclose(init_measure([0.5, -0.1, 0.25, 0.25]), [0.5, 0, 0.25, 0.25])
    assert np.allclose(init_measure([-1.0, -2.0]), [0.5, 0.5])


def test_quantize_sums_and_is_within_one():
    rng = np.random.default_rng(7)
    for n in (1, 10, 997):
        p = rng.dirichlet(np.ones(13) * 0.3)
        q = quantize(p, n)
        assert q.sum() == n and np.all(q >= 0)
        assert np.all(np.abs(q - n * p) < 1)
    with pytest.raises(ValueError):
        quantize([0.5, -0.5], 3)
    with pytest.raises(ValueError):
        quantize([0.5, 0.5], 0)


def test_embedding_centres_and_finalization_land_on_the_grid():
    assert np.allclose(attribute_centres(4), [0.125, 0.375, 0.625, 0.875])
    with pytest.raises(ValueError):
        attribute_centres(1)
    rng = np.random.default_rng(8)
    sizes = [2, 5, 17]
    pts = rng.uniform(-0.1, 1.1, size=(500, 3))
    codes = nearest_codes(pts, sizes)
    for j, n in enumerate(sizes):
        c = attribute_centres(n)
        brute = np.argmin(np.abs(np.clip(pts[:, j], 0, 1)[:, None] - c[None, :]), axis=1)
        assert np.array_equal(codes[:, j], brute)
    dom = Domain.from_sizes({"a": 2, "b": 5, "c": 17})
    ds = finalize(torch.tensor(pts, dtype=torch.float32).clamp(0, 1), dom)
    assert ds.codes.shape == (500, 3)
    assert np.all(ds.codes.max(axis=0) < np.array(sizes))
    # points exactly on centres map back to their code
    on_grid = np.stack([attribute_centres(n)[rng.integers(0, n, 50)] for n in sizes], axis=1)
    back = nearest_codes(on_grid, sizes)
    assert np.allclose((2 * back + 1) / (2 * np.array(sizes)), on_grid)


def test_make_consistent_agrees_on_shared_one_way_marginals():
    from margsynth.inference.privpgd.projection import make_consistent

    rng = np.random.default_rng(0)
    sizes = (3, 4, 5)
    cliques = list(itertools.combinations(range(3), 2))
    truth = rng.dirichlet(np.ones(int(np.prod(sizes)))).reshape(sizes)
    probs = []
    for c in cliques:
        other = tuple(x for x in range(3) if x not in c)
        m = truth.sum(axis=other).ravel() + rng.normal(0, 0.01, sizes[c[0]] * sizes[c[1]])
        m = np.maximum(m, 0)
        m[0] = 0.0  # a zero cell stays zero
        probs.append(m / m.sum())
    out = make_consistent(probs, cliques, sizes, iters=200)
    ones = {}
    for p, q, c in zip(probs, out, cliques):
        assert q.shape == p.shape and np.all(q >= 0) and q.sum() == pytest.approx(1.0)
        assert q[0] == 0.0
        t = q.reshape(sizes[c[0]], sizes[c[1]])
        for j, a in enumerate(c):
            ones.setdefault(a, []).append(t.sum(axis=1 - j))
    for ms in ones.values():
        assert len(ms) == 2
        np.testing.assert_allclose(ms[0], ms[1], atol=1e-6)
    # already consistent input (exact marginals) is left unchanged
    exact = [truth.sum(axis=tuple(x for x in range(3) if x not in c)).ravel() for c in cliques]
    for p, q in zip(exact, make_consistent(exact, cliques, sizes)):
        np.testing.assert_allclose(p, q, atol=1e-12)
