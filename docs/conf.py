"""Sphinx configuration of the margsynth documentation (``make docs``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))  # document this checkout, not an installed copy
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

import margsynth  # noqa: E402

project = "margsynth"
author = "the margsynth authors"
copyright = "the margsynth authors, MIT licence"  # noqa: A001
release = version = margsynth.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "myst_parser",
    "margsynth_cli",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_preserve_defaults = True
autodoc_mock_imports: list[str] = []
autosummary_generate = False
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_preprocess_types = False

# Type hints name many third-party classes (numpy, pandas, scipy, torch) that have no
# page here; do not treat their cross-references as broken.
nitpicky = False
suppress_warnings = ["myst.header"]

html_theme = "alabaster"
html_title = f"margsynth {release}"
html_static_path: list[str] = []
html_theme_options = {"description": "marginal-based differentially private synthetic data", "fixed_sidebar": True}
