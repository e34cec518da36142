"""inference."""

# Private-PGM (issue 4)
from .pgm import (  # noqa: E402
    Factor,
    GraphicalModel,
    JunctionTree,
    Measurement,
    ModelTooLargeError,
    build_junction_tree,
    estimate,
    junction_tree_size,
)
