"""An MCP server built on the official Python SDK (`mcp` on PyPI) that answers only requests
carrying the right `X-Api-Key` header (401 otherwise), over the older HTTP+SSE transport
(`mcp.server.sse`: GET /sse, then POST /messages/) or Streamable HTTP (/mcp). Bosun's tests use
it as a server an editor passes with its header values.

Usage: BOSUN_TEST_API_KEY=<key> python mcp_keyed_server.py (sse | http) PORT
Its tools:
- add(a, b): the sum;
- whoami(): says the key was accepted, without repeating it;
- echo_key(): repeats the key the request carried, as a careless server would.
Every request it refused is counted in `refused.txt` in its working directory.
"""

import os
import sys
from pathlib import Path

import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

KEY = os.environ["BOSUN_TEST_API_KEY"]
app = MCPServer("keyed")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def whoami() -> str:
    """Say whether the key was accepted."""
    return "accepted: the editor's key reached the server"


@app.tool()
def echo_key(ctx: Context) -> str:
    """Repeat the X-Api-Key header this request carried."""
    request = ctx.request_context.request
    return f"you sent {request.headers.get('x-api-key')}"


def keyed(inner):
    """Refuses, with 401, every HTTP request whose X-Api-Key is not KEY."""

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"x-api-key", b"").decode("latin-1")
            if given != KEY:
                with open("refused.txt", "a") as f:
                    f.write("1\n")
                await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"X-Api-Key required"})
                return
        await inner(scope, receive, send)

    return guarded


if __name__ == "__main__":
    transport, port = sys.argv[1], int(sys.argv[2])
    if transport == "sse":
        served = app.sse_app(host="127.0.0.1")
    else:
        served = app.streamable_http_app(host="127.0.0.1")
    uvicorn.run(keyed(served), host="127.0.0.1", port=port, log_level="warning")
