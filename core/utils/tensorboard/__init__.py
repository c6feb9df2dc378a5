"""TensorBoard logging (``torch.utils.tensorboard``): :class:`SummaryWriter`, written with the ``tensorboard``
package's own event-file writer and protocol buffers, so TensorBoard (and its ``EventAccumulator``) reads it.

Needs the ``tensorboard`` extra (``pip install 'core[tensorboard]'``: tensorboard, and Pillow for images).
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime

import numpy as np

from . import _summary

__all__ = ["SummaryWriter"]


def _require_tensorboard():
    try:
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as exc:
        raise ImportError("core.utils.tensorboard needs the tensorboard package: pip install 'core[tensorboard]' "
                          "(from a checkout: pip install -e '.[tensorboard]')") from exc
    return EventFileWriter


class SummaryWriter:
    """Writes scalars, histograms, images, text, hyperparameters and traced graphs to event files in ``log_dir``
    for TensorBoard (``torch.utils.tensorboard.SummaryWriter``).

    ``log_dir`` defaults to ``runs/<Mon>DD_HH-MM-SS_<host><comment>``, as PyTorch's. Events are queued and
    written by a background thread every ``flush_secs`` or ``max_queue`` events; :meth:`flush` and :meth:`close`
    write at once. ``purge_step`` is accepted and, as in PyTorch, makes TensorBoard hide events of an earlier
    crashed run at or after that step (written as a restart event).
    """

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = ""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self._writers: dict = {}  # log dir -> EventFileWriter (add_scalars and add_hparams write to sub-runs)
        self._writer(self.log_dir)

    # -- files ------------------------------------------------------------------------------------------
    def _writer(self, log_dir: str):
        writer = self._writers.get(log_dir)
        if writer is None:
            writer = _require_tensorboard()(log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self._writers[log_dir] = writer
            event = _summary.event(file_version="brain.Event:2")
            writer.add_event(event)
            if self.purge_step is not None:
                writer.add_event(_summary.event(step=self.purge_step, session_log=True))
        return writer

    def _add(self, summary, global_step, walltime, log_dir: str | None = None) -> None:
        self._writer(log_dir or self.log_dir).add_event(_summary.event(summary=summary, step=global_step,
                                                                       wall_time=walltime))

    def get_logdir(self) -> str:
        """The directory this writer writes to."""
        return self.log_dir

    def flush(self) -> None:
        """Write every pending event to disk."""
        for writer in self._writers.values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every event file (the writer cannot be used afterwards)."""
        for writer in self._writers.values():
            writer.flush()
            writer.close()
        self._writers.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- summaries --------------------------------------------------------------------------------------
    def add_scalar(self, tag: str, scalar_value, global_step: int | None = None, walltime: float | None = None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """One value of the curve ``tag`` at ``global_step`` (``new_style``: as a tensor of the scalars plugin,
        float64 with ``double_precision``)."""
        value = _summary.as_scalar("add_scalar", scalar_value)
        self._add(_summary.scalar(tag, value, new_style, double_precision), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step: int | None = None,
                    walltime: float | None = None) -> None:
        """Several curves on one chart: each key becomes the run ``<log_dir>/<main_tag>_<key>`` with tag
        ``main_tag``, as in PyTorch."""
        walltime = time.time() if walltime is None else walltime
        for key, value in tag_scalar_dict.items():
            run = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{key}")
            self._add(_summary.scalar(main_tag, _summary.as_scalar("add_scalars", value)), global_step, walltime,
                      run)

    def add_histogram(self, tag: str, values, global_step: int | None = None, bins="tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:
        """The distribution of ``values`` (``bins``: "tensorflow" for TensorFlow's exponential buckets, or any
        ``numpy.histogram`` bins: an int, a sequence of edges, "auto", ...)."""
        self._add(_summary.histogram(tag, _summary.as_array(values), bins, max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step: int | None = None, walltime: float | None = None) -> None:
        """A histogram from precomputed statistics and buckets (``bucket_limits[i]`` is bucket i's right edge)."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("add_histogram_raw(): len(bucket_limits) != len(bucket_counts)")
        self._add(_summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts),
                  global_step, walltime)

    def add_image(self, tag: str, img_tensor, global_step: int | None = None, walltime: float | None = None,
                  dataformats: str = "CHW") -> None:
        """One image (``dataformats`` "CHW", "HWC", "HW" ...; floats in [0, 1] or uint8 in [0, 255]), as PNG."""
        image = _summary.to_hwc(_summary.as_array(img_tensor), dataformats)
        self._add(_summary.image(tag, image), global_step, walltime)

    def add_images(self, tag: str, img_tensor, global_step: int | None = None, walltime: float | None = None,
                   dataformats: str = "NCHW") -> None:
        """A batch of images shown as one grid (``dataformats`` "NCHW", "NHWC" ...)."""
        batch = _summary.as_array(img_tensor)
        if batch.ndim != len(dataformats) or "N" not in dataformats:
            raise ValueError(f"add_images(): dataformats {dataformats!r} does not fit images of shape "
                             f"{list(batch.shape)}")
        batch = np.moveaxis(batch, dataformats.index("N"), 0)
        rest = dataformats.replace("N", "")
        self._add(_summary.image(tag, _summary.grid([_summary.to_hwc(b, rest) for b in batch])), global_step,
                  walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Text (markdown) under ``tag``."""
        self._add(_summary.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None,
                    run_name: str | None = None, global_step: int | None = None) -> None:
        """One trial for TensorBoard's HPARAMS tab: its hyperparameters and final metrics, in the run
        ``<log_dir>/<run_name>`` (default: the time), as PyTorch writes them."""
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError("add_hparams(): hparam_dict and metric_dict should be dictionaries")
        run = os.path.join(self.log_dir, run_name or str(time.time()))
        for summary in _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete or {}):
            self._add(summary, global_step, None, run)
        for name, value in metric_dict.items():
            self._add(_summary.scalar(name, _summary.as_scalar("add_hparams", value)), global_step, None, run)

    def add_graph(self, model, input_to_model=None, verbose: bool = False, use_strict_trace: bool = True) -> None:
        """The graph of ``model`` traced with ``core.jit.trace`` on ``input_to_model`` (a tensor or a tuple), as
        traced (before the passes fuse anything, as PyTorch draws its traced graph): one node per op, named by
        module scope, with its output shapes; TensorBoard's GRAPHS tab draws it."""
        from ...jit import trace

        inputs = input_to_model if isinstance(input_to_model, tuple) else (input_to_model,)
        traced = trace(model, inputs, optimize=False)
        graph_def = _summary.graph_def(traced.graph)
        if verbose:
            print(graph_def)
        self._writer(self.log_dir).add_event(_summary.event(graph_def=graph_def.SerializeToString()))

