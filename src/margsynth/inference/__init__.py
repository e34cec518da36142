"""inference."""

# Private-PGM: re-exports
from .pgm import (  # noqa: E402, F401
    Factor,
    GraphicalModel,
    JunctionTree,
    Measurement,
    ModelTooLargeError,
    build_junction_tree,
    estimate,
    junction_tree_size,
)
