"""Point labels that do not collide, and log axes whose tick labels do not run together.

:func:`label_points` places one label per point of a scatter: it settles the figure's layout
first, then tries, for each label, positions around its point at growing distances (right,
above, left, below, then the diagonals) and takes the first that stays inside the axes and
touches no marker, no label placed before and no legend; a label set further out gets a thin
leader line. :func:`log_axis` puts a log axis's ticks at 1-2-5 (or 1-3, or powers of ten,
whatever the range needs) with plain-number labels and no minor labels.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
from matplotlib.transforms import Bbox

__all__ = ["label_points", "log_axis", "plain_number"]

# (dx, dy) directions in order of preference, and how the text is anchored for each
_DIRECTIONS = [
    ((1, 0), "left", "center"), ((0, 1), "center", "bottom"), ((-1, 0), "right", "center"),
    ((0, -1), "center", "top"), ((1, 1), "left", "bottom"), ((-1, 1), "right", "bottom"),
    ((-1, -1), "right", "top"), ((1, -1), "left", "top"),
]  # fmt: skip
_DISTANCES = (3.5, 7.0, 11.0, 16.0, 22.0, 30.0)  # points from the marker's centre


def plain_number(value: float, _pos=None) -> str:
    """A tick label as a plain number: ``0.02``, ``0.5``, ``3``, ``100``, ``2000``; ``1e-05`` when tiny."""
    if value == 0 or not np.isfinite(value):
        return "0" if value == 0 else ""
    if 1e-4 <= abs(value) < 1e5:
        return f"{value:.6g}"
    return f"{value:.0e}".replace("e-0", "e-").replace("e+0", "e")


def log_axis(ax, which: str = "y", *, min_decades: float = 0.0) -> None:
    """Log scale on ``ax``'s ``which`` axis ("x" or "y") with ticks that fit: 1-2-5 within about
    a decade and a half, 1-3 within three decades, powers of ten beyond; plain-number labels.
    ``min_decades`` widens the limits (about the data's geometric centre) to at least that many
    decades, so that a difference of a few percent looks as small as it is."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")
    get, set_ = (ax.get_ylim, ax.set_ylim) if which == "y" else (ax.get_xlim, ax.set_xlim)
    lo, hi = sorted(get())
    decades = np.log10(hi / lo) if lo > 0 else 10.0
    if lo > 0 and decades < min_decades:
        centre = np.sqrt(lo * hi)
        lo, hi = centre / 10 ** (min_decades / 2), centre * 10 ** (min_decades / 2)
        set_(lo, hi)
        decades = min_decades
    subs = (1.0, 2.0, 5.0) if decades <= 1.6 else (1.0, 3.0) if decades <= 3.2 else (1.0,)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(plain_number))
    axis.set_minor_formatter(NullFormatter())


def _marker_radius(ax, renderer) -> float:
    sizes = [c.get_sizes() for c in ax.collections if hasattr(c, "get_sizes") and len(c.get_sizes())]
    area = max((float(np.max(s)) for s in sizes), default=20.0)  # points^2
    return renderer.points_to_pixels(np.sqrt(area) / 2 + 0.5)


def _points(ax) -> np.ndarray:
    pts = [c.get_offset_transform().transform(np.asarray(c.get_offsets(), float))
           for c in ax.collections if hasattr(c, "get_offsets") and len(c.get_offsets())]  # fmt: skip
    for line in ax.lines:
        pts.append(line.get_transform().transform(np.asarray(line.get_xydata(), float)))
    return np.concatenate(pts) if pts else np.empty((0, 2))


