"""``core.func``: PyTorch's composable function transforms (``torch.func``) over the recorded graph.

``grad``, ``vjp``, ``jacrev`` and ``hessian`` differentiate in reverse mode; ``jvp`` and ``jacfwd`` use the
double-vjp trick of :mod:`core.autograd.functional`. Transforms nest (``grad(grad(f))``, ``vmap(grad(f))``):
an inner transform keeps its graph whenever an outer one is watching its inputs. ``vmap`` is vectorised: the
function runs once on batched tensors (:mod:`core.func._batched`); inside it, ``grad`` and ``vjp`` differentiate
the batch as a whole, which gives each sample its own gradient.
"""

from __future__ import annotations

from ..autograd.functional import _jvp_raw, _vjp_raw
from ..autograd.grad_mode import enable_grad
from . import _batched

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian", "vmap",
           "functional_call", "stack_module_state"]


# -- pytrees: tensors inside (nested) tuples, lists and dicts --------------------------------------------------------

def _is_tensor(x) -> bool:
    return hasattr(x, "_storage")


def _flatten(tree) -> tuple:
    """``(leaves, rebuild)``: the leaves of ``tree`` in order, and a function that puts new leaves in their place."""
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "_fields"):
        parts = [_flatten(t) for t in tree]
        kind = type(tree)
    elif isinstance(tree, tuple):  # a named tuple
        parts = [_flatten(t) for t in tree]
        cls = type(tree)

        def kind(items):
            return cls(*items)
    elif isinstance(tree, dict):
        keys, cls = list(tree), type(tree)
        parts = [_flatten(tree[k]) for k in keys]

        def kind(items):
            return cls(zip(keys, items))
    else:
        return [tree], lambda leaves: leaves[0]
    leaves = [leaf for p in parts for leaf in p[0]]
    sizes = [len(p[0]) for p in parts]

    def rebuild(new):
        out, start = [], 0
        for (_, sub), n in zip(parts, sizes):
            out.append(sub(new[start:start + n]))
            start += n
        return kind(out)

    return leaves, rebuild


def _tree_map(fn, tree):
    leaves, rebuild = _flatten(tree)
    return rebuild([fn(x) for x in leaves])


def _watch(x):
    """A differentiable stand-in for the leaf ``x``, still on an outer transform's graph when it has one.

    Inside ``vmap`` it is batched at every active level (an unbatched ``x`` is broadcast over the batch), so that the
    gradient of the sum over the batch gives each sample its own gradient (:func:`_autograd_call`)."""
    if not _is_tensor(x):
        return x
    levels = _batched.active_levels()
    if levels:
        base = _batched.base_of(_batched.batch_at_all_levels(x, levels))
        with _batched.no_levels():
            base = base.view_as(base) if base.requires_grad else base.detach().requires_grad_(True)
        return _batched.wrap_all_levels(base, levels)
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True)


def _autograd_call(raw, outputs: tuple, inputs: tuple, vectors: tuple, create_graph: bool, strict: bool):
    """``_vjp_raw`` / ``_jvp_raw`` on tensors that may be batched by ``vmap``: run on the plain tensors under every
    level, where the samples are independent, so a vector-Jacobian product over the batch is one per sample."""
    levels = _batched.active_levels()
    if not levels:
        return raw(outputs, inputs, vectors, create_graph, strict)

    def plain(ts):
        return tuple(_batched.base_of(_batched.batch_at_all_levels(t, levels)) for t in ts)

    outputs, inputs, vectors = plain(outputs), plain(inputs), plain(vectors)
    with _batched.no_levels():
        result = raw(outputs, inputs, vectors, create_graph, strict)
    return tuple(_batched.wrap_all_levels(r, levels) for r in result)


def _argnums(argnums, nargs: int, fn_name: str) -> tuple:
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"{fn_name}: argnums must be int or Tuple[int, ...], got: {type(a)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnums={a}, but only {nargs} positional inputs")
    return tuple(a % nargs for a in nums)


