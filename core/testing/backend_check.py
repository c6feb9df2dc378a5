"""One call for plugin authors: the op-conformance suite and gradient checks against a device.

:func:`check_backend` runs every ``OP_DB`` entry (``core.testing.conformance``) in every dtype it accepts and
gradcheck over a small set of differentiable entries (``core.testing.gradients``), with the CPU fallback off
(what passes is what the backend itself implements, directly or through core's decompositions) and debug mode
on (every kernel's output is checked against its op's meta function). Cases the author has not written yet go
in ``expected_failures``; an unexpected failure raises :class:`BackendCheckError` with a readable summary.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from .conformance import LAYOUTS, OP_DB, check_op
from .gradients import check_gradient, is_differentiable

__all__ = ["check_backend", "BackendReport", "BackendCheckError", "DEFAULT_GRAD_OPS"]

#: Differentiable entries gradchecked by default: the ops a training step leans on; fast on any backend.
DEFAULT_GRAD_OPS = ("add", "sub", "mul", "div", "neg", "exp", "log", "tanh", "sigmoid", "maximum", "where",
                    "sum[all]", "sum[dim-1-keepdim]", "mean[dims01]", "amax[dim-1-keepdim]", "logsumexp[dims01]",
                    "matmul", "gather")
_SHOWN_ERRORS = 40  # the summary lists this many failures, then counts the rest
_FIRST_LINE = 500  # characters of an error's first line in the summary (a value mismatch says it all there)


@dataclass
class BackendReport:
    """What :func:`check_backend` found; cases are ``"op:dtype"`` (conformance) or ``"op:grad"`` (gradcheck)."""

    device: str
    passed: list = field(default_factory=list)
    failed: dict = field(default_factory=dict)  # case -> "ErrorType: message"
    xfailed: list = field(default_factory=list)  # failed, and listed in expected_failures
    xpassed: list = field(default_factory=list)  # passed although listed: the list can shrink
    skipped: dict = field(default_factory=dict)  # case -> why

    @property
    def ok(self) -> bool:
        """No unexpected failure."""
        return not self.failed

    def todo(self) -> list:
        """The unexpected failures as the fewest expected-failures entries: a base name (``"sum"``) when all its
        cases failed, else an entry (``"sum[all]"``), else a base name and kind (``"amax:grad"``), else the case."""
        covered: dict = {}  # entry -> the cases of this run it covers
        for case in self.passed + self.xfailed + self.xpassed + list(self.failed) + list(self.skipped):
            for entry in _names(case):
                covered.setdefault(entry, []).append(case)
        entries = []
        for case in self.failed:
            op, kind = case.rsplit(":", 1)
            for entry in (_base(op), op, f"{_base(op)}:{kind}", case):
                if all(c in self.failed for c in covered[entry]):
                    entries.append(entry)
                    break
        return list(dict.fromkeys(entries))

    def summary(self) -> str:
        """Counts, each unexpected failure (grouped per op and error), unexpected passes, and a to-do list."""
        lines = [f"check_backend({self.device!r}): {len(self.passed)} passed, {len(self.failed)} failed, "
                 f"{len(self.xfailed)} expected failures, {len(self.xpassed)} unexpectedly passed, "
                 f"{len(self.skipped)} skipped"]
        groups: dict = {}  # (op, first line of the error) -> dtypes (or "grad")
        for case, error in self.failed.items():
            op, kind = case.rsplit(":", 1)
            first = (error.strip().splitlines() or ["?"])[0][:_FIRST_LINE]
            groups.setdefault((op, first), []).append(kind)
        if groups:
            lines.append("unexpected failures (fix the kernel, or add the case to expected_failures):")
            for (op, error), kinds in list(groups.items())[:_SHOWN_ERRORS]:
                lines.append(f"  {op} ({', '.join(kinds)}): {error}")
            if len(groups) > _SHOWN_ERRORS:
                lines.append(f"  ... and {len(groups) - _SHOWN_ERRORS} more")
            entries = [f'"{e}"' for e in self.todo()]
            lines.append("to accept them as the backend's to-do list: expected_failures=("
                         + ", ".join(entries) + ("," if len(entries) == 1 else "") + ")")  # ("neg",): a tuple
        if self.xpassed:
            lines.append("passed although listed in expected_failures (remove them from the list): "
                         + ", ".join(self.xpassed))
        return "\n".join(lines)


class BackendCheckError(AssertionError):
    """check_backend found failures that are not in the expected-failures list; ``.report`` has them all."""

    def __init__(self, report: BackendReport):
        super().__init__(report.summary())
        self.report = report


def _base(name: str) -> str:
    return name.split("[", 1)[0]


def _names(case: str) -> set:
    """The expected-failures entries that cover ``case`` (``"op:kind"``): the entry or its base name (``sum`` for
    ``sum[all]``), alone or with the kind (a dtype name, or ``grad``)."""
    op, kind = case.rsplit(":", 1)
    return {op, _base(op), case, f"{_base(op)}:{kind}"}


def _check_names(expected_failures) -> frozenset:
    """The entries as a set; ValueError naming those that cover no case of the suite (typos)."""
    from .conformance import ALL

    expected = frozenset(expected_failures)
    known = {n for info in OP_DB for n in (info.name, _base(info.name))}
    unknown = sorted(e for e in expected if e.split(":", 1)[0] not in known
                     or (":" in e and e.split(":", 1)[1] not in ALL + ("grad",)))
    if unknown:
        raise ValueError(f"check_backend(): expected_failures names no case of the conformance suite: "
                         f"{', '.join(unknown)} (entries look like 'exp', 'sum[all]', 'sum', 'exp:float16', "
                         f"'exp:grad')")
    return expected


def _select(names) -> list:
    """The OP_DB entries named (by entry or base name) in ``names``; all of them for None."""
    if names is None:
        return list(OP_DB)
    names = frozenset(names)
    return [info for info in OP_DB if info.name in names or _base(info.name) in names]


@contextlib.contextmanager
def _config(**values):
    """Set config keys for the duration, then put back whatever the API had set before."""
    from .. import config

    saved = {key: config._api[key] for key in values if key in config._api}
    try:
        for key, value in values.items():
            config.set(key, value)
        yield
    finally:
        for key in values:
            if key in saved:
                config.set(key, saved[key])
            else:
                config.reset(key)


# the TypeError core.ops.creation raises for a float64 (or complex128) tensor on a device without float64
FLOAT64_REFUSALS = ("does not support dtype float64", "does not support dtype complex128")


def refuses_float64(device: str, message: str) -> bool:
    """Whether an error ``message`` is ``device``'s declared refusal of float64 (and the device lacks float64)."""
    return any(refusal in message for refusal in FLOAT64_REFUSALS) and not _supports_float64(device)


