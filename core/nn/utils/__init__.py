"""``core.nn.utils``: gradient clipping, parameter/vector conversion, batch-norm fusion and the weight/spectral norm
reparametrisations, weight memory formats and ``skip_init``."""

from . import parametrizations, parametrize, rnn, stateless  # noqa: F401
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format, skip_init
from .weight_norm import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
           "fuse_linear_bn_eval", "fuse_linear_bn_weights", "weight_norm", "remove_weight_norm", "spectral_norm",
           "remove_spectral_norm", "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
           "skip_init"]
