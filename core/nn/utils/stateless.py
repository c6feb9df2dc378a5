"""Call a module with other parameter and buffer values (``torch.nn.utils.stateless``)."""

from __future__ import annotations

import contextlib

__all__ = ["functional_call"]


def _owner(module, name: str):
    """(the submodule holding the dotted ``name``, its last part)."""
    *path, leaf = name.split(".")
    for part in path:
        module = getattr(module, part)
    return module, leaf


def _merged(parameter_and_buffer_dicts) -> dict:
    if isinstance(parameter_and_buffer_dicts, dict):
        return dict(parameter_and_buffer_dicts)
    merged: dict = {}
    for values in parameter_and_buffer_dicts:
        for key, value in values.items():
            if key in merged:
                raise ValueError(f"{key} appeared in multiple dictionaries; behavior of functional call is "
                                 f"ambiguous")
            merged[key] = value
    return merged


def _with_ties(module, values: dict) -> dict:
    """``values`` plus, for every tensor registered under several names, the given value under its other names."""
    names_of: dict = {}
    for kind in ("named_parameters", "named_buffers"):
        for name, tensor in getattr(module, kind)(remove_duplicate=False):
            names_of.setdefault(id(tensor), []).append(name)
    tied = dict(values)
    for names in names_of.values():
        given = [n for n in names if n in values]
        if len(given) > 1 and any(values[n] is not values[given[0]] for n in given):
            raise ValueError(f"functional_call got multiple values for keys {given}, which are tied. Consider using "
                             f"tie_weights=False")
        for name in names:
            if given and name not in tied:
                tied[name] = values[given[0]]
    return tied


@contextlib.contextmanager
def _swapped(module, values: dict):
    """Within the context the named parameters/buffers of ``module`` are the given tensors."""
    saved = []
    try:
        for name, value in values.items():
            owner, leaf = _owner(module, name)
            registry = owner._parameters if leaf in owner._parameters else owner._buffers \
                if leaf in owner._buffers else None
            if registry is None:
                saved.append((owner, leaf, None, owner.__dict__.get(leaf, _MISSING)))
                owner.__dict__[leaf] = value
            else:
                saved.append((owner, leaf, registry, registry[leaf]))
                registry[leaf] = value
        yield
    finally:
        for owner, leaf, registry, old in reversed(saved):
            if registry is not None:
                registry[leaf] = old
            elif old is _MISSING:
                owner.__dict__.pop(leaf, None)
            else:
                owner.__dict__[leaf] = old


_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """``module(*args, **kwargs)`` with its parameters and buffers replaced, for this call only, by the tensors
    the dict (or dicts) name; names not given keep the module's own (``torch.nn.utils.stateless.functional_call``).
    Gradients flow to the given tensors."""
    values = _merged(parameter_and_buffer_dicts)
    if strict:
        expected = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
        missing, unexpected = sorted(expected - set(values)), sorted(set(values) - expected)
        if missing or unexpected:
            messages = ([f"Unexpected key(s): {', '.join(map(repr, unexpected))}."] if unexpected else []) + \
                       ([f"Missing key(s): {', '.join(map(repr, missing))}."] if missing else [])
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(messages))
    if tie_weights:
        values = _with_ties(module, values)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _swapped(module, values):
        return module(*args, **(kwargs or {}))
