"""Spatial transformers: ``affine_grid`` and ``grid_sample`` (``torch.nn.functional``).

Both check PyTorch's arguments and call the torch-level functions in ``core/ops/nn_functions.py``
(``affine_grid_generator``, ``grid_sampler``), composites of gather and arithmetic, so every device and autograd in
``input`` and ``grid`` come free.
"""

from __future__ import annotations

import warnings

from ...ops.nn_functions import affine_grid_generator, grid_sampler

__all__ = ["affine_grid", "grid_sample", "GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES"]

# grid_sample's mode names and the integers grid_sampler takes for them (torch.nn.functional's tables)
GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def _align_corners(align_corners) -> bool:
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", stacklevel=3)
        return False
    return bool(align_corners)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of a batch of affine matrices ``theta`` for an output of ``size`` (N, C, H, W) or
    (N, C, D, H, W) (``torch.nn.functional.affine_grid``)."""
    align_corners = _align_corners(align_corners)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(s) for s in size]
    rows = {4: 2, 5: 3}.get(len(size))
    if rows is None:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if theta.dim() != 3 or tuple(theta.shape[-2:]) != (rows, rows + 1):
        raise ValueError(f"Expected a batch of {rows}D affine matrices of shape Nx{rows}x{rows + 1} for size {size}. "
                         f"Got {list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return affine_grid_generator(theta, size, align_corners)


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros", align_corners=None):
    """Sample ``input`` at the normalised [-1, 1] points of ``grid`` (x first) by bilinear, nearest or (2-D) bicubic
    interpolation (``torch.nn.functional.grid_sample``)."""
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    return grid_sampler(input, grid, GRID_SAMPLE_INTERPOLATION_MODES[mode],
                        GRID_SAMPLE_PADDING_MODES[padding_mode], _align_corners(align_corners))
