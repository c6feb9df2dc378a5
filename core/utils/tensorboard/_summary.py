"""The protocol buffers a :class:`~core.utils.tensorboard.SummaryWriter` writes, built from ``tensorboard``'s own
message classes (``tensorboard.compat.proto``, the hparams and text plugins' protos) as PyTorch builds them."""

from __future__ import annotations

import io
import math
import time

import numpy as np


def _protos():
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2

    return event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2


def event(summary=None, step=None, wall_time=None, file_version=None, graph_def=None, session_log=False):
    """An ``Event`` holding one of: a summary, the file version, a serialized graph, a restart marker."""
    event_pb2, *_ = _protos()
    e = event_pb2.Event(wall_time=time.time() if wall_time is None else wall_time)
    if step is not None:
        e.step = int(step)
    if summary is not None:
        e.summary.CopyFrom(summary)
    if file_version is not None:
        e.file_version = file_version
    if graph_def is not None:
        e.graph_def = graph_def
    if session_log:
        e.session_log.status = event_pb2.SessionLog.START
    return e


def as_array(values) -> np.ndarray:
    """A NumPy array of a tensor (any device), an array or a sequence."""
    if hasattr(values, "_storage"):
        return values.detach().cpu().numpy()
    return np.asarray(values)


def as_scalar(op: str, value) -> float:
    """A one-element tensor, NumPy value or number as a float."""
    a = as_array(value)
    if a.size != 1:
        raise ValueError(f"{op}(): scalar value should have one element, got shape {list(a.shape)}")
    return float(a.reshape(()))


def _metadata(plugin_name: str, content: bytes = b""):
    _, summary_pb2, _, _ = _protos()
    return summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=plugin_name,
                                                                                          content=content))


def scalar(tag: str, value: float, new_style: bool = False, double_precision: bool = False):
    _, summary_pb2, tensor_pb2, tensor_shape_pb2 = _protos()
    if not new_style:
        return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
    if double_precision:
        tensor = tensor_pb2.TensorProto(double_val=[value], dtype="DT_DOUBLE")
    else:
        tensor = tensor_pb2.TensorProto(float_val=[value], dtype="DT_FLOAT")
    tensor.tensor_shape.CopyFrom(tensor_shape_pb2.TensorShapeProto())
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, tensor=tensor,
                                                                metadata=_metadata("scalars"))])


def _tensorflow_bins() -> list:
    """TensorFlow's default histogram edges: ±1e-12 growing by 10% up to 1e20, and 0."""
    edges, v = [], 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0.0] + edges


def histogram(tag: str, values: np.ndarray, bins, max_bins: int | None):
    values = values.astype(np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError("add_histogram(): the histogram is empty (no values)")
    counts, edges = np.histogram(values, bins=_tensorflow_bins() if isinstance(bins, str) and bins == "tensorflow"
                                 else bins)
    if max_bins is not None and len(counts) > max_bins:  # merge neighbours until at most max_bins remain
        group = math.ceil(len(counts) / max_bins)
        pad = (-len(counts)) % group
        counts = np.pad(counts, (0, pad)).reshape(-1, group).sum(1)
        edges = np.concatenate([edges[:-1:group], edges[-1:]])
    nonzero = np.flatnonzero(counts)
    first, last = (nonzero[0], nonzero[-1] + 1) if nonzero.size else (0, len(counts))
    return histogram_raw(tag, values.min(), values.max(), values.size, values.sum(), values.dot(values),
                         edges[first + 1:last + 1], counts[first:last])


def histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    _, summary_pb2, _, _ = _protos()
    from tensorboard.compat.proto.summary_pb2 import HistogramProto

    histo = HistogramProto(min=float(min), max=float(max), num=int(num), sum=float(sum),
                           sum_squares=float(sum_squares), bucket_limit=[float(b) for b in bucket_limits],
                           bucket=[float(c) for c in bucket_counts])
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, histo=histo)])


def to_hwc(image: np.ndarray, dataformats: str) -> np.ndarray:
    """``image`` laid out as ``dataformats`` ("CHW", "HWC", "HW") as uint8 height x width x 3 (or 4) channels."""
    if image.ndim != len(dataformats) or sorted(dataformats) not in (sorted("CHW"), sorted("HW")):
        raise ValueError(f"add_image(): dataformats {dataformats!r} does not fit an image of shape "
                         f"{list(image.shape)} (expected CHW, HWC, HW or another order of those letters)")
    if "C" not in dataformats:
        image, dataformats = image[..., None], dataformats + "C"
    hwc = np.transpose(image, [dataformats.index(c) for c in "HWC"])
    if hwc.shape[2] == 1:
        hwc = np.repeat(hwc, 3, axis=2)
    if hwc.dtype != np.uint8:  # floats are in [0, 1]
        hwc = np.clip(np.rint(hwc.astype(np.float64) * 255), 0, 255).astype(np.uint8)
    return hwc


def grid(images: list, columns: int = 8) -> np.ndarray:
    """HWC images of one size tiled row by row, ``columns`` per row (PyTorch's add_images layout)."""
    if not images:
        raise ValueError("add_images(): no images")
    h, w, c = images[0].shape
    columns = min(columns, len(images))
    rows = math.ceil(len(images) / columns)
    canvas = np.zeros((rows * h, columns * w, c), dtype=np.uint8)
    for k, img in enumerate(images):
        r, col = divmod(k, columns)
        canvas[r * h:(r + 1) * h, col * w:(col + 1) * w] = img
    return canvas