def _supports_float64(device: str) -> bool:
    from ..device import device as as_device
    from ..plugins.manager import runtime_for

    return bool(getattr(runtime_for(as_device(device).type), "supports_float64", True))


def _forward(info, device: str, dtype: str, layouts) -> None:
    for layout in layouts:
        check_op(info, device, dtype, layout)


def _backward(info, device: str, layouts) -> None:
    for layout in layouts:
        check_gradient(info, device, layout)


def _record(report: BackendReport, case: str, listed: bool, check, *args) -> None:
    try:
        check(*args)
    except Exception as exc:  # noqa: BLE001 - the report collects every failure
        if listed:
            report.xfailed.append(case)
        else:
            report.failed[case] = f"{type(exc).__name__}: {exc}"
        return
    (report.xpassed if listed else report.passed).append(case)


def check_backend(device: str, expected_failures=(), *, ops=None, dtypes=None, layouts=LAYOUTS,
                  grad_ops=DEFAULT_GRAD_OPS, grad_layouts=("contiguous", "transposed"), fallback: bool = False,
                  debug: bool = True, strict: bool = False, raise_on_failure: bool = True) -> BackendReport:
    """Run the op-conformance suite and gradcheck against ``device``; raise BackendCheckError on surprises.

    ``expected_failures`` names cases the backend does not pass yet: an entry (``"exp"``, ``"sum[all]"``), a base
    name covering all its forms (``"sum"``), one dtype (``"exp:float16"``) or its gradient check (``"exp:grad"``).
    ``ops``/``dtypes``/``layouts`` restrict the conformance run (entries or base names), ``grad_ops`` names the
    gradchecked entries (``"all"`` for every differentiable one, ``()`` for none). ``fallback=True`` lets missing
    ops run through the CPU fallback; ``strict=True`` also fails on expected failures that pass.
    """
    expected = _check_names(expected_failures)
    wanted = _select(ops)
    grad_infos = [info for info in _select(None if grad_ops == "all" else grad_ops) if is_differentiable(info)]
    report = BackendReport(str(device))
    with _config(fallback=fallback, debug=debug):
        for info in wanted:
            for dtype in (d for d in info.dtypes if dtypes is None or d in dtypes):
                _record(report, f"{info.name}:{dtype}", bool(_names(f"{info.name}:{dtype}") & expected),
                        _forward, info, device, dtype, layouts)
        float64 = _supports_float64(device)
        for info in grad_infos:
            if not float64:
                report.skipped[f"{info.name}:grad"] = f"{device} does not support float64"
                continue
            _record(report, f"{info.name}:grad", bool(_names(f"{info.name}:grad") & expected),
                    _backward, info, device, grad_layouts)
    if raise_on_failure and (report.failed or (strict and report.xpassed)):
        raise BackendCheckError(report)
    return report