def label_points(ax, x, y, labels, *, fontsize: float | None = None, color="0.15", background: bool = False) -> list:
    """Label the points ``(x, y)`` of ``ax`` with ``labels`` so that no two labels, no label and
    marker, and no label and legend overlap, and every label stays inside the axes (set the axes'
    limits, scales and legend first). Returns the annotations; a label that finds no free place
    goes to the candidate that overlaps least (the figure check then reports it). ``background``
    puts each label on a translucent white box (over lines, as in a graph drawing)."""
    fig = ax.figure
    fig.canvas.draw()  # settle the layout: positions are measured on the final axes
    renderer = fig.canvas.get_renderer()
    area = ax.get_window_extent(renderer).padded(-2.0)
    obstacles = []
    radius = _marker_radius(ax, renderer)
    for px, py in _points(ax):
        if np.isfinite(px) and np.isfinite(py):
            obstacles.append(Bbox.from_extents(px - radius, py - radius, px + radius, py + radius))
    legend = ax.get_legend()
    if legend is not None:
        obstacles.append(legend.get_window_extent(renderer))
    xy = ax.transData.transform(np.column_stack([np.asarray(x, float), np.asarray(y, float)]))
    size = fontsize if fontsize is not None else max(6.0, 0.85 * float(ax.xaxis.label.get_fontsize()))
    ppx = renderer.points_to_pixels(1.0)
    # the most crowded points first: they have the fewest free places
    crowd = [int(np.sum(np.hypot(*(xy - p).T) < 40 * ppx)) for p in xy]
    out = [None] * len(xy)
    for i in sorted(range(len(xy)), key=lambda k: -crowd[k]):
        probe = ax.annotate(str(labels[i]), (0, 0), xycoords="figure pixels", fontsize=size)
        ext = probe.get_window_extent(renderer)
        probe.remove()
        w, h = ext.width, ext.height
        best, best_cost = None, np.inf
        for dist in _DISTANCES:
            for (dx, dy), ha, va in _DIRECTIONS:
                norm = np.hypot(dx, dy)
                ox, oy = dist * dx / norm, dist * dy / norm
                cx, cy = xy[i, 0] + ox * ppx, xy[i, 1] + oy * ppx
                x0 = cx if ha == "left" else cx - w if ha == "right" else cx - w / 2
                y0 = cy if va == "bottom" else cy - h if va == "top" else cy - h / 2
                box = Bbox.from_bounds(x0, y0, w, h)
                cost = sum(_overlap(box, o) for o in obstacles)
                # a label nearer to another point than to its own would name the wrong point
                own = _distance(xy[i], box)
                cost += 40.0 * sum(1 for k in range(len(xy)) if k != i and _distance(xy[k], box) < own)
                if not (box.x0 >= area.x0 and box.x1 <= area.x1 and box.y0 >= area.y0 and box.y1 <= area.y1):
                    cost += 1e6
                cost += 1e-3 * dist
                if cost < best_cost:
                    best, best_cost = (ox, oy, ha, va, dist, box), cost
            if best is not None and best_cost < 1.0:
                break
        ox, oy, ha, va, dist, box = best
        arrow = {"arrowstyle": "-", "lw": 0.5, "color": "0.5", "shrinkA": 0, "shrinkB": radius / ppx} if dist > 8 else None
        ann = ax.annotate(
            str(labels[i]), (x[i] if not hasattr(x, "iloc") else x.iloc[i], y[i] if not hasattr(y, "iloc") else y.iloc[i]),
            xytext=(ox, oy), textcoords="offset points", ha=ha, va=va, fontsize=size, color=color,
            arrowprops=arrow, annotation_clip=False,
            bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none", "alpha": 0.75} if background else None,
        )  # fmt: skip
        ann.set_in_layout(False)
        obstacles.append(box.padded(1.0))
        out[i] = ann
    return out


def _overlap(a: Bbox, b: Bbox) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0.0) * max(h, 0.0)


def _distance(p, box: Bbox) -> float:
    dx = max(box.x0 - p[0], 0.0, p[0] - box.x1)
    dy = max(box.y0 - p[1], 0.0, p[1] - box.y1)
    return float(np.hypot(dx, dy))
