"""The groove coordinator: the one process that owns every tier's database and serves all agents.

It imports `protocol` and owns storage, batching, embedding and search.
"""

import os

# numpy's OpenBLAS keeps its worker threads spinning after each call; next to torch's own threads on two
# cores that made every query embedding ≈ 40 % slower (15 -> 19 ms forward pass here). The matrix-vector
# products of exact search gain little from a second thread. Set before anything imports numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
