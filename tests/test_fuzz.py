"""The differential fuzzer (core.testing.fuzz): a small budget on every available backend, and the fuzzer itself."""

from __future__ import annotations

import numpy as np
import pytest

from core.testing import fuzz

SMALL_BUDGET = 300  # per device; the long budget is in docs/user-guide.md ("Fuzzing")


def test_a_small_budget_matches_the_reference(device):
    summary = fuzz.fuzz(device, SMALL_BUDGET, seed=0, batch=SMALL_BUDGET, verbose=False)
    assert summary["cases"] == SMALL_BUDGET
    assert not summary["mismatches"] and not summary["crashes"], fuzz.format_summary(summary)
    # the cases run, rather than both sides raising (a device without float64 refuses the float64 cases)
    assert summary["passed"] > (SMALL_BUDGET - summary["unsupported"]) * 0.9


def test_cases_are_reproducible_and_cover_shapes_layouts_and_families():
    cases = [fuzz.draw_case(0, i) for i in range(1500)]
    again = fuzz.draw_case(0, 7)
    assert again.op == cases[7].op and again.dtype == cases[7].dtype
    assert all(np.array_equal(a, b, equal_nan=True) and la == lb
               for (a, la), (b, lb) in zip(again.inputs, cases[7].inputs))
    shapes = [v.shape for case in cases for v, _ in case.inputs]
    assert {len(s) for s in shapes} >= {0, 1, 2, 3, 4, 5}
    assert any(0 in s for s in shapes) and any(1 in s for s in shapes)
    assert {layout[0] for case in cases for _, layout in case.inputs} == \
        {"contiguous", "transposed", "stepped", "expanded", "flipped"}
    assert {case.dtype for case in cases} >= {"float32", "float64", "float16", "bfloat16", "int64", "int32", "int16",
                                              "int8", "uint8", "bool"}
    assert len(fuzz.FAMILIES) >= 20 and len({fuzz._family_key(case.op) for case in cases}) >= 40


def test_layouts_are_views_with_the_drawn_values():
    values = np.arange(24.0).reshape(2, 3, 4)
    for layout, contiguous in ((("transposed", (2, 0, 1)), False), (("stepped", (2, 1, 3), (1, 0, 1)), False),
                               (("flipped", (0, 2)), True), (("contiguous",), True)):
        tensor = fuzz.make_view(values, layout, "cpu")
        assert np.array_equal(tensor.numpy(), values) and tensor.is_contiguous() == contiguous, layout
    for layout in (("contiguous",), ("stepped", (), ()), ("flipped", ())):  # a 0-d input stays 0-d
        assert fuzz.make_view(np.array(2.5), layout, "cpu").shape == ()
    expanded = fuzz.make_view(np.broadcast_to(values[:, :1], (2, 3, 4)), ("expanded", (1,)), "cpu")
    assert expanded.stride()[1] == 0 and np.array_equal(expanded.numpy(), np.broadcast_to(values[:, :1], (2, 3, 4)))


def _first_case(op: str) -> int:
    """The first case of seed 0 calling ``op`` on a non-empty input."""
    return next(i for i in range(2000) if (case := fuzz.draw_case(0, i)).op == op and case.inputs[0][0].size)


@pytest.fixture
def broken_neg(tmp_path, monkeypatch):
    """A module that, imported first by the device's workers, replaces cpu's ``neg`` by ``body``."""
    def write(body: str) -> str:
        (tmp_path / "fuzz_broken_neg.py").write_text(
            "import os\nimport core\ncore.neg(core.ones(1))\n"
            f"core.library.impl('neg', 'cpu', lambda spec, x: {body}, override=True)\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setenv("PYTHONPATH", str(tmp_path))
        return "fuzz_broken_neg"
    return write


def test_a_wrong_kernel_is_a_mismatch_with_its_case_id(broken_neg):
    index = _first_case("neg")
    summary = fuzz.fuzz("cpu", index + 1, seed=0, batch=index + 1, verbose=False,
                        preload=broken_neg("core.tensor(1 - x.numpy(), dtype=spec.dtype)"))
    case_id, op, _, what = summary["mismatches"][0]
    assert (case_id, op) == (f"0:{index}", "neg") and "elements differ" in what
    assert f"MISMATCH 0:{index} neg" in fuzz.format_summary(summary)


def test_a_crash_is_counted_with_its_case_and_the_batch_goes_on(broken_neg):
    index = _first_case("neg")
    summary = fuzz.fuzz("cpu", index + 3, seed=0, batch=index + 3, verbose=False, preload=broken_neg("os.abort()"))
    crashed = [case_id for case_id, _, _, _ in summary["crashes"]]
    assert f"0:{index}" in crashed and summary["cases"] == index + 3
    assert summary["passed"] + summary["raised"] + len(summary["crashes"]) == index + 3  # the cases after it ran


def test_an_expected_failure_is_reported_not_hidden(broken_neg):
    index = _first_case("neg")
    summary = fuzz.fuzz("cpu", index + 1, seed=0, batch=index + 1, verbose=False,
                        expected_failures={("cpu", "neg"): "neg is broken on purpose, case 0:%d" % index},
                        preload=broken_neg("core.tensor(1 - x.numpy(), dtype=spec.dtype)"))
    assert not summary["mismatches"] and summary["xfailed"][0][:2] == (f"0:{index}", "neg")
    assert "expected failure neg: neg is broken on purpose" in fuzz.format_summary(summary)
