"""BLAS limited to one thread, around Private-PGM's fits and AIM's candidate scoring.

The estimation loop of :func:`~.estimation.estimate` (McKenna, Sheldon & Miklau,
"Graphical-model based estimation and inference for differential privacy", ICML 2019,
arXiv:1901.09136, Algorithm 1) calls BLAS only for dot products of its flat vectors, and
AIM's candidate scoring (McKenna, Mullins, Sheldon & Miklau, "AIM: An Adaptive and
Iterative Mechanism for Differentially Private Synthetic Data", PVLDB 15(11), 2022,
arXiv:2201.12677, Algorithm 2, the quality scores of the selection step) for matrix products of a few hundred cells. OpenBLAS spreads both over
threads whose spin-waiting costs far more than it saves; :func:`single_threaded_blas`
scopes a one-thread limit to such a call.
"""

from __future__ import annotations

import contextlib

try:
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
    ThreadpoolController = None

__all__ = ["single_threaded_blas"]

#: :func:`single_threaded_blas`'s view of the process's thread pools (threadpoolctl), found
#: once per process: listing the loaded libraries costs ~3 ms, per fit that was a tenth of
#: the setup of AIM's small round fits
_BLAS_CONTROLLER = None


def single_threaded_blas():
    """Context limiting BLAS to one thread: around every :func:`~.estimation.estimate`, and
    around AIM's candidate scoring (hundreds of small ``einsum`` contractions per round).

    The estimation loop's only BLAS calls are dot products of the flat vectors, the
    scoring's are matrix products of a few hundred cells; OpenBLAS spreads both over
    threads whose spin-waiting costs far more than it saves (measured: 9 ms instead of
    0.5 ms of CPU per iteration on a busy 2-core machine; AIM on adult took 20-25% more
    CPU than wall time with the scoring multi-threaded, none with it single-threaded).
    Scoped to the call; a no-op without threadpoolctl.
    """
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        if ThreadpoolController is None:  # pragma: no cover
            return contextlib.nullcontext()
        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")
