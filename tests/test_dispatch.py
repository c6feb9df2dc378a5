"""The dispatcher: keys, key sets, resolution and its cache, core.library, the meta device."""

from __future__ import annotations

import threading

import pytest

import core
from core import library
from core.dispatch import DispatchKey, TensorSpec, backend_key, get_operator, keys_in, tls
from core.dispatch.operator import _FUNCTIONALITY_FALLBACKS, set_functionality_fallback


def _same_shape_meta(x, *rest):
    return TensorSpec(x._shape, x.dtype, x.device)


def test_key_order_functionality_above_backends():
    cpu, meta = backend_key("cpu"), backend_key("meta")
    assert DispatchKey.Tracer.bit > DispatchKey.Profiler.bit > DispatchKey.Autocast.bit > DispatchKey.Autograd.bit
    assert DispatchKey.Autograd.bit > meta.bit > cpu.bit
    assert keys_in(DispatchKey.Autograd.mask | cpu.mask) == [DispatchKey.Autograd, cpu]


def test_backend_keys_are_allocated_at_run_time():
    a, b = backend_key("devone"), backend_key("devtwo")
    assert a is backend_key("devone") and a.bit != b.bit and a.is_backend and b.is_backend
    assert a.bit < DispatchKey.Autograd.bit


def test_library_define_impl_and_duplicate_registration():
    op = library.define("testlib::scale", meta=_same_shape_meta)

    @library.impl("testlib::scale", "cpu")
    def scale_cpu(spec, x, k):
        return x * k

    assert op(core.ones(2), 3.0).tolist() == [3.0, 3.0]
    assert library.ops.testlib.scale(core.ones(1), 2.0).tolist() == [2.0]
    with pytest.raises(RuntimeError, match="already registered"):
        library.impl("testlib::scale", "cpu", scale_cpu)
    library.impl("testlib::scale", "cpu", lambda spec, x, k: x * k * 10, override=True)
    assert op(core.ones(1), 1.0).tolist() == [10.0]
    # the meta device runs the meta function only
    m = op(core.ones(4, 5, device="meta"), 2.0)
    assert m.device.type == "meta" and m.shape == (4, 5)
    with pytest.raises(RuntimeError, match="already declared"):
        library.define("testlib::scale")
    with pytest.raises(ValueError, match="namespace::name"):
        library.define("nonamespace")


def test_library_composite_runs_on_every_device():
    lib = library.Library("testlib2", "DEF")
    op = lib.define("double_plus_one")
    library.impl("testlib2::double_plus_one", "CompositeImplicitAutograd", lambda x: x * 2 + 1)
    assert op(core.ones(2)).tolist() == [3.0, 3.0]
    assert op(core.ones(2, 2, device="meta")).shape == (2, 2)
    with pytest.raises(RuntimeError, match="cannot define"):
        library.Library("testlib2", "IMPL").define("other")


def test_resolution_is_cached_per_key_set():
    op = get_operator("add")
    core.ones(1) + core.ones(1)
    assert backend_key("cpu").mask in op._cache


def test_missing_kernel_names_op_and_implementers():
    op = library.define("testlib::only_meta", meta=_same_shape_meta)
    with pytest.raises(NotImplementedError, match="only_meta.*'cpu' has no kernel"):
        op(core.ones(1))


def test_functionality_key_redispatches_below_itself():
    seen = []

    def profiler(op, below, *args, **kwargs):
        seen.append(op.name)
        return op.redispatch(below, *args, **kwargs)

    # Profiler has no kernel of its own (Tracer's belongs to core.jit): install one, then put things back
    key = DispatchKey.Profiler
    previous = _FUNCTIONALITY_FALLBACKS.get(key.bit)
    set_functionality_fallback(key, profiler)
    tls.include |= key.mask
    try:
        out = core.ones(2) + 1
    finally:
        tls.include &= ~key.mask
        set_functionality_fallback(key, previous)
    assert out.tolist() == [2.0, 2.0] and "add" in seen
    seen.clear()
    core.ones(2) + 1
    assert not seen  # not included any more: the key falls through


def test_excluded_keys_are_thread_local():
    results = {}

    def worker():
        results["exclude"] = tls.exclude

    tls.exclude |= DispatchKey.Profiler.mask
    try:
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    finally:
        tls.exclude &= ~DispatchKey.Profiler.mask
    assert results["exclude"] == 0


def test_debug_mode_checks_kernel_outputs():
    op = library.define("testlib::bad_shape", meta=_same_shape_meta)
    library.impl("testlib::bad_shape", "cpu", lambda spec, x: core.ones(7))
    assert op(core.ones(2)).shape == (7,)  # unchecked by default
    core.config.set("debug", True)
    try:
        with pytest.raises(RuntimeError, match=r"returned Tensor\[7\].*expected Tensor\[2\]"):
            op(core.ones(2))
    finally:
        core.config.reset("debug")


