"""Placeholder being written (helper in progress): replace this whole file."""


def cse(graph):
    return graph
