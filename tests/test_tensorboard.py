"""core.utils.tensorboard.SummaryWriter: what it writes is read back with TensorBoard's own EventAccumulator."""

from __future__ import annotations

import io

import numpy as np
import pytest

import core
from core import nn

pytest.importorskip("tensorboard", reason="the tensorboard extra is not installed (pip install -e '.[tensorboard]')")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from core.utils.tensorboard import SummaryWriter  # noqa: E402


def _read(path) -> EventAccumulator:
    acc = EventAccumulator(str(path), size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0})
    acc.Reload()
    return acc


def test_every_scalar_written_is_read_back(tmp_path, device):
    with SummaryWriter(tmp_path) as writer:
        for step in range(25):
            writer.add_scalar("loss", core.tensor(1.0 / (step + 1), device=device), step)
            writer.add_scalar("accuracy", step / 25, global_step=step, walltime=1000.0 + step)
        writer.add_scalar("exact", 0.1, 0, new_style=True, double_precision=True)
    acc = _read(tmp_path)
    loss = acc.Scalars("loss")
    assert [e.step for e in loss] == list(range(25))
    np.testing.assert_allclose([e.value for e in loss], [1.0 / (s + 1) for s in range(25)], rtol=1e-6)
    assert [e.wall_time for e in acc.Scalars("accuracy")] == [1000.0 + s for s in range(25)]
    assert acc.Tensors("exact")[0].tensor_proto.double_val == [0.1]


def test_add_scalars_writes_one_run_per_curve(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(3):
            writer.add_scalars("loss", {"train": step, "test": 2 * step}, step)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["loss_test", "loss_train"]
    assert [e.value for e in _read(tmp_path / "loss_test").Scalars("loss")] == [0, 2, 4]


def test_histograms(tmp_path):
    values = np.random.default_rng(0).normal(size=1000)
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("weights", core.tensor(values), 0)
        writer.add_histogram("coarse", values, 1, bins=10)
        writer.add_histogram("merged", values, 2, bins=100, max_bins=7)
        writer.add_histogram_raw("raw", 0, 3, 6, 9, 17, [1, 2, 3], [1, 2, 3], 3)
    acc = _read(tmp_path)
    for tag in ("weights", "coarse", "merged"):
        h = acc.Histograms(tag)[0].histogram_value
        assert h.num == 1000 and h.min == values.min() and h.max == values.max() and sum(h.bucket) == 1000
        np.testing.assert_allclose(h.sum_squares, values.dot(values))
    counts, edges = np.histogram(values, bins=10)
    coarse = acc.Histograms("coarse")[0].histogram_value
    assert list(coarse.bucket) == list(counts) and np.allclose(coarse.bucket_limit, edges[1:])
    assert len(acc.Histograms("merged")[0].histogram_value.bucket) <= 7
    raw = acc.Histograms("raw")[0].histogram_value
    assert (raw.num, list(raw.bucket_limit), list(raw.bucket)) == (6, [1, 2, 3], [1, 2, 3])
    with SummaryWriter(tmp_path) as writer, pytest.raises(ValueError, match="empty"):
        writer.add_histogram("none", np.array([]), 0)


def test_images_decode_to_what_was_written(tmp_path, device):
    from PIL import Image

    rng = np.random.default_rng(1)
    chw = rng.random((3, 4, 5)).astype(np.float32)
    with SummaryWriter(tmp_path) as writer:
        writer.add_image("chw", core.tensor(chw, device=device), 0)
        writer.add_image("gray", (rng.random((4, 5)) * 255).astype(np.uint8), 0, dataformats="HW")
        writer.add_images("batch", rng.random((10, 1, 2, 3)), 0)
        with pytest.raises(ValueError, match="dataformats"):
            writer.add_image("bad", chw, 0, dataformats="NCHW")
    acc = _read(tmp_path)
    img = acc.Images("chw")[0]
    decoded = np.asarray(Image.open(io.BytesIO(img.encoded_image_string)))
    assert decoded.shape == (4, 5, 3)
    np.testing.assert_array_equal(decoded, np.rint(chw.transpose(1, 2, 0) * 255).astype(np.uint8))
    gray = np.asarray(Image.open(io.BytesIO(acc.Images("gray")[0].encoded_image_string)))
    assert gray.shape == (4, 5, 3) and (gray[..., 0] == gray[..., 2]).all()
    batch = acc.Images("batch")[0]
    assert (batch.height, batch.width) == (2 * 2, 8 * 3)  # 10 images: 8 per row, 2 rows


def test_text_and_hparams(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_text("notes", "**lr** sweep", 0)
        writer.add_hparams({"lr": 0.1, "optimizer": "sgd", "nesterov": True, "width": core.tensor(64)},
                           {"hparam/accuracy": 0.9}, hparam_domain_discrete={"optimizer": ["sgd", "adam"]},
                           run_name="trial0")
        with pytest.raises(ValueError, match="'bad'"):
            writer.add_hparams({"bad": [1, 2]}, {})
    acc = _read(tmp_path)
    assert acc.Tensors("notes/text_summary")[0].tensor_proto.string_val == [b"**lr** sweep"]
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    run = _read(tmp_path / "trial0")
    content = run.PluginTagToContent(metadata.PLUGIN_NAME)
    start = HParamsPluginData.FromString(content[metadata.SESSION_START_INFO_TAG]).session_start_info
    assert start.hparams["lr"].number_value == 0.1 and start.hparams["optimizer"].string_value == "sgd"
    assert start.hparams["nesterov"].bool_value and start.hparams["width"].number_value == 64
    experiment = HParamsPluginData.FromString(content[metadata.EXPERIMENT_TAG]).experiment
    optimizer = next(h for h in experiment.hparam_infos if h.name == "optimizer")
    assert [v.string_value for v in optimizer.domain_discrete.values] == ["sgd", "adam"]
    assert [e.value for e in run.Scalars("hparam/accuracy")] == [pytest.approx(0.9)]


def test_graph_of_a_traced_model(tmp_path, device):
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)).to(device)
    with SummaryWriter(tmp_path) as writer:
        writer.add_graph(model, core.randn(5, 4, device=device))
    graph = _read(tmp_path).Graph()
    ops = [n.op for n in graph.node]
    assert ops.count("IO Node") == 2 and ops.count("Parameter") == 4 and "relu" in ops
    by_name = {n.name: n for n in graph.node}
    out = by_name["output/output.0"]
    assert [d.size for d in out.attr["_output_shapes"].list.shape[0].dim] == [5, 2]
    assert all(i.split(":")[0] in by_name for n in graph.node for i in n.input)  # every edge names a node


def test_default_log_dir_and_purge_step(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_exp", purge_step=5)
    writer.add_scalar("x", 1.0, 6)
    writer.close()
    log_dir = writer.get_logdir()
    assert log_dir.startswith("runs/") and log_dir.endswith("_exp")
    assert [e.step for e in _read(tmp_path / log_dir).Scalars("x")] == [6]
