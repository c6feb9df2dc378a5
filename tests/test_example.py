"""The README's main job: examples/train_digits.py trains, reaches its accuracy, saves and resumes, reports where
its files go, checks shapes on meta, and turns a bad device into a message with exit status 2."""

from __future__ import annotations

import csv
import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

import core
from core.plugins import get_manager

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "train_digits.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _log_rows(path: pathlib.Path) -> list:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_main_job_reaches_97_percent_and_resumes(tmp_path, device, capsys):
    if device != "cpu":
        pytest.skip("the full run is checked on the default device; other devices run the short test below")
    example = _load_example()
    checkpoint = tmp_path / "digits.ckpt"
    accuracy = example.main(["--device", device, "--out", str(tmp_path)])
    assert accuracy >= 0.97
    assert checkpoint.is_file()
    resumed = example.main(["--device", device, "--out", str(tmp_path), "--resume", "--epochs", "21"])
    out = capsys.readouterr().out
    assert "resumed from" in out and "epoch 21" in out and "epoch  1:" not in out.split("resumed from")[1]
    assert resumed >= 0.95
    assert [row["epoch"] for row in _log_rows(tmp_path / "digits-log.csv")] == [str(e) for e in range(1, 22)]


def test_short_run_prints_its_paths_and_a_summary_on_every_device(tmp_path, device, capsys):
    example = _load_example()
    accuracy = example.main(["--device", device, "--epochs", "2", "--out", str(tmp_path / "run")])
    assert accuracy > 0.5
    out = capsys.readouterr().out.splitlines()
    checkpoint, log = (tmp_path / "run" / "digits.ckpt").resolve(), (tmp_path / "run" / "digits-log.csv").resolve()
    backend = get_manager().backend_for(core.device(device).type).name
    assert out[:3] == [f"device: {device} (backend {backend})", f"checkpoint: {checkpoint}", f"log: {log}"]
    assert re.fullmatch(rf"done: test accuracy {re.escape(f'{accuracy:.1%}')} in \d+\.\d s on {device} "
                        rf"\(backend {backend}\), checkpoint {re.escape(str(checkpoint))}", out[-1]), out[-1]
    rows = _log_rows(log)
    assert [row["epoch"] for row in rows] == ["1", "2"]
    assert set(rows[0]) == {"epoch", "loss", "train_accuracy", "test_accuracy", "seconds"}
    assert float(rows[-1]["test_accuracy"]) == pytest.approx(accuracy, abs=1e-6)
    assert sorted(p.name for p in checkpoint.parent.iterdir()) == ["digits-log.csv", "digits.ckpt"]  # no temp files


def test_resume_continues_the_checkpoint_and_its_log(tmp_path, capsys):
    example = _load_example()
    checkpoint = tmp_path / "c.ckpt"
    example.main(["--device", "cpu", "--epochs", "1", "--checkpoint", str(checkpoint)])
    example.main(["--device", "cpu", "--epochs", "2", "--checkpoint", str(checkpoint), "--resume"])
    out = capsys.readouterr().out
    assert f"resumed from {checkpoint.resolve()} after epoch 1" in out
    assert "epoch  2:" in out.split("resumed from")[1] and "epoch  1:" not in out.split("resumed from")[1]
    assert core.load(checkpoint)["epoch"] == 2
    assert [row["epoch"] for row in _log_rows(tmp_path / "c-log.csv")] == ["1", "2"]


