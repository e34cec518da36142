"""Write a notebook from a compact cell list (used to author the numbered notebooks).

Usage in a script: ``write_notebook(path, [("md", "# Title"), ("params", "profile = 'quick'"), ("code", "...")])``.
Notebooks are stored without outputs; the ``params`` cell is tagged ``parameters`` for papermill.
"""

from __future__ import annotations

import nbformat


def write_notebook(path, cells) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, src in cells:
        if kind == "md":
            nb.cells.append(nbformat.v4.new_markdown_cell(src.strip()))
        elif kind == "params":
            nb.cells.append(nbformat.v4.new_code_cell(src.strip(), metadata={"tags": ["parameters"]}))
        elif kind == "code":
            nb.cells.append(nbformat.v4.new_code_cell(src.strip()))
        else:
            raise ValueError(f"unknown cell kind {kind!r}")
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"
    nbformat.validate(nb)
    nbformat.write(nb, path)
