"""Drives three `bosun serve --http` instances behind HAProxy with the official Python MCP SDK
(protocol 2026-07-28) and raw HTTP for what the SDK will not send (a forged or replayed
request state). HAProxy names the instance that answered in `X-Bosun-Instance`.

Usage: python fleet_client.py PLAN_JSON
PLAN: {"url": HAProxy's /mcp, "instances": {"s1": direct /mcp URL, ...},
       "kill": PID to kill during the load run, "clients": N, "calls": M,
       "settle": seconds to wait before the load run}
Prints one JSON object with what happened.
"""

import asyncio
import json
import os
import signal
import sys

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main():
    plan = json.loads(sys.argv[1])
    out = {}
    exchanges = []

    async def on_request(request):
        request.read()

    async def on_response(response):
        request = response.request
        body = request.content.decode() if request.content else ""
        exchanges.append({
            "instance": response.headers.get("x-bosun-instance"),
            "status": response.status_code,
            "body": body,
            "headers": {k: v for k, v in request.headers.items()
                        if k.lower() not in ("host", "content-length", "connection")},
        })

    async def accept(context, params):
        return types.ElicitResult(action="accept", content={})

    http = httpx2.AsyncClient(timeout=30, event_hooks={"request": [on_request], "response": [on_response]})
    async with Client(streamable_http_client(plan["url"], http_client=http), mode="auto",
                      elicitation_callback=accept, cache=None) as client:
        out["protocol"] = client.protocol_version
        read = await client.call_tool("read_file", {"path": "src/lib.rs"})
        out["read"] = dump(read)
        read_exchange = next(e for e in exchanges if '"tools/call"' in e["body"])
        exchanges.clear()
        asked = await client.call_tool("run_command", {"program": "touch", "args": ["asked.txt"]})
        out["asked"] = dump(asked)
    calls = [e for e in exchanges if '"tools/call"' in e["body"]]
    out["asked_attempts"] = [e["instance"] for e in calls]
    retry = next((e for e in calls if "requestState" in e["body"]), None)
    out["retry_found"] = retry is not None

    raw = httpx2.AsyncClient(timeout=30)

    def message_of(text):
        """The JSON-RPC response in a body sent as JSON or as one SSE event."""
        text = text.strip()
        if text.startswith("{"):
            return json.loads(text)
        for line in text.splitlines():
            if line.startswith("data:") and '"jsonrpc"' in line:
                return json.loads(line[len("data:"):])
        return None

    async def post(url, body, headers):
        response = await raw.post(url, content=body, headers=headers)
        return {"status": response.status_code, "instance": response.headers.get("x-bosun-instance"),
                "text": response.text, "message": message_of(response.text)}

    # One call sent straight to each instance, each in a trace of its own (a `traceparent`
    # in `_meta`), so the collector's spans can be told apart by instance.
    traced = {}
    template = json.loads(read_exchange["body"])
    for number, (name, url) in enumerate(sorted(plan["instances"].items())):
        trace_id = "%032x" % (0x5eed0000 + number + 1)
        meta = dict(template["params"].get("_meta", {}), traceparent=f"00-{trace_id}-00000000000000a1-01")
        params = dict(template["params"], _meta=meta)
        body = dict(template, id=1000 + number, params=params)
        answer = await post(url, json.dumps(body), read_exchange["headers"])
        traced[name] = {"trace_id": trace_id, "status": answer["status"], "message": answer["message"]}
    out["traced"] = traced

    if retry is not None:
        message = json.loads(retry["body"])
        state = message["params"]["requestState"]
        # Forged: the state with one character changed, through the load balancer.
        flipped = state[:-2] + ("A" if state[-2] != "A" else "B") + state[-1]
        forged = dict(message, params=dict(message["params"], requestState=flipped))
        out["forged"] = await post(plan["url"], json.dumps(forged), retry["headers"])
        # Replayed: the very retry again, to the instance that redeemed it, and to another.
        out["replayed"] = await post(plan["instances"][retry["instance"]], retry["body"], retry["headers"])
        other = next(n for n in sorted(plan["instances"]) if n != retry["instance"] and n != plan.get("killed_name"))
        out["replayed_elsewhere"] = await post(plan["instances"][other], retry["body"], retry["headers"])
        out["replayed_elsewhere"]["to"] = other

    # Instances export spans at most 2 s after a call: the one killed below has sent its own
    # by then.
    await asyncio.sleep(plan.get("settle", 0))

    # The load run: clients call through the load balancer while one instance is killed;
    # a call that fails is retried (read_file is idempotent). When the killed instance drops a
    # connection mid-call, the SDK's transport ends the whole client session (its task group
    # cancels the call in flight); a real client opens a new session and goes on, and so does
    # this one: the call that was cut off is made again on the new session, never counted twice.
    done = {"calls": 0, "retries": 0, "failed": 0, "reconnects": 0}
    total = plan["clients"] * plan["calls"]

    async def worker():
        remaining = plan["calls"]
        for _ in range(6):
            if remaining == 0:
                return
            try:
                async with Client(streamable_http_client(plan["url"], http_client=httpx2.AsyncClient(timeout=30)),
                                  mode="auto", cache=None) as c:
                    while remaining > 0:
                        await one_call(c)
                        remaining -= 1
            except Exception:
                done["reconnects"] += 1
        # A client that could not finish in six sessions leaves its calls uncounted:
        # `calls` falls short of `total` and the test says so.

    async def one_call(c):
        for attempt in range(5):
            try:
                r = await c.call_tool("read_file", {"path": "src/lib.rs"})
                if r.is_error:
                    raise RuntimeError("tool error")
                break
            except Exception:
                done["retries"] += 1
                await asyncio.sleep(0.05 * (attempt + 1))
        else:
            done["failed"] += 1
        done["calls"] += 1
        if done["calls"] == total // 3 and plan.get("kill"):
            os.kill(plan["kill"], signal.SIGKILL)
            done["killed_at"] = done["calls"]

    await asyncio.gather(*(worker() for _ in range(plan["clients"])))
    out["load"] = done
    print(json.dumps(out))


asyncio.run(main())
