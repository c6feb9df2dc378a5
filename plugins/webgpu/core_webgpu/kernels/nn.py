"""placeholder"""


def kernels(runtime) -> dict:
    return {}
