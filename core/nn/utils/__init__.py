"""``core.nn.utils``: gradient clipping and parameter/vector conversion."""

__all__: list = []
