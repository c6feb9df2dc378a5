"""``core.nn.Module`` and the containers: registration, iteration, conversion, modes, state dicts, hooks, reprs,
against PyTorch's documented behaviour (and torch itself when installed)."""

from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest

import core
import core.nn as nn
from core.testing import assert_close, to_numpy


def npy(x):
    """A host NumPy copy of a tensor on any device (detached)."""
    return to_numpy(x.detach())


class Block(nn.Module):
    """A small model with a parameter, a buffer, a non-persistent buffer and nested children."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(core.ones(2))
        self.register_buffer("steps", core.zeros(1))
        self.register_buffer("cache", core.zeros(2), persistent=False)
        self.fc = nn.Linear(3, 2)
        self.inner = nn.Sequential(nn.Linear(2, 2), nn.Identity())

    def forward(self, x):
        return self.inner(self.fc(x)) * self.scale


# -- registration ----------------------------------------------------------------------------------------------------
def test_setattr_registers_parameters_buffers_and_modules():
    m = Block()
    assert list(m._parameters) == ["scale"]
    assert list(m._buffers) == ["steps", "cache"]
    assert list(m._modules) == ["fc", "inner"]
    m.plain = core.zeros(3)  # a plain tensor is a plain attribute
    assert "plain" not in m._buffers and "plain" not in m._parameters
    m.extra = nn.Buffer(core.ones(1), persistent=False)
    assert "extra" in m._buffers and "extra" in m._non_persistent_buffers_set
    assert "extra" not in m.state_dict()
    m.scale = None
    assert m.scale is None and "scale" in m._parameters
    assert [n for n, _ in m.named_parameters()][:1] == ["fc.weight"]
    m.fc = None
    assert m.fc is None and "fc" not in dict(m.named_children())


def test_setattr_type_errors():
    m = Block()
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'scale'"):
        m.scale = core.zeros(2)
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'fc'"):
        m.fc = 3
    with pytest.raises(TypeError, match="cannot assign 'int' as buffer 'steps'"):
        m.steps = 3
    m.steps = core.ones(1)  # a tensor replaces a buffer
    assert_close(m.steps, np.ones(1, np.float32))

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(core.zeros(1))

    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        Early()
    with pytest.raises(TypeError):
        nn.Module(3)


def test_add_module_register_buffer_and_parameter_validation():
    m = nn.Module()
    m.add_module("a", nn.Identity())
    m.register_module("b", nn.Identity())
    assert list(m._modules) == ["a", "b"]
    with pytest.raises(KeyError, match="contain"):
        m.add_module("x.y", nn.Identity())
    with pytest.raises(KeyError, match="empty string"):
        m.register_buffer("", core.zeros(1))
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("c", 3)
    with pytest.raises(TypeError, match="module name should be a string"):
        m.add_module(1, nn.Identity())
    m.attr = 1
    with pytest.raises(KeyError, match="attribute 'attr' already exists"):
        m.register_buffer("attr", core.zeros(1))
    with pytest.raises(TypeError, match="cannot assign 'list' object to buffer 'buf'"):
        m.register_buffer("buf", [1])
    with pytest.raises(TypeError, match="cannot assign 'Tensor' object to parameter 'p'"):
        m.register_parameter("p", core.zeros(1))
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'q'"):
        m.register_parameter("q", _non_leaf_parameter())
    m.register_buffer("none_buffer", None)
    assert "none_buffer" not in m.state_dict() and m.none_buffer is None


def _non_leaf_parameter():
    p = nn.Parameter(core.ones(2))
    q = p * 2
    q.__class__ = nn.Parameter  # a Parameter that has a grad_fn: registration must refuse it
    return q


def test_getattr_delattr_and_dir():
    m = Block()
    with pytest.raises(AttributeError, match="'Block' object has no attribute 'missing'"):
        m.missing  # noqa: B018 - the attribute access is what is tested
    assert {"scale", "steps", "fc", "inner"} <= set(dir(m))
    del m.scale, m.steps, m.fc
    assert "scale" not in m._parameters and "steps" not in m._buffers and "fc" not in m._modules


# -- iteration -------------------------------------------------------------------------------------------------------
def test_named_members():
    m = Block()
    assert [n for n, _ in m.named_parameters()] == ["scale", "fc.weight", "fc.bias", "inner.0.weight",
                                                     "inner.0.bias"]
    assert [n for n, _ in m.named_parameters(prefix="model")][0] == "model.scale"
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "cache"]
    assert [n for n, _ in m.named_modules()] == ["", "fc", "inner", "inner.0", "inner.1"]
    assert [n for n, _ in m.named_children()] == ["fc", "inner"]
    assert [type(c).__name__ for c in m.children()] == ["Linear", "Sequential"]
    assert len(list(m.modules())) == 5
    assert len(list(m.parameters())) == 5 and len(list(m.buffers())) == 2


def test_shared_parameters_and_modules_counted_once():
    shared = nn.Linear(2, 2)
    seq = nn.Sequential(shared, shared)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == ["", "0"]
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert [n for n, _ in seq.named_children()] == ["0"]
    tied = nn.Module()
    tied.a, tied.b = nn.Linear(3, 3), nn.Linear(3, 3)
    tied.b.weight = tied.a.weight
    assert [n for n, _ in tied.named_parameters()] == ["a.weight", "a.bias", "b.bias"]
    assert set(tied.state_dict()) == {"a.weight", "a.bias", "b.weight", "b.bias"}  # state_dict keeps both names
    assert tied.state_dict()["b.weight"].data_ptr() == tied.a.weight.data_ptr()


def test_reassigning_keeps_registration_order():
    lin = nn.Linear(2, 2)
    lin.weight = nn.Parameter(core.zeros(2, 2))
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    seq = nn.Sequential(nn.Identity(), nn.Identity())
    seq[0] = nn.Linear(1, 1)
    assert list(seq._modules) == ["0", "1"]


def test_get_submodule_parameter_buffer():
    m = Block()
    assert m.get_submodule("") is m
    assert m.get_submodule("inner.0") is m.inner[0]
    assert m.get_parameter("inner.0.bias") is m.inner[0].bias
    assert m.get_buffer("steps") is m.steps
    with pytest.raises(AttributeError, match="Sequential has no attribute `7`"):
        m.get_submodule("inner.7")
    with pytest.raises(AttributeError, match="`scale` is not an nn.Module"):
        m.get_submodule("scale")
    with pytest.raises(AttributeError, match="Linear has no parameter `nope`"):
        m.get_parameter("fc.nope")
    with pytest.raises(AttributeError, match="Block has no buffer `scale`"):
        m.get_buffer("scale")


def test_apply_visits_children_first():
    m = Block()
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "Linear", "Identity", "Sequential", "Block"]

    def init_linear(mod):
        if isinstance(mod, nn.Linear):
            nn.init.zeros_(mod.weight)

    m.apply(init_linear)
    assert not npy(m.fc.weight).any() and not npy(m.inner[0].weight).any()


# -- conversion, modes, gradients ------------------------------------------------------------------------------------
def test_to_double_half_keep_parameter_objects():
    m = Block()
    bn = nn.BatchNorm1d(2)
    m.bn = bn
    weight = m.fc.weight
    m.fc(core.ones(1, 3)).sum().backward()
    assert m.double() is m
    assert m.fc.weight is weight and isinstance(weight, nn.Parameter) and weight.requires_grad
    assert weight.dtype == core.float64 and weight.grad.dtype == core.float64
    assert m.steps.dtype == core.float64 and m.cache.dtype == core.float64
    assert bn.num_batches_tracked.dtype == core.int64  # integer buffers are not cast
    m.half()
    assert weight.dtype == core.float16 and bn.running_mean.dtype == core.float16
    m.float()
    assert weight.dtype == core.float32
    m.to(core.float64)
    assert weight.dtype == core.float64
    m.to("cpu", core.float32)
    assert weight.dtype == core.float32 and weight.device.type == "cpu"
    m.to(core.zeros(1, dtype=core.float64))
    assert weight.dtype == core.float64
    m.to(dtype=core.float32).cpu()
    assert weight.dtype == core.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes"):
        m.to(core.int64)
    out = m(core.ones(4, 3))
    assert out.dtype == core.float32


def test_train_eval_flags():
    m = Block()
    assert all(mod.training for mod in m.modules())
    assert m.eval() is m
    assert not any(mod.training for mod in m.modules())
    m.train()
    assert all(mod.training for mod in m.modules())
    m.inner.train(False)
    assert m.training and not m.inner.training and not m.inner[0].training and m.fc.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")


class _FrozenNorm(nn.Module):
    """Overrides train() to stay in eval mode, a common pattern for frozen batch norm."""

    def train(self, mode=True):
        return super().train(False)


def test_train_calls_children_overrides():
    m = nn.Sequential(nn.Linear(2, 2), _FrozenNorm())
    m.train()
    assert not m[1].training


def test_requires_grad_and_zero_grad():
    m = Block()
    assert m.requires_grad_(False) is m
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    m(core.ones(2, 3)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    grads = [p.grad for p in m.parameters()]
    assert all(g is not None and not npy(g).any() for g in grads)
    assert all(not g.requires_grad for g in grads)
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_forward_not_implemented():
    with pytest.raises(NotImplementedError, match='Module \\[Module\\] is missing the required "forward" function'):
        nn.Module()(core.ones(1))


def test_deepcopy_is_independent():
    m = Block()
    clone = copy.deepcopy(m)
    assert clone.fc.weight is not m.fc.weight and isinstance(clone.fc.weight, nn.Parameter)
    assert_close(clone.fc.weight, npy(m.fc.weight))
    with core.no_grad():
        clone.fc.weight.fill_(0)
    assert npy(m.fc.weight).any()


# -- state dict ------------------------------------------------------------------------------------------------------
def test_state_dict_keys_and_values():
    m = Block()
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["scale", "steps", "fc.weight", "fc.bias", "inner.0.weight", "inner.0.bias"]
    assert not sd["scale"].requires_grad and sd["scale"].grad_fn is None
    with core.no_grad():
        sd["scale"].fill_(5)  # detached, but shares memory with the parameter
    assert_close(m.scale.detach(), np.full(2, 5, np.float32))
    kept = m.state_dict(keep_vars=True)
    assert kept["scale"] is m.scale
    assert list(m.state_dict(prefix="p."))[0] == "p.scale"


def test_load_state_dict_round_trip():
    a, b = Block(), Block()
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "IncompatibleKeys(missing_keys=[], unexpected_keys=[])"
    x = core.randn(4, 3)
    assert_close(b(x), a(x))
    weight = b.fc.weight
    b.load_state_dict(a.state_dict())
    assert b.fc.weight is weight  # copied in place, Parameter object kept


def test_load_state_dict_strict_and_non_strict():
    m = Block()
    sd = m.state_dict()
    del sd["fc.bias"]
    sd["extra.weight"] = core.zeros(1)
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict(sd)
    message = str(info.value)
    assert message.startswith("Error(s) in loading state_dict for Block:\n\t")
    assert 'Missing key(s) in state_dict: "fc.bias". ' in message
    assert 'Unexpected key(s) in state_dict: "extra.weight". ' in message
    assert message.index("Missing") < message.index("Unexpected")
    result = m.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["fc.bias"] and result.unexpected_keys == ["extra.weight"]
    assert "cache" not in m.state_dict()
    sd = m.state_dict()
    sd["cache"] = core.zeros(2)  # non-persistent buffers are unexpected keys
    assert m.load_state_dict(sd, strict=False).unexpected_keys == ["cache"]


def test_load_state_dict_size_mismatch_and_bad_values():
    m = Block()
    sd = m.state_dict()
    sd["fc.weight"] = core.zeros(3, 3)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc.weight: copying a param with shape "
                                           r"core.Size\(\[3, 3\]\) from checkpoint, the shape in current model is "
                                           r"core.Size\(\[2, 3\]\)."):
        m.load_state_dict(sd, strict=False)  # shape errors are raised even when not strict
    sd = m.state_dict()
    sd["scale"] = [1.0, 2.0]
    with pytest.raises(RuntimeError, match='While copying the parameter named "scale"'):
        m.load_state_dict(sd)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        m.load_state_dict([1, 2])


def test_load_state_dict_casts_and_assign():
    m = nn.Linear(2, 2)
    sd = {"weight": core.ones(2, 2, dtype=core.float64), "bias": core.zeros(2, dtype=core.float64)}
    m.load_state_dict(sd)
    assert m.weight.dtype == core.float32
    assert_close(m.weight.detach(), np.ones((2, 2), np.float32))
    m.load_state_dict(sd, assign=True)
    assert m.weight.dtype == core.float64 and isinstance(m.weight, nn.Parameter) and m.weight.requires_grad


# -- hooks -----------------------------------------------------------------------------------------------------------
def test_forward_pre_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("first"))
    m.register_forward_pre_hook(lambda mod, args: calls.append("prepended"), prepend=True)
    h3 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    out = m(core.ones(1, 2))
    assert calls == ["prepended", "first"]
    assert_close(out.detach(), npy(m.bias)[None])  # input replaced by zeros
    h3.remove()
    h1.remove()
    h1.remove()  # removing twice is harmless
    calls.clear()
    m(core.ones(1, 2))
    assert calls == ["prepended"]
    k = nn.Linear(2, 2)
    k.register_forward_pre_hook(lambda mod, args: args[0] * 0)  # a single value is wrapped into a tuple
    assert_close(k(core.ones(1, 2)).detach(), npy(k.bias)[None])
    k2 = nn.Linear(2, 2)
    k2.register_forward_pre_hook(lambda mod, args, kwargs: ((kwargs.pop("x"),), kwargs), with_kwargs=True)
    assert k2(x=core.ones(1, 2)).shape == (1, 2)


def test_forward_hooks():
    m = nn.Linear(2, 3)
    seen = {}

    def record(mod, args, output):
        seen["args"], seen["output"] = args, output

    with m.register_forward_hook(record):
        out = m(core.ones(4, 2))
    assert seen["output"] is out and seen["args"][0].shape == (4, 2)
    seen.clear()
    m(core.ones(4, 2))
    assert seen == {}  # the context manager removed it
    m.register_forward_hook(lambda mod, args, output: output * 0)
    assert not npy(m(core.ones(4, 2))).any()
    m2 = nn.Linear(2, 3)
    m2.register_forward_hook(lambda mod, args, kwargs, output: output + kwargs.get("shift", 0), with_kwargs=True)
    m2.forward = lambda input, shift=0: nn.Linear.forward(m2, input)
    assert_close(m2(core.zeros(1, 2), shift=1.0).detach(), npy(m2.bias)[None] + 1)


def test_full_backward_hook_shapes_and_replacement():
    m = nn.Linear(3, 2)
    captured = []

    def hook(mod, grad_input, grad_output):
        captured.append(([g.shape for g in grad_input], [g.shape for g in grad_output]))
        return (grad_input[0] * 0,)

    handle = m.register_full_backward_hook(hook)
    x = core.randn(4, 3, requires_grad=True)
    m(x).sum().backward()
    assert captured == [([(4, 3)], [(4, 2)])]
    assert not npy(x.grad).any()  # grad_input replaced by zeros
    assert m.weight.grad is not None and npy(m.weight.grad).any()  # parameters are not affected
    handle.remove()
    x.grad = None
    m(x).sum().backward()
    assert_close(x.grad, np.repeat(npy(m.weight).sum(0, keepdims=True), 4, axis=0))


def test_full_backward_hook_two_inputs():
    class Mul(nn.Module):
        def forward(self, a, b):
            return a * b

    m = Mul()
    grads = {}
    m.register_full_backward_hook(lambda mod, gi, go: grads.update(gi=gi, go=go))
    a, b = core.randn(3, requires_grad=True), core.randn(3, requires_grad=True)
    (m(a, b) * 2).sum().backward()
    assert_close(grads["go"][0], np.full(3, 2.0, np.float32))
    assert_close(grads["gi"][0], 2 * npy(b))
    assert_close(grads["gi"][1], 2 * npy(a))


def test_full_backward_hook_fires_when_inputs_do_not_require_grad():
    m = nn.Linear(3, 2)
    calls = []
    m.register_full_backward_hook(lambda mod, gi, go: calls.append((gi, go)))
    m(core.randn(4, 3)).sum().backward()
    assert len(calls) == 1 and calls[0][0] == (None,) and calls[0][1][0].shape == (4, 2)


def test_full_backward_hook_grad_input_per_argument():
    class Mul(nn.Module):
        def forward(self, a, b, c):
            return a * b + c

    m = Mul()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    a, c = core.randn(2, requires_grad=True), core.randn(2, requires_grad=True)
    m(a, core.randn(2), c).sum().backward()
    assert len(seen[0]) == 3


# -- repr ------------------------------------------------------------------------------------------------------------
def _build(module, lib):
    """The same architecture in core.nn or torch.nn (``lib``)."""
    module.features = lib.Sequential(lib.Linear(4, 8), lib.BatchNorm1d(8), lib.Dropout(0.25))
    module.heads = lib.ModuleList([lib.Linear(8, 2), lib.LayerNorm(2)])
    module.table = lib.ModuleDict({"emb": lib.Embedding(10, 4, padding_idx=0)})
    module.flat = lib.Flatten()
    module.add_module("nothing", None)


def _run(net, x, idx):
    h = net.features(x + net.table["emb"](idx).sum(1))
    return net.heads[1](net.heads[0](h))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        _build(self, nn)


def _torch_net(torch):
    class Net(torch.nn.Module):  # same class name, so the reprs can be compared
        def __init__(self):
            super().__init__()
            _build(self, torch.nn)

    return Net()


NET_REPR = """Net(
  (features): Sequential(
    (0): Linear(in_features=4, out_features=8, bias=True)
    (1): BatchNorm1d(8, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    (2): Dropout(p=0.25, inplace=False)
  )
  (heads): ModuleList(
    (0): Linear(in_features=8, out_features=2, bias=True)
    (1): LayerNorm((2,), eps=1e-05, elementwise_affine=True, bias=True)
  )
  (table): ModuleDict(
    (emb): Embedding(10, 4, padding_idx=0)
  )
  (flat): Flatten(start_dim=1, end_dim=-1)
  (nothing): None
)"""


class _Multi(nn.Module):
    def extra_repr(self):
        return "first line\nsecond line"


def test_repr_nested():
    assert repr(Net()) == NET_REPR
    assert repr(nn.Sequential()) == "Sequential()"
    assert repr(nn.Linear(2, 3)) == "Linear(in_features=2, out_features=3, bias=True)"
    assert repr(_Multi()) == "_Multi(\n  first line\n  second line\n)"
    outer = nn.Sequential(_Multi())
    assert repr(outer) == "Sequential(\n  (0): _Multi(\n    first line\n    second line\n  )\n)"


def test_repr_matches_torch():
    torch = pytest.importorskip("torch")
    assert repr(Net()) == repr(_torch_net(torch))


def test_module_list_repr_groups_repeats():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert repr(ml) == "ModuleList(\n  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n)"
    ml.append(nn.Identity())
    assert repr(ml) == ("ModuleList(\n  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
                        "  (3): Identity()\n)")


def test_parameter_list_repr():
    pl = nn.ParameterList([core.zeros(3, 4)])
    assert repr(pl) == "ParameterList(\n    (0): Parameter containing: [core.float32 of size 3x4]\n)"


def test_parameter_dict_repr():
    pd = nn.ParameterDict({"a": core.zeros(3)})
    assert repr(pd) == "ParameterDict(  (a): Parameter containing: [core.FloatTensor of size 3])"


# -- containers ------------------------------------------------------------------------------------------------------
def test_sequential_indexing_and_editing():
    a, b, c = nn.Linear(2, 3), nn.Identity(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and list(seq) == [a, b, c]
    sliced = seq[1:]
    assert isinstance(sliced, nn.Sequential) and list(sliced) == [b, c] and list(sliced._modules) == ["1", "2"]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    out = seq(core.ones(5, 2))
    assert out.shape == (5, 1)
    d = nn.Identity()
    seq.append(d)
    assert seq[3] is d and list(seq._modules) == ["0", "1", "2", "3"]
    e = nn.Identity()
    seq.insert(1, e)
    assert list(seq) == [a, e, b, c, d] and list(seq._modules) == ["0", "1", "2", "3", "4"]
    del seq[1]
    assert list(seq) == [a, b, c, d] and list(seq._modules) == ["0", "1", "2", "3"]
    del seq[-2:]
    assert list(seq) == [a, b]
    seq[1] = c
    assert list(seq) == [a, c]
    combined = seq + nn.Sequential(d)
    assert list(combined) == [a, c, d] and combined is not seq
    seq.extend([b])
    assert list(seq) == [a, c, b]
    named = nn.Sequential(OrderedDict(first=a, second=c))
    assert list(named._modules) == ["first", "second"] and named.first is a
    assert [n for n, _ in named.named_parameters()] == ["first.weight", "first.bias", "second.weight",
                                                         "second.bias"]


def test_sequential_insert_out_of_range():
    with pytest.raises(IndexError, match="Index out of range: 5"):
        nn.Sequential(nn.Identity()).insert(5, nn.Identity())


def test_sequential_pop():
    a, b = nn.Identity(), nn.Linear(1, 1)
    seq = nn.Sequential(a, b)
    assert seq.pop(0) is a and list(seq) == [b]


def test_module_list():
    layers = [nn.Linear(2, 2) for _ in range(3)]
    ml = nn.ModuleList(layers[:2])
    assert len(ml) == 2 and ml[0] is layers[0] and ml[-1] is layers[1]
    ml.append(layers[2])
    assert list(ml) == layers and len(list(ml.parameters())) == 6
    assert [n for n, _ in ml.named_parameters()][:2] == ["0.weight", "0.bias"]
    sliced = ml[::2]
    assert isinstance(sliced, nn.ModuleList) and list(sliced) == [layers[0], layers[2]]
    extra = nn.Identity()
    ml.insert(1, extra)
    assert list(ml) == [layers[0], extra, layers[1], layers[2]]
    del ml[1]
    assert list(ml) == layers and list(ml._modules) == ["0", "1", "2"]
    ml[0] = extra
    assert ml[0] is extra
    ml += [nn.Identity()]
    assert len(ml) == 4
    ml.extend([nn.Identity()])
    assert len(ml) == 5
    with pytest.raises(IndexError):
        ml[9]
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_module_dict():
    md = nn.ModuleDict({"a": nn.Linear(1, 2)})
    md["b"] = nn.Identity()
    md.update([("c", nn.Linear(2, 1))])
    assert list(md) == ["a", "b", "c"] and list(md.keys()) == ["a", "b", "c"] and len(md) == 3
    assert "b" in md and "z" not in md
    assert [k for k, _ in md.items()] == ["a", "b", "c"] and len(list(md.values())) == 3
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    popped = md.pop("b")
    assert isinstance(popped, nn.Identity) and "b" not in md
    del md["c"]
    assert list(md) == ["a"]
    md.clear()
    assert len(md) == 0


def test_parameter_list():
    pl = nn.ParameterList([core.zeros(2), nn.Parameter(core.ones(3))])
    assert len(pl) == 2 and all(isinstance(p, nn.Parameter) for p in pl)
    assert pl[1].shape == (3,) and pl[-1] is pl[1]
    pl.append(core.ones(1))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert list(pl.state_dict()) == ["0", "1", "2"]
    pl[0] = core.full((2,), 7.0)
    assert isinstance(pl[0], nn.Parameter) and npy(pl[0])[0] == 7.0
    assert [p.shape for p in pl[1:]] == [(3,), (1,)]
    pl.extend([core.zeros(4)])
    assert len(pl) == 4
    holder = nn.Module()
    holder.params = pl
    assert len(list(holder.parameters())) == 4


def test_parameter_list_negative_step_slice():
    pl = nn.ParameterList([core.zeros(i + 1) for i in range(3)])
    assert [p.shape for p in pl[::-1]] == [(3,), (2,), (1,)]


def test_parameter_dict():
    pd = nn.ParameterDict({"a": core.zeros(2)})
    pd["b"] = nn.Parameter(core.ones(3))
    pd.update({"c": core.ones(1)})
    assert list(pd) == ["a", "b", "c"] and len(pd) == 3 and "a" in pd
    assert all(isinstance(v, nn.Parameter) for v in pd.values())
    assert list(pd.state_dict()) == ["a", "b", "c"]
    assert [k for k, _ in pd.items()] == ["a", "b", "c"] and list(pd.keys()) == ["a", "b", "c"]
    del pd["a"]
    assert list(pd) == ["b", "c"]


# -- PyTorch interop -------------------------------------------------------------------------------------------------
def test_torch_state_dict_loads_into_our_model():
    torch = pytest.importorskip("torch")
    theirs = _torch_net(torch)
    with torch.no_grad():
        for p in theirs.parameters():
            p.copy_(torch.randn(p.shape))
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    idx = np.array([[1, 0, 3, 9]] * 6)
    for _ in range(2):  # training steps, so the batch-norm buffers move away from their initial values
        _run(theirs, torch.tensor(x), torch.tensor(idx))
    ours = Net()
    state = {k: core.tensor(v.numpy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(ours.state_dict())
    result = ours.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for mode in (True, False):
        ours.train(mode), theirs.train(mode)
        ours.features[2].p = theirs.features[2].p = 0.0  # dropout off, so training outputs are comparable
        expected = _run(theirs, torch.tensor(x), torch.tensor(idx)).detach().numpy()
        assert_close(npy(_run(ours, core.tensor(x), core.tensor(idx))), expected, rtol=1e-4, atol=1e-5)
    for key, value in theirs.state_dict().items():  # the running statistics moved identically
        assert_close(ours.state_dict()[key], value.numpy(), rtol=1e-5, atol=1e-6)
    theirs.load_state_dict({k: torch.tensor(npy(v)) for k, v in ours.state_dict().items()})  # and back
