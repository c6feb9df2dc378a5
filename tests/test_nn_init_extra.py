"""core.nn.init: the deprecated names without the trailing underscore, and ``init.Tensor``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import core
from core.nn import init
from core.testing import to_numpy

DEPRECATED = ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
              "kaiming_normal", "orthogonal", "sparse"]


def _seeded(seed=0, device="cpu") -> core.Generator:
    return core.Generator(device=device).manual_seed(seed)


@pytest.mark.parametrize("name", DEPRECATED)
def test_deprecated_name_warns_with_pytorchs_message(name):
    fn = getattr(init, name)
    assert fn.__name__ == name and f"{name}_" in fn.__doc__.splitlines()[0]
    t = core.empty(4, 3, 3)
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(name, ())
    if name in ("eye", "sparse"):
        t = core.empty(4, 3)
    with pytest.warns(FutureWarning, match=rf"`nn\.init\.{name}` is now deprecated in favor of `nn\.init\.{name}_`\."):
        out = fn(t, *args)
    assert out is t


def test_deprecated_names_fill_like_the_new_ones(device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        t = core.empty(3, 5, device=device)
        np.testing.assert_array_equal(to_numpy(init.constant(t, 2.5)), np.full((3, 5), 2.5))
        np.testing.assert_array_equal(to_numpy(init.eye(t)), np.eye(3, 5))
        w = init.dirac(core.empty(2, 2, 3, device=device))
        expected = np.zeros((2, 2, 3))
        expected[0, 0, 1] = expected[1, 1, 1] = 1
        np.testing.assert_array_equal(to_numpy(w), expected)
        # random fills draw exactly what the underscore forms draw from an equal generator
        for name, kwargs in [("uniform", {"a": -1.0, "b": 2.0}), ("normal", {"mean": 1.0, "std": 3.0}),
                             ("xavier_uniform", {"gain": 2.0}), ("xavier_normal", {}),
                             ("kaiming_uniform", {"mode": "fan_out", "nonlinearity": "relu"}),
                             ("kaiming_normal", {"a": 0.2}), ("orthogonal", {"gain": 1.5})]:
            old = getattr(init, name)(core.empty(6, 4, device=device), generator=_seeded(1, device), **kwargs)
            new = getattr(init, name + "_")(core.empty(6, 4, device=device), generator=_seeded(1, device), **kwargs)
            np.testing.assert_array_equal(to_numpy(old), to_numpy(new), err_msg=name)
    a = to_numpy(init.kaiming_uniform_(core.empty(6, 4, device=device), mode="fan_out", nonlinearity="relu"))
    assert np.abs(a).max() <= math.sqrt(2.0) * math.sqrt(3.0 / 6)


def test_deprecated_names_keep_the_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
            init.eye(core.empty(2, 2, 2))
        with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
            init.xavier_normal(core.empty(3))


def test_init_tensor_is_core_tensor():
    assert init.Tensor is core.Tensor


def test_trunc_normal_warns_when_mean_is_far_from_the_interval():
    with pytest.warns(UserWarning, match=r"mean is more than 2 std from \[a, b\] in nn.init.trunc_normal_"):
        init.trunc_normal_(core.empty(10), mean=5.0, std=1.0, a=-1.0, b=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = to_numpy(init.trunc_normal_(core.empty(1000), mean=0.5, std=1.0, a=-1.0, b=1.0))
    assert values.min() >= -1.0 and values.max() <= 1.0
