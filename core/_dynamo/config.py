"""Settings of ``core.compile`` (``torch._dynamo.config``): assign to change them, e.g.
``core._dynamo.config.cache_size_limit = 16``."""

# Graphs kept per compiled function (one per guard set: shapes, dtypes, Python values, ...); a call that would
# need one more runs eagerly, with a one-time warning (torch._dynamo.config.cache_size_limit, default 8).
cache_size_limit: int = 8
