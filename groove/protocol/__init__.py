"""groove's wire protocol: envelope, operation models, msgpack codec and error codes.

Knows nothing of storage or transport; both the coordinator and the agents' client build on it.
"""

from groove.protocol.constants import PROTOCOL_VERSION
from groove.protocol.errors import ErrorCode, ProtocolError

__all__ = ["PROTOCOL_VERSION", "ErrorCode", "ProtocolError"]
