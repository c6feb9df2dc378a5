"""The engine: dependency counting from the roots, then a walk in topological order.

Gradients arriving at a node are summed per output; a node runs when every
node that feeds it has run. Leaves accumulate (``+=``) into ``.grad``;
``autograd.grad`` captures the gradients at the requested inputs instead.
Without ``retain_graph`` each node frees its saved tensors after it runs.
"""

from __future__ import annotations

from ..dispatch.keys import Autograd, tls
from .anomaly import check_nan, is_anomaly_enabled
from .accumulate import SOLE, count_references
from .accumulate import accumulate as _accumulate
from .graph import AccumulateGrad, edge_of

__all__ = ["run_backward", "queue_callback"]

_CALLBACKS: list = []  # one list per running backward pass, innermost last: run when that pass has finished


def queue_callback(callback) -> None:
    """Call ``callback()`` once the running backward pass has finished (PyTorch's engine ``queue_callback``)."""
    if not _CALLBACKS:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _CALLBACKS[-1].append(callback)


def _reaching(roots, targets: set) -> set:
    """Nodes from which some node in ``targets`` can be reached (``autograd.grad`` runs only those)."""
    memo: dict = {}
    for root, _ in roots:
        stack = [(root, iter(root.next_functions))]
        memo.setdefault(root, root in targets)
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                if stack and memo[node]:
                    memo[stack[-1][0]] = True
                continue
            child = child[0]
            if child is None:
                continue
            if child in memo:
                if memo[child]:
                    memo[node] = True
                continue
            memo[child] = child in targets
            stack.append((child, iter(child.next_functions)))
    return {node for node, reaches in memo.items() if reaches}


def _dependencies(roots, keep=None) -> dict:
    """How many edges run into each node below the roots (within ``keep`` when given): a node runs once that
    many gradients have arrived."""
    counts: dict = {}
    # plain loops (fewer Python frames per backward); ``counts`` doubles as the set of nodes already walked, the
    # roots apart: two outputs of one node passed together must not count its children twice
    stack = []
    for node, _ in roots:
        if node is not None and (keep is None or node in keep) and node not in stack:
            stack.append(node)
    walked = set(stack)
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None or (keep is not None and child not in keep):
                continue
            seen = counts.get(child)
            counts[child] = 1 if seen is None else seen + 1
            if seen is None and child not in walked:
                stack.append(child)
    return counts


def _before(node, grads: list) -> list:
    """The gradients ``node`` receives, through its tensors' hooks (``Tensor.register_hook`` on a non-leaf) and
    its pre-hooks (``Node.register_prehook``)."""
    per_output = node._metadata.get("tensor_hooks") if node._metadata else None
    if per_output:
        for i in range(len(grads)):
            if grads[i] is not None:
                for hook in per_output.get(i, ()):
                    result = hook(grads[i])
                    if result is not None:
                        grads[i] = result
    for pre in node._pre_hooks or ():
        result = pre(tuple(grads))
        if result is not None:
            grads = list(result)
    return grads


def run_backward(tensors, grad_tensors, retain_graph: bool, create_graph: bool, inputs=None,
                 allow_unused: bool = False, accumulate: bool = True):
    """Backpropagate ``grad_tensors`` from ``tensors``; returns captured grads of ``inputs`` when not accumulating."""
    if tls.recording is not None:  # a whole-step capture: the program runs its own backward
        from ..dispatch.capture import note_backward

        note_backward()
    roots = []
    for t in tensors:
        edge = edge_of(t)
        if edge[0] is None:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        roots.append(edge)
    capture = {}
    if inputs is not None:
        for i, t in enumerate(inputs):
            edge = edge_of(t)
            if edge[0] is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            capture.setdefault((edge[0], edge[1]), []).append(i)
    captured = [None] * (len(inputs) if inputs is not None else 0)
    keep = _reaching(roots, {node for node, _ in capture}) if inputs is not None and not accumulate else None
    counts = _dependencies(roots, keep)
    buffers: dict = {}
    ready = []
    for (node, nr), g in zip(roots, grad_tensors):
        slot = buffers.setdefault(node, [None] * node.num_outputs)
        slot[nr] = g if slot[nr] is None else slot[nr] + g
        if counts.get(node, 0) == 0 and (keep is None or node in keep) and node not in ready:
            ready.append(node)
    previous = tls.exclude
    tls.exclude = previous & ~Autograd.mask if create_graph else previous | Autograd.mask
    anomaly = is_anomaly_enabled()
    _CALLBACKS.append([])
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None) or [None] * node.num_outputs
            if node._metadata is not None or node._pre_hooks is not None:
                grads = _before(node, grads)
            leaf = node.__class__ is AccumulateGrad
            if leaf and grads[0] is not None and "_leaf_hooks" in node.variable.__dict__:
                grads[0] = _leaf_hooks(node.variable, grads[0])
            if capture:
                for i, g in enumerate(grads):
                    for position in capture.get((node, i), ()):
                        captured[position] = g
            if leaf:
                if grads[0] is not None and accumulate and (inputs is None or (node, 0) in capture):
                    variable = node.variable
                    _accumulate(variable, grads[0], create_graph)
                    for hook in variable.__dict__.get("_post_accumulate_grad_hooks", ()):
                        hook(variable)  # Tensor.register_post_accumulate_grad_hook: sees the new .grad
                continue
            if keep is not None and not any(child in keep for child, _ in node.next_functions):
                continue  # a requested input's own node: its gradient is captured, nothing below is needed
            input_grads = node.apply(grads)
            if anomaly:
                check_nan(node, input_grads)
            if node._hooks is not None:
                for hook in node._hooks:
                    result = hook(input_grads, tuple(grads))
                    if result is not None:
                        input_grads = tuple(result)
            if not retain_graph:
                node.release()
            for (child, nr), g in zip(node.next_functions, input_grads):
                if child is None or (keep is not None and child not in keep):
                    continue
                if g is not None:
                    slot = buffers.get(child)
                    if slot is None:
                        slot = buffers[child] = [None] * child.num_outputs
                    slot[nr] = g if slot[nr] is None else slot[nr] + g
                left = counts[child] - 1
                counts[child] = left
                if not left:
                    ready.append(child)
            input_grads = g = result = None  # no stale references: _accumulate counts them to steal a gradient
        for callback in _CALLBACKS[-1]:
            callback()
    finally:
        _CALLBACKS.pop()
        tls.exclude = previous
    if inputs is not None and not accumulate:
        for g in captured:
            if g is None and not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
        return tuple(captured)
    return None


def _leaf_hooks(variable, grad):
    for hook in variable.__dict__.get("_leaf_hooks", ()):  # registered with Tensor.register_hook on a leaf
        result = hook(grad)
        if result is not None:
            grad = result
    return grad


def _sole_references() -> int:
    """What :func:`core.autograd.accumulate.accumulate` counts for a gradient only the engine's list holds: the
    same call shape as the engine's ``_accumulate(variable, grads[0], ...)``. Its count depends on how this module
    runs (compiled, core/_hot.py, passes arguments with one more reference than the interpreter)."""
    held = [object()]
    return count_references(held[0])


SOLE[0] = _sole_references()
