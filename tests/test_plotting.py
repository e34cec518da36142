"""The figure functions of ``margsynth.plotting`` and the figure check, on small synthetic tables.

The check itself is tested on figures built to fail it (text over text, text off the figure,
a colour bar over a title, a legend over data, an axis without a label); every notebook's real
figures go through it in tests/test_notebooks.py."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from margsynth.experiments import mgd_table1  # noqa: E402
from margsynth.experiments import privpgd_benchmark as bench  # noqa: E402
from margsynth.plotting import ONE_COLUMN, TWO_COLUMN, mgd, nist_mst, privpgd, style  # noqa: E402
from margsynth.plotting.check import layout_problems  # noqa: E402
from margsynth.plotting.labels import label_points, log_axis, plain_number  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _clean(width=ONE_COLUMN):
    with style():
        fig, ax = plt.subplots(figsize=(width, 2.5))
        ax.plot([1, 2, 3], [3, 1, 2], marker="o")
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_title("a panel")
    return fig, ax


def test_a_clean_figure_passes():
    fig, _ = _clean()
    assert layout_problems(fig) == []


def test_overlapping_texts_are_found():
    fig, ax = _clean()
    ax.text(2, 2, "first label")
    ax.text(2, 2, "second label")
    problems = layout_problems(fig)
    assert any("'first label' overlaps" in p and "'second label'" in p for p in problems), problems


def test_crowded_tick_labels_are_found():
    fig, ax = _clean()
    ax.set_xticks(np.linspace(1, 3, 40), [f"{v:.3f}" for v in np.linspace(1, 3, 40)])
    assert any("x tick label" in p and "overlaps" in p for p in layout_problems(fig))


def test_text_off_the_figure_is_found():
    fig, ax = _clean()
    ax.text(3.2, 2, "a label that runs far beyond the right edge of the figure").set_in_layout(False)
    assert any("cut off by the figure's edge" in p for p in layout_problems(fig))


def test_a_missing_axis_label_is_found():
    fig, ax = _clean()
    ax.set_ylabel("")
    assert any("the y axis of panel 1" in p for p in layout_problems(fig))


def test_a_colour_bar_over_a_title_is_found():
    with style():
        fig, axes = plt.subplots(1, 2, figsize=(TWO_COLUMN, 2.5), layout="none")
        for ax in axes:
            image = ax.imshow(np.arange(4.0).reshape(2, 2))
            ax.set(xlabel="x", ylabel="y", title="a rather long panel title here")
        cax = fig.add_axes([0.40, 0.05, 0.05, 0.92])  # over the first panel's title
        fig.colorbar(image, cax=cax).set_label("value")
    problems = layout_problems(fig)
    assert any("lies on a colour bar" in p for p in problems), problems


def test_a_legend_over_data_is_found():
    with style():
        fig, ax = plt.subplots(figsize=(ONE_COLUMN, 2.5))
        ax.plot(np.linspace(0, 1, 50), np.full(50, 0.9), label="a line near the top")
        ax.set(xlabel="x", ylabel="y", ylim=(0, 1))
        ax.legend(loc="upper center")
    assert any("legend covers data" in p for p in layout_problems(fig))


def test_a_raw_column_name_is_found_unless_marked_verbatim():
    fig, ax = _clean()
    ax.set_title("tv_2way")
    assert any("raw column name" in p for p in layout_problems(fig))
    ax.title.set_gid("verbatim")
    assert not any("raw column name" in p for p in layout_problems(fig))


def test_a_figure_wider_than_the_page_is_found():
    fig, _ = _clean(width=9.0)
    assert any("wide" in p for p in layout_problems(fig))


def test_label_points_keeps_labels_apart_even_for_coincident_points():
    with style():
        fig, ax = plt.subplots(figsize=(ONE_COLUMN, 2.5))
        x = np.array([1.0, 1.0, 1.02, 2.0, 2.01, 3.0])
        y = np.array([1.0, 1.0, 1.01, 2.0, 2.0, 3.0])
        ax.scatter(x, y)
        ax.set(xlabel="x", ylabel="y", xlim=(0, 4), ylim=(0, 4))
        label_points(ax, x, y, ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"])
    assert layout_problems(fig) == []
    assert len(ax.texts) == 6


def test_log_axis_spans_at_least_the_minimum_and_labels_plain_numbers():
    with style():
        fig, ax = plt.subplots()
        ax.plot([1, 2], [0.146, 0.151])
        log_axis(ax, "y", min_decades=1.0)
    lo, hi = ax.get_ylim()
    assert np.log10(hi / lo) == pytest.approx(1.0)
    assert plain_number(0.02) == "0.02" and plain_number(300.0) == "300" and plain_number(1e-6) == "1e-6"


def test_relative_labels_never_print_x1_beside_the_best():
    assert privpgd.relative_label(1.0) == "best"
    assert privpgd.relative_label(1.004) == "×1.004"
    assert privpgd.relative_label(1.04) == "×1.04"
    assert privpgd.relative_label(2.34) == "×2.3"
    assert privpgd.relative_label(17.2) == "×17"
    assert privpgd.relative_label(np.inf) == "∞"


def _relative_table(datasets=("a", "b"), epsilons=(0.2, 2.5)):
    rows = [
        {"dataset": d, "epsilon": e, "method": m, "seed": 0,
         **{k: 1.0 + i + j for j, k in enumerate(bench.METRIC_LABELS)}}
        for d in datasets for e in epsilons for i, m in enumerate(bench.METHOD_ORDER)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_relative_performance_shows_every_method_dataset_and_epsilon():
    rel = bench.relative_performance(_relative_table())
    fig = privpgd.relative_performance(rel)
    panels = [ax for ax in fig.axes if ax.get_images()]
    assert len(panels) == len(bench.METRIC_LABELS)
    for ax in panels:  # one cell per (method, dataset and ε): the best method's cell is drawn too
        assert ax.get_images()[0].get_array().shape == (7, 4)
        assert [t.get_text() for t in ax.texts].count("best") == 4
    assert [t.get_text() for t in panels[0].get_yticklabels()] == list(bench.METHOD_ORDER)
    assert layout_problems(fig) == []


def test_distances_marks_epsilon_by_size_not_by_text():
    runs = _relative_table(datasets=("a", "b"))
    fig = privpgd.distances(bench.distance_table(runs))
    assert not any(t.get_text().startswith("ε=") for ax in fig.axes for t in ax.texts)
    legend = fig.legends[0]
    assert {"ε = 0.2", "ε = 2.5"} <= {t.get_text() for t in legend.get_texts()}
    assert layout_problems(fig) == []


def test_figure3_points_are_labelled_with_their_parameter():
    names = ["lap-0.5", "lap-4.0", "sample-0.25", "mediocre", "very-poor"]
    ours = pd.DataFrame({"range_query": [9.5, 1.0, 0.007, 1.0, 9.5], "inv_pie": [0.96, 0.57, 0.55, 0.57, 0.96],
                         "mgd": [7.5, 0.66, 0.017, 0.66, 7.5], "aemc_3way": [7.1, 0.27, 0.031, 0.27, 7.1]},
                        index=names)  # fmt: skip
    fig = mgd.figure3(ours)
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert texts == {"0.5", "4", "0.25", "mediocre", "very poor"}
    assert layout_problems(fig) == []
    assert mgd.point_kind("PrivSyn-1") == ("PrivSyn", "1")


def test_draw_selection_uses_one_layout_and_marks_changing_cliques():
    nodes = ["a", "b", "c", "d", "e"]
    fig3 = pd.DataFrame(
        [
            (0.3, ("a", "b"), "tree", True, False),
            (0.3, ("b", "c"), "tree", False, False),
            (0.3, ("c", "d", "e"), "designated", True, True),
            (8.0, ("a", "b"), "tree", True, False),
            (8.0, ("a", "c"), "extra pair", False, False),
            (8.0, ("a", "b", "c"), "triple", False, False),
            (8.0, ("c", "d", "e"), "designated", True, True),
        ],
        columns=["epsilon", "clique", "kind", "all epsilons", "designated attributes"],
    )
    fig, axes = plt.subplots(1, 2)
    pos, handles = nist_mst.draw_selection(axes[0], fig3, 0.3, nodes, designated=("c", "d", "e"))
    pos2, _ = nist_mst.draw_selection(axes[1], fig3, 8.0, nodes, pos, designated=("c", "d", "e"))
    assert pos2 is pos and set(pos) == set(nodes) and len(handles) == 4
    gold = [ln for ln in axes[0].lines if ln.get_color() == "gold"]
    assert len(gold) == 1  # (b, c) is selected at 0.3 only
    assert len(axes[1].patches) == 2  # the triple's and the designated clique's triangles
    assert {t.get_text() for t in axes[0].texts} == set(nodes)
    whole = nist_mst.selection(fig3, [0.3, 8.0], nodes, designated=("c", "d", "e"))
    assert layout_problems(whole) == []


def test_quick_profiles_have_what_their_figures_claim():
    # MGD Figure 3: every scored file on every panel; PrivPGD Figure 1: several datasets and budgets
    assert mgd_table1.PROFILES["quick"]["three_way"] == "all"
    quick = bench.PROFILES["quick"]
    assert len(quick["datasets"]) >= 2 and len(quick["epsilons"]) >= 2
    assert all(p.get("preset", "fast") == "fast" for p in quick["params"].values())
