"""An MCP client built on the official Python SDK (`mcp` on PyPI), used by Bosun's tests as a
real peer of `bosun serve`.

Usage: python mcp_client.py PLAN_JSON
PLAN: {"stdio": {"command", "args", "env", "cwd"}} or {"url", "token"?},
      "mode": "auto" | "legacy", "elicit": "accept" | "accept_session" | "decline" | null,
      "calls": [{"name", "arguments"}], "prompts": [names to get, after listing them],
      "listen": true to make the calls with a `subscriptions/listen` stream open (2026-07-28)
Prints one JSON object: the negotiated protocol, the tools listed, each call's result (or the
error it raised), the elicitation messages the server sent, and what the listen stream heard.
"""

import asyncio
import json
import sys

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main():
    plan = json.loads(sys.argv[1])
    elicited = []

    async def on_elicit(context, params):
        elicited.append(params.message)
        answer = plan.get("elicit")
        if answer == "accept":
            return types.ElicitResult(action="accept", content={})
        if answer == "accept_session":
            return types.ElicitResult(action="accept", content={"allow_for_this_session": True})
        return types.ElicitResult(action="decline")

    if "stdio" in plan:
        s = plan["stdio"]
        server = StdioServerParameters(command=s["command"], args=s["args"], env=s["env"], cwd=s["cwd"])
    else:
        headers = {}
        if plan.get("token"):
            headers["Authorization"] = "Bearer " + plan["token"]
        server = streamable_http_client(plan["url"], http_client=httpx2.AsyncClient(headers=headers, timeout=30))

    notifications = []

    async def on_message(message):
        method = getattr(message, "method", None)
        if method is None and hasattr(message, "root"):
            method = getattr(message.root, "method", None)
        if method:
            notifications.append(method)

    callback = on_elicit if plan.get("elicit") is not None else None
    out = {"calls": []}
    async with Client(server, mode=plan.get("mode", "auto"), elicitation_callback=callback, cache=None,
                      message_handler=on_message) as client:
        out["protocol"] = client.protocol_version
        out["server"] = dump(client.server_info) if client.server_info else None
        listed = await client.list_tools()
        out["tools"] = [dump(t) for t in listed.tools]

        async def calls():
            for call in plan.get("calls", []):
                try:
                    result = await client.call_tool(call["name"], call.get("arguments", {}))
                    out["calls"].append(dump(result))
                except Exception as e:  # a protocol error: report it as data
                    out["calls"].append({"raised": f"{type(e).__name__}: {e}"})

        if plan.get("listen"):
            # 2026-07-28: changes arrive on a `subscriptions/listen` stream the client opens.
            events = []
            async with client.listen(tools_list_changed=True) as sub:
                async def collect():
                    async for event in sub:
                        events.append(type(event).__name__)
                task = asyncio.create_task(collect())
                await calls()
                for _ in range(100):
                    if events:
                        break
                    await asyncio.sleep(0.05)
                task.cancel()
            out["listened"] = events
        else:
            await calls()
        listed = await client.list_tools()
        out["tools_after"] = [t.name for t in listed.tools]
        if plan.get("prompts"):
            prompts = await client.list_prompts()
            out["prompts"] = [dump(p) for p in prompts.prompts]
            out["got"] = []
            for name in plan["prompts"]:
                try:
                    out["got"].append(dump(await client.get_prompt(name, {"task": "ship it"})))
                except Exception as e:
                    out["got"].append({"raised": f"{type(e).__name__}: {e}"})
    out["elicited"] = elicited
    out["notifications"] = notifications
    print(json.dumps(out))


asyncio.run(main())
