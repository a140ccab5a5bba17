"""An MCP server built on the official Python SDK's low-level server (`mcp` on PyPI) that lists
exactly the tools a test gives it, byte for byte: for hostile descriptions, schemas, titles and
annotations that the SDK's decorators would not produce.

Usage: python mcp_hostile_server.py TOOLS_JSON_FILE
TOOLS_JSON_FILE holds a JSON list of tools as `tools/list` carries them. Every call answers
"ok".
"""

import json
import sys

import anyio
import mcp.server.stdio
import mcp_types as types
from mcp.server.lowlevel import Server

with open(sys.argv[1], encoding="utf-8") as f:
    TOOLS = [types.Tool.model_validate(tool) for tool in json.load(f)]


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])


server = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with mcp.server.stdio.stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


anyio.run(main)
