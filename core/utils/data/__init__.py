"""``core.utils.data``: datasets, samplers and the DataLoader (``torch.utils.data``)."""

from __future__ import annotations

from ._worker import WorkerInfo, get_worker_info
from .collate import default_collate, default_convert
from .dataloader import DataLoader, _DatasetKind
from .datapipes import (DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe, argument_validation,
                        functional_datapipe, guaranteed_datapipes_determinism, non_deterministic,
                        runtime_validation, runtime_validation_disabled)
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DFIterDataPipe", "DataChunk", "DataLoader", "Dataset",
           "DistributedSampler", "IterDataPipe", "IterableDataset", "MapDataPipe", "RandomSampler", "Sampler",
           "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset",
           "WeightedRandomSampler", "WorkerInfo", "argument_validation", "default_collate", "default_convert",
           "functional_datapipe", "get_worker_info", "guaranteed_datapipes_determinism", "non_deterministic",
           "random_split", "runtime_validation", "runtime_validation_disabled"]