def test_resume_without_a_checkpoint_is_an_error_not_a_traceback(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _load_example().main(["--device", "cpu", "--out", str(tmp_path), "--resume"])
    assert exit_info.value.code == 2
    assert f"--resume: no checkpoint at {tmp_path.resolve() / 'digits.ckpt'}" in capsys.readouterr().err


def test_a_failing_save_keeps_the_previous_checkpoint_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    example = _load_example()
    checkpoint = tmp_path / "digits.ckpt"
    example.save_checkpoint({"epoch": 1, "weight": core.ones(3)}, checkpoint)
    before = checkpoint.read_bytes()

    def save_half_then_die(obj, handle):  # a kill (here: an interrupt) in the middle of writing
        handle.write(before[:len(before) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(core, "save", save_half_then_die)
    with pytest.raises(KeyboardInterrupt):
        example.save_checkpoint({"epoch": 2, "weight": core.zeros(3)}, checkpoint)
    monkeypatch.undo()
    assert checkpoint.read_bytes() == before
    assert core.load(checkpoint)["epoch"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["digits.ckpt"]


def test_meta_checks_shapes_and_writes_nothing(tmp_path, capsys):
    result = _load_example().main(["--device", "meta", "--out", str(tmp_path / "run")])
    assert result is None
    out = capsys.readouterr().out
    assert "meta computes shapes only" in out
    assert "forward: (32, 1, 8, 8) -> (32, 10)" in out and "loss: shape ()" in out
    assert out.splitlines()[-1].startswith(
        "done: shapes checked on meta (backend meta): forward, loss, backward, optimizer step;")
    assert not (tmp_path / "run").exists()


def test_help_gives_every_option_a_help_text_with_its_default_and_examples(capsys):
    example = _load_example()
    with pytest.raises(SystemExit) as exit_info:
        example.main(["--help"])
    assert exit_info.value.code == 0
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines, at spaces and after hyphens
    for action in example.build_parser()._actions:
        if action.dest == "help":
            continue
        assert action.help, f"{action.option_strings} has no help text"
        assert "(default: " in action.help, f"{action.option_strings} does not state its default"
    for shown in ("(default: 20)", "(default: 32)", "(default: 0.003)", "(default: 0)",
                  f"(default: {example.DEFAULT_OUT})", "(default: DIR/digits.ckpt)", "(default: off",
                  f"now {core.get_default_device()}", "examples:", "--resume --epochs 25", "--device meta",
                  "exit status:"):
        assert "".join(shown.split()) in text, shown


@pytest.mark.parametrize("name, message", [
    ("no_such_device", "'no_such_device'"),  # core's wording of a missing backend is its own; the name is in it
    ("cpu:x", "Invalid device string: 'cpu:x'"),
    ("cpu:7", "device 'cpu:7' does not exist"),
])
def test_a_bad_device_is_core_s_message_and_exit_status_2(name, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _load_example().main(["--device", name])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("train_digits.py: error: ") and message in err and "Traceback" not in err


def test_the_script_exits_2_on_an_unknown_device_without_a_traceback():
    result = subprocess.run([sys.executable, str(EXAMPLE), "--device", "no_such_device"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith("train_digits.py: error: ") and "'no_such_device'" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_a_run_that_fails_on_its_device_ends_with_one_clear_line(tmp_path, monkeypatch, capsys):
    example = _load_example()

    def fail(*args):
        raise RuntimeError("kernel build failed\nmore detail")

    monkeypatch.setattr(example, "train", fail)
    with pytest.raises(SystemExit) as exit_info:
        example.main(["--device", "cpu", "--out", str(tmp_path)])
    assert exit_info.value.code == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("train_digits.py: error: the run on cpu (backend ")
    assert "failed: RuntimeError: kernel build failed (traceback above" in last


def test_tensorboard_flag_logs_every_epoch_and_the_graph(tmp_path, capsys):
    pytest.importorskip("tensorboard", reason="the tensorboard extra is not installed")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _load_example().main(["--device", "cpu", "--out", str(tmp_path), "--epochs", "2",
                          "--tensorboard", str(tmp_path / "runs")])
    events = EventAccumulator(str(tmp_path / "runs"))
    events.Reload()
    assert set(events.Tags()["scalars"]) == {"loss/train", "accuracy/train", "accuracy/test"}
    log = _log_rows(tmp_path / "digits-log.csv")
    assert [round(e.value, 6) for e in events.Scalars("accuracy/test")] == [float(r["test_accuracy"]) for r in log]
    assert [e.step for e in events.Scalars("loss/train")] == [1, 2]
    assert any(n.op == "convolution" for n in events.Graph().node)


def test_amp_trains_to_the_float32_accuracy_and_resumes_its_scaler(tmp_path, device, capsys):
    """--amp: autocast in the device's low dtype (bfloat16 on cpu: no loss scaling; float16 elsewhere: a
    GradScaler, saved in the checkpoint); the full run is checked on cpu, two epochs elsewhere."""
    example = _load_example()
    full = device == "cpu"
    epochs = 20 if full else 2
    accuracy = example.main(["--device", device, "--amp", "--epochs", str(epochs), "--out", str(tmp_path)])
    assert accuracy >= (0.97 if full else 0.5)
    scaler = core.load(tmp_path / "digits.ckpt")["scaler"]
    low = core.get_autocast_dtype(core.device(device).type)
    assert (scaler == {}) == (low != core.float16)  # a disabled scaler's state is empty, as in PyTorch
    example.main(["--device", device, "--amp", "--epochs", str(epochs + 1), "--out", str(tmp_path), "--resume"])
    assert "resumed from" in capsys.readouterr().out


def test_capture_trains_the_same_model(tmp_path, device, capsys):
    """--capture replays the recorded training step: the same losses and accuracies as eager, epoch by epoch."""
    example = _load_example()
    for name, extra in (("eager", []), ("captured", ["--capture"])):
        example.main(["--device", device, "--epochs", "2", "--out", str(tmp_path / name)] + extra)
    eager, captured = (_log_rows(tmp_path / name / "digits-log.csv") for name in ("eager", "captured"))
    for a, b in zip(eager, captured):
        for field in ("loss", "train_accuracy", "test_accuracy"):
            assert float(b[field]) == pytest.approx(float(a[field]), rel=1e-4, abs=1e-5), (field, a, b)
