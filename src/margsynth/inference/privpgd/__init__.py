"""PrivPGD (Donhauser et al., ICML 2024) in PyTorch — the only torch user in margsynth.

>>> from margsynth.mechanisms.privpgd import PrivPGD                    # doctest: +SKIP
>>> res = PrivPGD.preset("fast").run(data, 2.5, 1e-5, np.random.default_rng(0))  # doctest: +SKIP

Modules: :mod:`.embedding` (Eq. 4), :mod:`.slicing` (Eq. 1-3, 8, direction banks),
:mod:`.projection` (Eq. 5), :mod:`.quantization` (Eq. 6), :mod:`.optimization` (Eq. 7-8),
:mod:`.finalize`, :mod:`.constraints` (§4.4), :mod:`.generator` (Algorithm 3: the
generation step, :class:`PrivPGDGenerator`), :mod:`~margsynth.inference.privpgd.kernels` (the compiled CPU loops of the
projection and optimization steps). The mechanism (SELECT, MEASURE, then this
generator) is :class:`margsynth.mechanisms.privpgd.PrivPGD`. The equations settled on are
listed in :mod:`.generator`'s docstring.
"""

from ..torch_utils import resolve_device
from .constraints import ThresholdConstraint, ThresholdPenalty
from .embedding import attribute_centres, clique_centres, embed, nearest_codes
from .finalize import finalize
from .generator import PrivPGDGenerator
from .optimization import OptimizerConfig, optimize_particles
from .projection import project_measures
from .quantization import quantize
from .slicing import DirectionBank, directions, sliced_wasserstein, w1_cdf, w2_squared_sorted

__all__ = [
    "DirectionBank",
    "OptimizerConfig",
    "PrivPGDGenerator",
    "ThresholdConstraint",
    "ThresholdPenalty",
    "attribute_centres",
    "clique_centres",
    "directions",
    "embed",
    "finalize",
    "nearest_codes",
    "optimize_particles",
    "project_measures",
    "quantize",
    "resolve_device",
    "sliced_wasserstein",
    "w1_cdf",
    "w2_squared_sorted",
]
