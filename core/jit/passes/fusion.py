"""Placeholder being written (helper in progress): replace this whole file."""


def fusion(graph):
    return graph
