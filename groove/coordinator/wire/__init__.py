"""The coordinator's half of the wire, which no client needs: a request's checks and decoding against the
operation registry (codec.py), a body's digest (digests.py), and a checked body rebuilt from its fields without
validating it again (rebuild.py). The shapes themselves are `groove.protocol`'s.
"""
