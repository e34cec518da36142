"""Is a figure printable? Problems found from matplotlib's own text extents.

:func:`layout_problems` draws the figure once, records every text artist that is actually drawn
(tick labels, axis labels, titles, legend entries and titles, annotations, colour-bar labels,
the figure's titles) with its window extent from the renderer, and reports, in words:

* two texts that overlap;
* a text that sticks out of the figure, or is cut off by its own clip box;
* a text covered by a colour bar or by a legend it is not part of, or lying on another panel;
* two panels (axes) that overlap;
* a legend drawn over the data of its panel (markers, lines, bars);
* an axis with tick labels but no label (a ``supxlabel`` / ``supylabel`` of the figure counts);
* a text that looks like a raw column name (a word with an underscore outside math text), unless
  its ``gid`` is ``"verbatim"`` (a name from the user's own table, shown as it is);
* a font smaller than ``min_fontsize`` points, or a figure wider than a paper's text width.

An empty list means the figure passes. Extents are those of the figure at its own size (what
:func:`~margsynth.plotting.save_figure` prints, with no cropping); ``tol`` pixels of contact are
allowed.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from . import TWO_COLUMN

__all__ = ["layout_problems"]

_MATH = re.compile(r"\$[^$]*\$")
_RAW_NAME = re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+\b")


def _drawn_texts(fig):
    """Draw ``fig``; return the renderer and the text artists drawn, in drawing order."""
    if not isinstance(fig.canvas, FigureCanvasAgg):  # pragma: no cover - figures of another backend
        FigureCanvasAgg(fig)
    drawn: list[Text] = []
    original = Text.draw

    def recording(self, renderer):
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)
        return original(self, renderer)

    Text.draw = recording
    try:
        fig.canvas.draw()
    finally:
        Text.draw = original
    return fig.canvas.get_renderer(), list(dict.fromkeys(drawn))


def _area(a: Bbox, b: Bbox, tol: float) -> bool:
    """Whether ``a`` and ``b`` overlap by more than ``tol`` pixels in both directions."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w > tol and h > tol


def _inside(inner: Bbox, outer: Bbox, tol: float) -> bool:
    return (
        inner.x0 >= outer.x0 - tol and inner.y0 >= outer.y0 - tol
        and inner.x1 <= outer.x1 + tol and inner.y1 <= outer.y1 + tol
    )  # fmt: skip


class _Roles:
    """Who owns each text of a figure (which axes, legend or colour bar) and how to name it."""

    def __init__(self, fig):
        self.fig = fig
        self.axes = [ax for ax in fig.axes if ax.get_visible()]
        self.index = {ax: i for i, ax in enumerate(self.axes)}
        self.legends: list[Legend] = [lg for lg in fig.legends if lg.get_visible()]
        self.legends += [ax.get_legend() for ax in self.axes if ax.get_legend() is not None]
        self.legends = [lg for lg in self.legends if lg.get_visible()]
        self.names: dict[int, str] = {}
        self.owner: dict[int, object] = {}  # id(text) -> Axes, Legend or the figure
        for ax in self.axes:
            kind = "colour bar" if self.is_colorbar(ax) else f"panel {self.index[ax] + 1}"
            title = ax.get_title() or ax.get_title("left") or ax.get_title("right")
            where = f"{kind}" + (f" ({title.splitlines()[0]!r})" if title and kind != "colour bar" else "")
            for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
                for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                    for lab in (tick.label1, tick.label2):
                        self._own(lab, ax, f"{name} tick label of {where}")
                self._own(axis.label, ax, f"{name} label of {where}")
                self._own(axis.get_offset_text(), ax, f"{name} offset text of {where}")
            for title_text in (ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)):
                self._own(title_text, ax, f"title of {where}")
            for t in ax.texts:
                self._own(t, ax, f"text in {where}")
        for lg in self.legends:
            where = "the figure's legend" if lg in fig.legends else "legend"
            for t in [*lg.get_texts(), lg.get_title()]:
                self._own(t, lg, f"{where} entry")
        for attr, name in (("_suptitle", "figure title"), ("_supxlabel", "figure x label"),
                           ("_supylabel", "figure y label")):  # fmt: skip
            self._own(getattr(fig, attr, None), fig, name)
        for t in fig.texts:
            self._own(t, fig, "figure text")

    def _own(self, text, owner, name):
        if text is not None and id(text) not in self.names:
            self.names[id(text)] = name
            self.owner[id(text)] = owner

    @staticmethod
    def is_colorbar(ax) -> bool:
        return hasattr(ax, "_colorbar")

    def name(self, t: Text) -> str:
        text = re.sub(r"\$\\mathdefault\{(.*?)\}\$", r"\1", t.get_text())
        return f"{self.names.get(id(t), 'text')} {text!r}"

    def axes_of(self, t: Text):
        owner = self.owner.get(id(t))
        if isinstance(owner, Legend):
            return owner.axes if owner not in self.fig.legends else None
        return owner if isinstance(owner, Axes) else None


def _twins(a, b) -> bool:
    return b in a.get_shared_x_axes().get_siblings(a) and np.allclose(a.get_position().bounds, b.get_position().bounds)


