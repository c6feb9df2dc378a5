"""``core.compile`` and ``core.compiler``: capture a function or module into ``core.jit`` graphs, guarded.

See docs/jit.md ("core.compile") for what is guarded, the backends and the fallbacks.
"""

from __future__ import annotations

import functools

from ..nn.modules.module import Module
from .backends import GraphModule, list_backends, lookup_backend
from .compiled import CompiledFunction, OptimizedModule, is_compiling, reset

__all__ = ["compile", "reset", "is_compiling", "is_dynamo_compiling", "disable", "list_backends", "GraphModule",
           "OptimizedModule"]

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def is_dynamo_compiling() -> bool:
    """Whether a ``core.compile`` capture is running in this thread (``torch.compiler.is_dynamo_compiling``)."""
    return is_compiling()


def _check_options(fullgraph, dynamic, mode, options) -> None:
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"core.compile(): options must be a dict, got {type(options).__name__}")
    if dynamic not in (None, True, False):
        raise TypeError(f"core.compile(): dynamic must be None, True or False, got {dynamic!r}")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"core.compile(): fullgraph must be a bool, got {type(fullgraph).__name__}")


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor", mode=None, options=None,
            disable: bool = False):
    """Compile a function or module into guarded ``core.jit`` graphs (``torch.compile``).

    Returns a callable with the same behaviour (an :class:`OptimizedModule` for a module); with ``model=None``
    a decorator. The first call per guard set (shapes, dtypes, devices, ``requires_grad``, Python argument
    values, training flags, the simple globals the code reads) traces the program; later calls replay the
    backend's graph. Programs that read tensor data into Python run eagerly (``fullgraph=True``: raise
    ``core._dynamo.exc.Unsupported``). ``dynamic``: ``None`` makes a dimension dynamic once a second size of it
    is seen (one graph then serves every size), ``True`` makes every dimension dynamic from the first call,
    ``False`` compiles one graph per shape; ``core._dynamo.mark_dynamic`` marks one dimension (see
    :mod:`.dynamic`). At most ``core._dynamo.config.cache_size_limit`` graphs, then eager.
    ``mode="reduce-overhead"`` (and ``"max-autotune"``) records whole calls — forward, backward and optimizer
    step — as kernel calls and replays them with no per-op Python (:mod:`.capture`), where PyTorch uses CUDA
    graphs; other modes and ``options`` are validated hints. ``disable=True`` returns ``model`` unchanged.
    """
    _check_options(fullgraph, dynamic, mode, options)
    compiler = lookup_backend(backend)
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if disable or getattr(model, "_core_compile_disabled", False):
        return model
    if isinstance(model, Module):
        compiled = CompiledFunction(model._call_impl, model, compiler, fullgraph, type(model).__name__, dynamic)
        return OptimizedModule(model, _captured(compiled, mode))
    if not callable(model):
        raise RuntimeError(f"core.compile(): expected a function or a Module, got {type(model).__name__}")
    owner = getattr(model, "__self__", None)
    module = owner if isinstance(owner, Module) else None
    return _captured(CompiledFunction(model, module, compiler, fullgraph,
                                      getattr(model, "__name__", type(model).__name__), dynamic), mode)


def _captured(compiled: CompiledFunction, mode):
    """``compiled`` behind whole-step capture for the modes that use CUDA graphs in PyTorch (see :mod:`.capture`)."""
    if mode not in ("reduce-overhead", "max-autotune"):
        return compiled
    from .capture import CapturedFunction

    return CapturedFunction(compiled.fn, compiled.module, compiled, compiled.name, compiled.fullgraph)


def disable(fn=None, recursive: bool = True, *, reason=None):
    """Keep ``fn`` out of compiled graphs (``torch.compiler.disable``): it always runs eagerly; a capture that
    calls it is abandoned and those inputs run eagerly (a graph break). Usable as ``@disable`` and
    ``@disable(reason=...)``."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    from .compiled import graph_break

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        graph_break(f"it calls {getattr(fn, '__qualname__', fn)!s}, which core.compiler.disable keeps eager"
                    + (f" ({reason})" if reason else ""))
        return fn(*args, **kwargs)

    wrapper._core_compile_disabled = True
    return wrapper


def compile_module_in_place(module: Module, *args, **kwargs) -> None:
    """``module.compile(...)``: its calls run through ``compile(module._call_impl, ...)``."""
    compiled = compile(module._call_impl, *args, **kwargs)
    object.__setattr__(module, "_compiled_call_impl", compiled)