def test_meta_device_shapes_without_data():
    x = core.empty(8, 1, 3, device="meta")
    y = core.empty(5, 1, device="meta", dtype=core.int64)
    z = (x + y).exp()
    assert z.shape == (8, 5, 3) and z.dtype is core.float32 and z.device.type == "meta"
    assert x.transpose(0, 2).shape == (3, 1, 8) and x.view(24).shape == (24,)
    with pytest.raises(RuntimeError, match="not broadcastable"):
        core.empty(2, 3, device="meta") + core.empty(4, device="meta")
    with pytest.raises(RuntimeError, match="no data"):
        x.cpu()


def test_min_numel_kernel_runs_the_replaced_kernel_below_its_threshold():
    op = library.define("testlib::sized", meta=_same_shape_meta)
    composite = library.define("testlib::sized_composite")  # no meta: sized by its first argument
    two_args = library.define("testlib::sized_composite2")  # the same, with a second argument
    cpu = backend_key("cpu")
    op.register_kernel(cpu, lambda spec, x: core.zeros(spec.shape), owner="base")
    composite.register_kernel(cpu, lambda x: core.zeros(x.shape), owner="base")
    two_args.register_kernel(cpu, lambda x, scale=1.0: core.zeros(x.shape) * scale, owner="base")
    with pytest.raises(ValueError, match="must be a non-negative int, got -1"):
        op.register_kernel(cpu, lambda spec, x: x, override=True, min_numel=-1)
    with pytest.raises(RuntimeError, match="not registered with min_numel"):
        op.set_min_numel(cpu, 4)
    op.register_kernel(cpu, lambda spec, x: core.ones(spec.shape), owner="fast", override=True, min_numel=6)
    composite.register_kernel(cpu, lambda x: core.ones(x.shape), owner="fast", override=True, min_numel=6)
    two_args.register_kernel(cpu, lambda x, scale=1.0: core.ones(x.shape) * scale, owner="fast", override=True,
                             min_numel=6)
    assert two_args(core.empty(5), scale=2.0).tolist() == [0.0] * 5
    assert two_args(core.empty(6), scale=2.0).tolist() == [2.0] * 6
    for o in (op, composite, two_args):
        assert o(core.empty(5)).tolist() == [0.0] * 5  # 5 < 6: the kernel it replaced
        assert o(core.empty(2, 3)).tolist() == [[1.0] * 3] * 2
        o.set_min_numel(cpu, 0)  # the cached resolution is dropped
        assert o(core.empty(1)).tolist() == [1.0]
        o.set_min_numel(cpu, 100)
        assert o(core.empty(2, 3)).tolist() == [[0.0] * 3] * 2
    core.config.set("debug", True)  # the checked path picks by size too
    try:
        assert op(core.empty(2, 3)).tolist() == [[0.0] * 3] * 2
        assert op(core.empty(200)).tolist() == [1.0] * 200
    finally:
        core.config.reset("debug")


def test_min_numel_needs_a_kernel_to_replace():
    op = library.define("testlib::sized_alone", meta=_same_shape_meta)
    with pytest.raises(ValueError, match="needs a kernel to run below it, but none is registered for dispatch key"):
        op.register_kernel(backend_key("cpu"), lambda spec, x: x, min_numel=4)


def test_declined_call_runs_as_if_the_kernel_were_missing():
    lib = library.Library("testlib_decline", "DEF")
    composite = lib.define("twice_plus_one")
    library.impl("testlib_decline::twice_plus_one", "CompositeImplicitAutograd", lambda x: x * 2 + 1)
    primitive = library.define("testlib_decline::scaled", meta=_same_shape_meta)
    cpu = backend_key("cpu")
    composite.register_kernel(cpu, lambda x: x * 10 if x.dtype is core.float32 else NotImplemented, owner="fast")
    primitive.register_kernel(cpu, lambda spec, x: x * 10 if x.dtype is core.float32 else NotImplemented,
                              owner="fast")
    assert composite(core.ones(2)).tolist() == [10.0, 10.0]
    assert composite(core.ones(2, dtype=core.float64)).tolist() == [3.0, 3.0]  # declined: the decomposition
    assert primitive(core.ones(1)).tolist() == [10.0]
    with pytest.raises(NotImplementedError, match=r"scaled\(\).*'cpu' declined this call"):  # nothing below cpu
        primitive(core.ones(1, dtype=core.float64))