def _data_points(ax, renderer) -> np.ndarray:
    """Display coordinates of the data an axes shows: markers, points along lines, bar outlines."""
    pts = []
    for line in ax.lines:
        if not line.get_visible() or not isinstance(line, Line2D):
            continue
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), float))
        xy = xy[np.isfinite(xy).all(axis=1)]
        if line.get_linestyle() not in ("None", "", " ", "none") and len(xy) > 1:
            t = np.linspace(0, 1, 24)[:, None, None]
            xy = np.concatenate([xy, (xy[:-1] + t * (xy[1:] - xy[:-1])).reshape(-1, 2)])
        pts.append(xy)
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        if isinstance(coll, PathCollection):
            offs = coll.get_offsets()
            if len(offs):
                pts.append(coll.get_offset_transform().transform(np.asarray(offs, float)))
        elif isinstance(coll, LineCollection):
            trans = coll.get_transform()
            for seg in coll.get_segments():
                seg = trans.transform(np.asarray(seg, float))
                if len(seg) > 1:
                    t = np.linspace(0, 1, 12)[:, None, None]
                    pts.append((seg[:-1] + t * (seg[1:] - seg[:-1])).reshape(-1, 2))
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_height() and patch.get_width():
            box = patch.get_window_extent(renderer)
            xs, ys = np.linspace(box.x0, box.x1, 8), np.linspace(box.y0, box.y1, 8)
            pts.append(np.array([(x, y) for x in xs for y in ys]))
    if not pts:
        return np.empty((0, 2))
    out = np.concatenate(pts)
    out = out[np.isfinite(out).all(axis=1)]
    box = ax.get_window_extent(renderer)
    keep = (out[:, 0] >= box.x0) & (out[:, 0] <= box.x1) & (out[:, 1] >= box.y0) & (out[:, 1] <= box.y1)
    return out[keep]


def layout_problems(fig, *, max_width: float = TWO_COLUMN, min_fontsize: float = 6.0, tol: float = 0.5) -> list[str]:
    """Everything that makes ``fig`` unprintable, in words (an empty list: it passes)."""
    problems: list[str] = []
    width, height = fig.get_size_inches()
    if width > max_width + 0.01:
        problems.append(f"the figure is {width:.2f} in wide, more than a paper's text width ({max_width:g} in)")
    renderer, texts = _drawn_texts(fig)
    roles = _Roles(fig)
    fig_box = fig.bbox
    boxes = {id(t): t.get_window_extent(renderer) for t in texts}
    for t in texts:
        size = t.get_fontsize()
        if size < min_fontsize - 1e-9:
            problems.append(f"{roles.name(t)} is set in {size:g} pt, below {min_fontsize:g} pt")
        if t.get_gid() != "verbatim" and _RAW_NAME.search(_MATH.sub("", t.get_text())):
            problems.append(f"{roles.name(t)} looks like a raw column name (underscore)")
        box = boxes[id(t)]
        if not _inside(box, fig_box, tol):
            problems.append(f"{roles.name(t)} is cut off by the figure's edge")
        if t.get_clip_on():
            clip = t.get_clip_box()
            path = t.get_clip_path()
            if path is not None:
                clip = path.get_extents() if clip is None else Bbox.intersection(clip, path.get_extents()) or clip
            if clip is not None and not _inside(box, clip, tol):
                problems.append(f"{roles.name(t)} is clipped")
    for a, b in itertools.combinations(texts, 2):
        if _area(boxes[id(a)], boxes[id(b)], tol):
            problems.append(f"{roles.name(a)} overlaps {roles.name(b)}")
    # legends and colour bars cover only their own texts; no panel's text lies on another panel
    for lg in roles.legends:
        frame = lg.get_window_extent(renderer)
        own = {id(x) for x in [*lg.get_texts(), lg.get_title()]}
        for t in texts:
            if id(t) not in own and _area(boxes[id(t)], frame, tol):
                problems.append(f"a legend covers {roles.name(t)}")
        targets = [lg.axes] if lg not in fig.legends else roles.axes
        for ax in targets:
            if ax is None or roles.is_colorbar(ax):
                continue
            pts = _data_points(ax, renderer)
            inner = frame.padded(-tol)
            if len(pts) and inner.count_contains(pts):
                problems.append(f"a legend covers data of panel {roles.index[ax] + 1}")
    for ax in roles.axes:
        area = ax.get_window_extent(renderer)
        for t in texts:
            owner = roles.axes_of(t)
            if owner is ax or (owner is not None and _twins(owner, ax)):
                continue
            if _area(boxes[id(t)], area, tol):
                what = "a colour bar" if roles.is_colorbar(ax) else f"panel {roles.index[ax] + 1}"
                problems.append(f"{roles.name(t)} lies on {what}")
    for a, b in itertools.combinations(roles.axes, 2):
        if not _twins(a, b) and _area(a.get_window_extent(renderer), b.get_window_extent(renderer), tol):
            problems.append(f"panels {roles.index[a] + 1} and {roles.index[b] + 1} overlap")
    # every axis with tick labels has a label
    drawn = {id(t) for t in texts}
    sup = {"x": getattr(fig, "_supxlabel", None), "y": getattr(fig, "_supylabel", None)}
    for ax in roles.axes:
        if not ax.axison:
            continue
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            ticks = [*axis.get_major_ticks(), *axis.get_minor_ticks()]
            if not any(id(lab) in drawn for tick in ticks for lab in (tick.label1, tick.label2)):
                continue
            has_sup = sup[name] is not None and sup[name].get_text().strip()
            if id(axis.label) not in drawn and not has_sup:
                where = "colour bar" if roles.is_colorbar(ax) else f"panel {roles.index[ax] + 1}"
                problems.append(f"the {name} axis of {where} ({ax.get_title()!r}) has no label")
    return list(dict.fromkeys(problems))
