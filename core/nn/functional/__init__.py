"""``core.nn.functional``: the stateless form of every layer and loss."""

from ...tensor import Tensor  # noqa: F401 - torch.nn.functional.Tensor is torch.Tensor
from ._utils import assert_int_or_pair  # noqa: F401
from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
