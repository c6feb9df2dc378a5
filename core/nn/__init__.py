"""``core.nn``: modules, parameters, functionals and initialisation, written only in Tensor ops."""

import importlib as _importlib

from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401

# torch.nn.parallel is the package, not the star import's core.nn.modules.parallel (which holds DataParallel)
parallel = _importlib.import_module(f"{__name__}.parallel")


def factory_kwargs(kwargs) -> dict:
    """The ``device``/``dtype``/``memory_format`` entries of ``kwargs`` merged with its ``factory_kwargs`` dict, each
    given once (``torch.nn.factory_kwargs``)."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    result = dict(kwargs.get("factory_kwargs", {}))
    for key in sorted(simple_keys):
        if key in kwargs:
            if key in result:
                raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
            result[key] = kwargs[key]
    return result
