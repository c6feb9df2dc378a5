"""The README's main job: examples/train_digits.py trains, reaches its accuracy, saves and resumes."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "train_digits.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_main_job_reaches_97_percent_and_resumes(tmp_path, device, capsys):
    if device != "cpu":
        pytest.skip("the full run is checked on the default device; other devices run the short test below")
    example = _load_example()
    checkpoint = tmp_path / "digits.ckpt"
    accuracy = example.main(["--device", device, "--checkpoint", str(checkpoint)])
    assert accuracy >= 0.97
    assert checkpoint.is_file()
    resumed = example.main(["--device", device, "--checkpoint", str(checkpoint), "--resume", "--epochs", "21"])
    out = capsys.readouterr().out
    assert "resumed from" in out and "epoch 21" in out and "epoch  1:" not in out.split("resumed from")[1]
    assert resumed >= 0.95


def test_short_run_on_every_device(tmp_path, device):
    example = _load_example()
    accuracy = example.main(["--device", device, "--epochs", "2", "--checkpoint", str(tmp_path / "c.ckpt")])
    assert accuracy > 0.5
