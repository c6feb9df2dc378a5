"""``core.nn``: modules, parameters, functionals and initialisation, written only in Tensor ops."""

from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
