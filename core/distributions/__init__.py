"""Probability distributions with sampling, reparameterized sampling, densities and KL divergences
(``torch.distributions``), built from core ops: they run on every device and differentiate."""

from __future__ import annotations

from . import constraints  # noqa: F401
from .constraint_registry import *  # noqa: F401,F403
from .continuous import *  # noqa: F401,F403
from .discrete import *  # noqa: F401,F403
from .distribution import *  # noqa: F401,F403
from .multivariate import *  # noqa: F401,F403
from .transformed import *  # noqa: F401,F403
from .transforms import *  # noqa: F401,F403
from .kl import *  # noqa: F401,F403
