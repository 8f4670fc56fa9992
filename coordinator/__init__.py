"""The groove coordinator: the one process that owns every tier's database and serves all agents.

It imports `protocol` and owns storage, batching and (later) embedding and search.
"""

__version__ = "0.1.0"