def _call_watched(func, args: tuple, argnums, has_aux: bool, fn_name: str):
    """Run ``func`` with the ``argnums`` arguments replaced by watched copies: ``(watched, output, aux, keep)``.

    ``keep`` says whether an outer transform differentiates through (then results stay on the graph)."""
    nums = _argnums(argnums, len(args), fn_name)
    keep = any(x.requires_grad for n in nums for x in _flatten(args[n])[0] if _is_tensor(x))
    args = list(args)
    watched = []
    for n in nums:
        args[n] = _tree_map(_watch, args[n])
        watched.append(args[n])
    with enable_grad():
        out = func(*args)
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError(f"{fn_name}(f, ...)(*args): output of function f should be a tuple: (output, aux) "
                               f"if has_aux is True")
        out, aux = out
    return watched, out, aux, keep


def _strip(tree, keep: bool):
    return tree if keep else _tree_map(lambda x: x.detach() if _is_tensor(x) else x, tree)


def _pick(watched: list, argnums):
    return tuple(watched) if isinstance(argnums, tuple) else watched[0]


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """A function returning ``(gradient, value)`` of the scalar function ``func`` with respect to the ``argnums``
    arguments (``torch.func.grad_and_value``); with ``has_aux``, ``(gradient, (value, aux))``."""

    def wrapper(*args, **kwargs):
        watched, out, aux, keep = _call_watched(lambda *a: func(*a, **kwargs), args, argnums, has_aux,
                                                "grad_and_value")
        if not _is_tensor(out):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
        if out.dim() != 0:
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                               f"with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        leaves, rebuild = _flatten(_pick(watched, argnums))
        grads = _autograd_call(_vjp_raw, (out,), tuple(leaves), (_ones(out),), keep, False)
        gradient = _strip(rebuild(list(grads)), keep)
        value = _strip(out, keep)
        return (gradient, (value, _strip(aux, keep))) if has_aux else (gradient, value)

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """A function returning the gradient of the scalar function ``func`` with respect to the ``argnums``
    arguments (``torch.func.grad``); with ``has_aux``, ``(gradient, aux)``."""
    inner = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        gradient, value = inner(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def _ones(t):
    from ..ops.creation import ones_like

    return ones_like(t)


def vjp(func, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` returns one ``cotangents^T J`` per primal
    (``torch.func.vjp``); with ``has_aux``, ``(output, vjp_fn, aux)``."""
    argnums = tuple(range(len(primals)))
    watched, out, aux, keep = _call_watched(func, primals, argnums, has_aux, "vjp")
    out_leaves, _ = _flatten(out)
    in_leaves, rebuild = _flatten(tuple(watched))

    def vjp_fn(cotangents):
        cot_leaves, _ = _flatten(cotangents)
        if len(cot_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function: got {len(cot_leaves)} leaves, expected "
                               f"{len(out_leaves)}")
        for c, o in zip(cot_leaves, out_leaves):
            if c.shape != o.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {list(c.shape)} and output[0] "
                                   f"has a shape of {list(o.shape)}.")
        track = keep or any(c.requires_grad for c in cot_leaves)
        grads = _autograd_call(_vjp_raw, tuple(out_leaves), tuple(in_leaves), tuple(cot_leaves), track, False)
        return _strip(rebuild(list(grads)), track)

    result = (_strip(out, keep), vjp_fn)
    return result + (_strip(aux, keep),) if has_aux else result


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J tangents)``: the Jacobian-vector product (``torch.func.jvp``), by the double-vjp
    trick; with ``has_aux``, ``(output, jvp_out, aux)``."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    if not isinstance(tangents, tuple) or len(_flatten(tangents)[0]) != len(_flatten(primals)[0]):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, tangents also must be.")
    watched, out, aux, keep = _call_watched(func, primals, tuple(range(len(primals))), has_aux, "jvp")
    in_leaves, _ = _flatten(tuple(watched))
    tan_leaves, _ = _flatten(tangents)
    for p, t in zip(in_leaves, tan_leaves):
        if p.shape != t.shape:
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same shape, "
                               f"got {tuple(p.shape)} and {tuple(t.shape)}")
    out_leaves, rebuild = _flatten(out)
    track = keep or any(t.requires_grad for t in tan_leaves)
    result = _autograd_call(_jvp_raw, tuple(out_leaves), tuple(in_leaves), tuple(tan_leaves), track, False)
    answer = (_strip(out, keep), _strip(rebuild(list(result)), track))
    return answer + (_strip(aux, keep),) if has_aux else answer


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product at ``primals``
    (``torch.func.linearize``); the graph of the one forward call is reused by every ``jvp_fn`` call."""
    watched, out, _, keep = _call_watched(func, primals, tuple(range(len(primals))), False, "linearize")
    in_leaves, _ = _flatten(tuple(watched))
    out_leaves, rebuild = _flatten(out)

    def jvp_fn(*tangents):
        tan_leaves, _ = _flatten(tangents)
        if len(tan_leaves) != len(in_leaves):
            raise RuntimeError(f"linearize: Expected {len(in_leaves)} tangents (the structure of the primals), "
                               f"got {len(tan_leaves)}")
        for p, t in zip(in_leaves, tan_leaves):
            if p.shape != t.shape:
                raise RuntimeError(f"linearize: Expected tangent of shape {tuple(p.shape)}, got {tuple(t.shape)}")
        track = keep or any(t.requires_grad for t in tan_leaves)
        return _strip(rebuild(list(_autograd_call(_jvp_raw, tuple(out_leaves), tuple(in_leaves), tuple(tan_leaves),
                                                  track, False))), track)

    return _strip(out, keep), jvp_fn


def _jacobian(func, argnums, has_aux: bool, fn_name: str, forward: bool):
    from ..autograd.functional import _jacobian_blocks

    def wrapper(*args, **kwargs):
        levels = _batched.active_levels()
        if levels and any(_batched._at(x, levels[-1]) for x in _flatten((args, kwargs))[0]):
            # inside vmap, a Jacobian is built sample by sample (each row is one backward pass anyway)
            return _batched.per_sample(wrapper, levels[-1], args, kwargs)
        watched, out, aux, keep = _call_watched(lambda *a: func(*a, **kwargs), args, argnums, has_aux, fn_name)
        out_leaves, out_rebuild = _flatten(out)
        in_leaves, in_rebuild = _flatten(_pick(watched, argnums))
        blocks = _jacobian_blocks(tuple(out_leaves), tuple(in_leaves), True, False,
                                  "forward-mode" if forward else "reverse-mode")
        per_output = [_strip(in_rebuild(row), keep) for row in blocks]
        jac = out_rebuild(per_output)
        return (jac, _strip(aux, keep)) if has_aux else jac

    return wrapper


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None, _preallocate_and_copy: bool = False):
    """A function returning the Jacobian of ``func`` with respect to the ``argnums`` arguments, row by row in
    reverse mode (``torch.func.jacrev``): shape ``output.shape + input.shape`` per output and input."""
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(func, argnums, has_aux, "jacrev", forward=False)


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """A function returning the Jacobian of ``func`` with respect to the ``argnums`` arguments, column by column
    through Jacobian-vector products (``torch.func.jacfwd``)."""
    _check_randomness(randomness)
    return _jacobian(func, argnums, has_aux, "jacfwd", forward=True)


def hessian(func, argnums=0):
    """A function returning the Hessian of the scalar function ``func``: ``jacfwd(jacrev(func))``
    (``torch.func.hessian``)."""
    return jacfwd(jacrev(func, argnums), argnums)


def _check_randomness(randomness: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. "
                           f"Got {randomness}")


# -- vmap: the function runs once, on batched tensors -----------------------------------------------------------------

def _batch_size(leaves_dims: list, in_dims) -> int:
    sizes = []
    for x, d in leaves_dims:
        if d is None:
            continue
        if not _is_tensor(x):
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the input "
                             f"is of type {type(x)}. We cannot vmap over non-Tensor arguments, please use None as the "
                             f"respective in_dim")
        if not -x.dim() <= d < max(x.dim(), 1) or x.dim() == 0:
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but that "
                             f"input is a Tensor of dimensionality {x.dim()} so expected in_dim to satisfy "
                             f"-{x.dim()} <= in_dim < {x.dim()}.")
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): at least one input must be batched (an input "
                         f"with a non-None in_dim)")
    if len(set(sizes)) != 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _leaf_dims(args: tuple, in_dims) -> list:
    """``(leaf, in_dim)`` for every leaf of ``args``: an int or None applies to all leaves beneath it."""
    if isinstance(in_dims, int) or in_dims is None:
        return [(x, in_dims) for x in _flatten(args)[0]]
    if not isinstance(in_dims, (tuple, list)) or len(in_dims) != len(args):
        raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure "
                         f"of `inputs`. in_dims has structure {type(in_dims).__name__} of length "
                         f"{len(in_dims) if hasattr(in_dims, '__len__') else 1} but inputs has {len(args)} "
                         f"positional arguments.")
    pairs = []
    for a, d in zip(args, in_dims):
        if isinstance(d, (int, type(None))):
            pairs.extend((x, d) for x in _flatten(a)[0])
        else:
            dims = _flatten(d)[0]
            leaves = _flatten(a)[0]
            if len(dims) != len(leaves):
                raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                                 f"structure of `inputs`.")
            pairs.extend(zip(leaves, dims))
    return pairs


def _out_dims(out_dims, n_out: int) -> list:
    dims = [out_dims] * n_out if isinstance(out_dims, int) or out_dims is None else _flatten(out_dims)[0]
    if len(dims) != n_out:
        raise ValueError(f"vmap(f, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`.")
    return dims


def _run_chunk(func, rebuild, pairs: list, start: int, length: int, randomness: str, kwargs: dict):
    """``func`` run once on the samples ``start:start+length``: ``(leaves, rebuild)`` of its output, each leaf
    ``(the batch with the batch dimension first, True)`` or ``(tensor, False)`` for an output that is the same for
    every sample. A function that needs each sample's values as Python data runs sample by sample instead."""
    values = [None if d is None else x.movedim(d, 0).narrow(0, start, length) for x, d in pairs]
    level = _batched.push_level(length, randomness)
    try:
        out = func(*rebuild([x if v is None else _batched.wrap(v, level) for (x, _), v in zip(pairs, values)]),
                   **kwargs)
        leaves, out_rebuild = _flatten(out)
        _check_tensors(leaves)
        return [(leaf._value, True) if _batched._at(leaf, level) else (leaf, False) for leaf in leaves], out_rebuild
    except _batched.DataDependentError as error:
        if error.level is not level:
            raise
    finally:
        _batched.pop_level()
    return _loop_chunk(func, rebuild, pairs, range(start, start + length), kwargs)


def _loop_chunk(func, rebuild, pairs: list, samples, kwargs: dict):
    """``func`` once per sample: ``(leaves, rebuild)`` as :func:`_run_chunk` returns them, every leaf stacked."""
    from ..ops.shape import stack

    results = [_flatten(func(*rebuild([x if d is None else x.select(d, i) for x, d in pairs]), **kwargs))
               for i in samples]
    _check_tensors(results[0][0])
    return [(stack([r[0][k] for r in results]), True) for k in range(len(results[0][0]))], results[0][1]


def _check_tensors(leaves: list) -> None:
    for leaf in leaves:
        if not _is_tensor(leaf):
            raise ValueError(f"vmap(f, ...): `f` must only return Tensors, got type {type(leaf)}. Did you mean to "
                             f"set out_dims= to None for output?")


def _broadcast(value, n: int):
    """An output that is the same for every sample, broadcast over ``n`` samples (PyTorch returns it expanded)."""
    return value.unsqueeze(0).expand((n,) + tuple(value.shape))


def _place(parts: list, lengths: list, out_dim):
    """One output's chunks ``(value, batched)`` joined, batch first, then its batch dimension moved to ``out_dim``."""
    from ..ops.shape import cat

    if out_dim is None:
        if any(b for _, b in parts):
            raise ValueError("vmap(f, ..., out_dims=None)(<inputs>): the output is batched (it depends on a mapped "
                             "input) but out_dims is None for it")
        return parts[0][0]
    if not any(b for _, b in parts):
        return _broadcast(parts[0][0], sum(lengths)).movedim(0, out_dim)
    values = [v if b else _broadcast(v, n) for (v, b), n in zip(parts, lengths)]
    return (values[0] if len(values) == 1 else cat(values)).movedim(0, out_dim)


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``func`` mapped over a dimension of its inputs (``torch.func.vmap``): ``in_dims`` says which dimension of
    each argument is the batch (None: shared by every sample), ``out_dims`` where it goes in the outputs.

    Vectorised: ``func`` runs once (once per ``chunk_size`` samples) on batched tensors that look like one sample;
    each op applies a batching rule to the whole batch, or loops over the samples where it has none
    (``core/func/_batched.py``). ``randomness`` is PyTorch's: 'error' refuses random ops, 'different' draws per
    sample, 'same' draws once for the batch."""
    _check_randomness(randomness)
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    def wrapper(*args, **kwargs):
        pairs = _leaf_dims(args, in_dims)
        size = _batch_size(pairs, in_dims)
        _, rebuild = _flatten(args)
        step = chunk_size or size
        starts = range(0, size, step)
        lengths = [min(step, size - start) for start in starts]
        chunks = [_run_chunk(func, rebuild, pairs, start, n, randomness, kwargs) for start, n in zip(starts, lengths)]
        n_out = len(chunks[0][0])
        dims = _out_dims(out_dims, n_out)
        return chunks[0][1]([_place([c[0][k] for c in chunks], lengths, dims[k]) for k in range(n_out)])

    return wrapper


def _vmap_loop(func, in_dims=0, out_dims=0):
    """The reference ``vmap``: ``func`` once per sample, results stacked (the tests' oracle and the benchmark's
    'before')."""

    def wrapper(*args, **kwargs):
        pairs = _leaf_dims(args, in_dims)
        size = _batch_size(pairs, in_dims)
        leaves, out_rebuild = _loop_chunk(func, _flatten(args)[1], pairs, range(size), kwargs)
        dims = _out_dims(out_dims, len(leaves))
        return out_rebuild([_place([leaf], [size], d) if d is not None else leaf[0].select(0, 0)
                            for leaf, d in zip(leaves, dims)])

    return wrapper


# -- functional_call: a module run with other parameters and buffers ------------------------------------------------

def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """Run ``module(*args, **kwargs)`` with its parameters and buffers replaced by the tensors of
    ``parameter_and_buffer_dicts`` (dotted names; ``torch.func.functional_call``), then restore them."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, (list, tuple)):
        merged = {}
        for d in dicts:
            clash = set(merged) & set(d)
            if clash:
                raise ValueError(f"{sorted(clash)} appeared in multiple dictionaries; behavior of functional call "
                                 f"is ambiguous")
            merged.update(d)
        dicts = merged
    current = dict(module.named_parameters(remove_duplicate=False))
    current.update(module.named_buffers(remove_duplicate=False))
    if tie_weights:  # a tensor registered under several names is replaced under all of them
        replaced = {id(current[n]): v for n, v in dicts.items() if n in current}
        dicts = {**{n: replaced[id(t)] for n, t in current.items() if id(t) in replaced}, **dicts}
    if strict:
        missing, unexpected = sorted(set(current) - set(dicts)), sorted(set(dicts) - set(current))
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}: missing keys {missing}, "
                               f"unexpected keys {unexpected}")
    saved = []
    try:
        for name, value in dicts.items():
            owner_name, _, leaf = name.rpartition(".")
            owner = module.get_submodule(owner_name) if owner_name else module
            registry = owner._parameters if leaf in owner._parameters else owner._buffers if leaf in owner._buffers \
                else None
            if registry is None:
                continue  # a key that names no parameter or buffer (strict mode has refused it above)
            saved.append((registry, leaf, registry[leaf]))
            registry[leaf] = value
        args = () if args is None else args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for registry, leaf, original in reversed(saved):
            registry[leaf] = original


def stack_module_state(models) -> tuple:
    """``(params, buffers)``: dicts of each parameter and buffer of ``models`` stacked along a new first
    dimension, ready for ``vmap(functional_call...)`` over an ensemble (``torch.func.stack_module_state``)."""
    from ..ops.shape import stack

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named) -> dict:
        per_model = [dict(named(m)) for m in models]
        return {k: stack([d[k].detach() for d in per_model]) for k in per_model[0]}

    params = stacked(lambda m: m.named_parameters())
    for k, p in params.items():
        if any(dict(m.named_parameters())[k].requires_grad for m in models):
            p.requires_grad_(True)  # a new leaf, as PyTorch's
    return params, stacked(lambda m: m.named_buffers())
