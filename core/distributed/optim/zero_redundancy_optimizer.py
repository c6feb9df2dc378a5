"""``ZeroRedundancyOptimizer``: each rank keeps the optimizer state of its own share of the parameters (ZeRO
stage 1), updates only those, and broadcasts them to the other ranks after each step."""

from __future__ import annotations

from ...optim.optimizer import Optimizer
from .. import distributed_c10d as c10d

__all__ = ["ZeroRedundancyOptimizer"]


class ZeroRedundancyOptimizer(Optimizer):
    """Wraps ``optimizer_class`` so that its state is sharded over the group's ranks
    (``torch.distributed.optim.ZeroRedundancyOptimizer``).

    The parameters of each group are dealt out largest first to the rank holding the fewest elements so far (as
    PyTorch). ``step`` runs the local optimizer over this rank's share (with the hyper-parameters of
    ``param_groups``, so learning-rate schedulers work) and then broadcasts every parameter from its owner. The
    full state dict exists only after ``consolidate_state_dict(to)``, on rank ``to``. ``parameters_as_bucket_view``
    and ``overlap_with_ddp`` are accepted; neither changes the result (no bucket views, no DDP overlap).
    """

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view: bool = False,
                 overlap_with_ddp: bool = False, **defaults):
        super().__init__(params, defaults)
        self.process_group = c10d._group(process_group)
        self.parameters_as_bucket_view, self.overlap_with_ddp = parameters_as_bucket_view, overlap_with_ddp
        self.rank, size = self.process_group.rank, self.process_group.size
        self._owner: dict = {}  # id(param) -> owning group rank
        local_groups = []
        loads = [0] * size
        for group in self.param_groups:
            mine = []
            for p in sorted(group["params"], key=lambda t: -t.numel()):
                owner = min(range(size), key=loads.__getitem__)
                loads[owner] += p.numel()
                self._owner[id(p)] = owner
                if owner == self.rank:
                    mine.append(p)
            order = {id(p): i for i, p in enumerate(group["params"])}
            local_groups.append({**{k: v for k, v in group.items() if k != "params"},
                                 "params": sorted(mine, key=lambda t: order[id(t)])})
        self._local_params = [p for g in local_groups for p in g["params"]]
        self.optim = optimizer_class([g for g in local_groups if g["params"]] or [{"params": []}], **defaults) \
            if self._local_params else None
        self._all_state_dicts = None

    def _global_indices(self) -> dict:
        index: dict = {}
        for group in self.param_groups:
            for p in group["params"]:
                index.setdefault(id(p), len(index))
        return index

    def _sync_param_groups(self) -> None:
        """Copy ``param_groups``' hyper-parameters (a scheduler may have changed them) into the local optimizer."""
        if self.optim is None:
            return
        local = iter(self.optim.param_groups)
        for group in self.param_groups:
            if any(self._owner[id(p)] == self.rank for p in group["params"]):
                next(local).update({k: v for k, v in group.items() if k != "params"})

    def step(self, closure=None):
        """Update this rank's parameters, then every parameter from its owner (``ZeroRedundancyOptimizer.step``)."""
        self._sync_param_groups()
        loss = self.optim.step(closure) if self.optim is not None else (closure() if closure else None)
        works = [c10d.broadcast(p.detach(), group=self.process_group, group_src=self._owner[id(p)], async_op=True)
                 for group in self.param_groups for p in group["params"]]
        for work in works:
            work.wait()
        return loss

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's optimizer state on rank ``to`` (``ZeroRedundancyOptimizer.consolidate_state_dict``);
        every rank must call it."""
        index = self._global_indices()
        local = self.optim.state_dict()["state"] if self.optim is not None else {}
        mine = {index[id(p)]: local[i] for i, p in enumerate(self._local_params) if i in local}
        gathered = [None] * self.process_group.size if self.rank == to else None
        c10d.gather_object(mine, gathered, group=self.process_group, group_dst=to)
        self._all_state_dicts = {k: v for part in gathered for k, v in part.items()} if gathered else None

    def state_dict(self) -> dict:
        """The whole optimizer's state dict, PyTorch's layout; only on the rank ``consolidate_state_dict`` chose."""
        if self._all_state_dicts is None:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               "`consolidate_state_dict(to=0)` on all ranks beforehand if you meant to save the "
                               "global state.")
        state_dict = super().state_dict()
        state_dict["state"] = dict(sorted(self._all_state_dicts.items()))
        return state_dict

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a full state dict: each rank keeps its own parameters' state (``ZeroRedundancyOptimizer
        .load_state_dict``)."""
        for group, saved in zip(self.param_groups, state_dict["param_groups"]):
            group.update({k: v for k, v in saved.items() if k != "params"})
        if self.optim is None:
            return
        index = self._global_indices()
        local = self.optim.state_dict()
        local["state"] = {i: state_dict["state"][index[id(p)]] for i, p in enumerate(self._local_params)
                          if index[id(p)] in state_dict["state"]}
        self.optim.load_state_dict(local)
        self._sync_param_groups()
