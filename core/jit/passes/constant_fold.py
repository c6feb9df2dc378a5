"""Placeholder being written (helper in progress): replace this whole file."""


def constant_fold(graph):
    return graph
