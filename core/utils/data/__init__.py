"""``core.utils.data``: datasets, samplers and the DataLoader."""