def image(tag: str, hwc: np.ndarray):
    """An image summary of a uint8 HWC array, encoded as PNG by Pillow."""
    try:
        from PIL import Image
    except ImportError as exc:
        raise ImportError("add_image() encodes PNG with Pillow: pip install 'core[tensorboard]'") from exc
    _, summary_pb2, _, _ = _protos()
    buffer = io.BytesIO()
    Image.fromarray(hwc).save(buffer, format="PNG")
    h, w, c = hwc.shape
    proto = summary_pb2.Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=buffer.getvalue())
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, image=proto)])


def text(tag: str, text_string: str):
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

    _, summary_pb2, tensor_pb2, tensor_shape_pb2 = _protos()
    tensor = tensor_pb2.TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf-8")],
                                    tensor_shape=tensor_shape_pb2.TensorShapeProto(
                                        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=1)]))
    metadata = _metadata("text", TextPluginData(version=0).SerializeToString())
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag + "/text_summary", metadata=metadata,
                                                                tensor=tensor)])


def hparams(hparam_dict: dict, metric_dict: dict, domains: dict) -> list:
    """The experiment, session-start and session-end summaries of TensorBoard's hparams plugin."""
    from google.protobuf.struct_pb2 import ListValue, Value
    from tensorboard.plugins.hparams import api_pb2, metadata
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

    _, summary_pb2, _, _ = _protos()
    start = SessionStartInfo()
    infos = []
    for name, value in hparam_dict.items():
        if value is None:
            continue
        if hasattr(value, "_storage") or isinstance(value, np.ndarray):
            value = as_scalar("add_hparams", value)
        if isinstance(value, bool):
            start.hparams[name].bool_value, kind, field = value, "DATA_TYPE_BOOL", "bool_value"
        elif isinstance(value, (int, float)):
            start.hparams[name].number_value, kind, field = value, "DATA_TYPE_FLOAT64", "number_value"
        elif isinstance(value, str):
            start.hparams[name].string_value, kind, field = value, "DATA_TYPE_STRING", "string_value"
        else:
            raise ValueError(f"add_hparams(): value of {name!r} should be one of int, float, str, bool, or a "
                             f"one-element tensor, got {type(value).__name__}")
        info = api_pb2.HParamInfo(name=name, type=api_pb2.DataType.Value(kind))
        if name in domains:
            info.domain_discrete.CopyFrom(ListValue(values=[Value(**{field: d}) for d in domains[name]]))
        infos.append(info)

    def wrapped(tag: str, **data):
        content = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **data).SerializeToString()
        return summary_pb2.Summary(value=[summary_pb2.Summary.Value(
            tag=tag, metadata=_metadata(metadata.PLUGIN_NAME, content))])

    experiment = api_pb2.Experiment(hparam_infos=infos, metric_infos=[
        api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k)) for k in metric_dict])
    end = SessionEndInfo(status=api_pb2.Status.Value("STATUS_SUCCESS"))
    return [wrapped(metadata.EXPERIMENT_TAG, experiment=experiment),
            wrapped(metadata.SESSION_START_INFO_TAG, session_start_info=start),
            wrapped(metadata.SESSION_END_INFO_TAG, session_end_info=end)]


def graph_def(graph):
    """A TensorFlow ``GraphDef`` of a core.jit graph: IO nodes for inputs and outputs, one node per parameter,
    constant and op, each with its ``_output_shapes`` (what TensorBoard's graph view reads)."""
    from tensorboard.compat.proto.attr_value_pb2 import AttrValue
    from tensorboard.compat.proto.graph_pb2 import GraphDef
    from tensorboard.compat.proto.node_def_pb2 import NodeDef
    from tensorboard.compat.proto.versions_pb2 import VersionDef

    from ...jit.ir import flat_values

    _, _, _, tensor_shape_pb2 = _protos()
    names: dict = {}  # Value id -> the NodeDef input naming it
    nodes = []

    def shapes(values) -> dict:
        dims = [tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(s))
                                                       for s in v.shape]) for v in values]
        return {"_output_shapes": AttrValue(list=AttrValue.ListValue(shape=dims)),
                "dtype": AttrValue(s=",".join(v.dtype.name for v in values).encode())}

    def add(name: str, op: str, inputs: list, outputs: list) -> None:
        nodes.append(NodeDef(name=name, op=op, input=[names[v.id] for v in inputs], attr=shapes(outputs)))
        for k, v in enumerate(outputs):
            names[v.id] = name if k == 0 else f"{name}:{k}"

    for v in graph.inputs:
        add(f"input/{v.name}", "IO Node", [], [v])
    for qualname, v in graph.params.items():
        add(qualname.replace(".", "/"), "Buffer" if qualname in graph.buffers else "Parameter", [], [v])
    for name, (v, _) in graph.constants.items():
        add(f"constant/{name}", "Constant", [], [v])
    for k, node in enumerate(graph.nodes):
        add(f"{node.op}_{k}", node.op, node.inputs, node.outputs)
    for k, v in enumerate(flat_values(graph.output)):
        nodes.append(NodeDef(name=f"output/output.{k}", op="IO Node", input=[names[v.id]], attr=shapes([v])))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
