"""An MCP server built on the official Python SDK (`mcp` on PyPI) that answers `tools/call` the
2026-07-28 way: with `input_required` results (multi-round requests). Under 2025-11-25 and
older the same tools answer at once.

Usage: python mcp_rounds_server.py [stdio | http PORT]
Its tools:
- rounds(n): answers `input_required` carrying only `requestState` until it was called back n
  times with it, then "done after n rounds";
- ask(): answers `input_required` with a form elicitation ("Which branch?");
- version(): the protocol revision the client negotiated.
"""

import sys

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

app = MCPServer("rounds")


@app.tool()
def rounds(n: int, ctx: Context) -> str | InputRequiredResult:
    """Answer after being called back n times with request state."""
    done = int(ctx.request_state or "0")
    if done < n:
        return InputRequiredResult(request_state=str(done + 1))
    return f"done after {done} rounds"


@app.tool()
def ask(ctx: Context) -> str | InputRequiredResult:
    """Ask the client's user a question before answering."""
    if ctx.input_responses:
        return "answered"
    question = ElicitRequest(
        params=ElicitRequestFormParams(
            message="Which branch?",
            requested_schema={"type": "object", "properties": {"branch": {"type": "string"}}},
        )
    )
    return InputRequiredResult(input_requests={"branch": question})


@app.tool()
def version(ctx: Context) -> str:
    """The protocol revision of this call."""
    return str(ctx.protocol_version)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run("stdio")
