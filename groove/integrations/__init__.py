"""groove inside the coding agents people run: an MCP server (and, next, their session hooks). Built on the
client library (`agents`) and the protocol only, like any other client."""
