"""An MCP server built on the official Python SDK (`mcp` on PyPI) that keeps what it is sent in
its memory for as long as its process lives, and tells it to whoever asks: the shape of any
server that serves several sessions. Bosun's tests start it over stdio.

Its tools:
- keep(text): keeps `text`;
- recall(): every text kept so far, one a line;
- leave(): ends the process (its memory with it).
"""

import os

from mcp.server import MCPServer

app = MCPServer("memory")
kept: list[str] = []


@app.tool()
def keep(text: str) -> str:
    """Keep a note."""
    kept.append(text)
    return "kept"


@app.tool()
def recall() -> str:
    """Every note kept so far."""
    return "\n".join(kept) or "nothing kept"


@app.tool()
def leave() -> str:
    """End this server."""
    os._exit(0)


if __name__ == "__main__":
    app.run("stdio")
