"""Sends one side-effecting call with one idempotency key to several `bosun serve --http`
instances that share `[serve] idempotency_dir`, through HAProxy (round-robin) and to each
instance directly, with the official Python MCP SDK (2026-07-28) for the first call and raw HTTP
for the repeats (the SDK sends each call once).

Usage: python fleet_idempotency.py PLAN_JSON
PLAN: {"url": HAProxy's /mcp, "instances": {"s1": direct /mcp URL, ...},
       "doomed": name of the instance to kill mid-call, "doomed_pid": its PID,
       "claim_secs": the claim expiry the instances were given,
       "shared_dir": the idempotency_dir they share}
Prints one JSON object with what happened.
"""

import asyncio
import json
import os
import signal
import sys
import time

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def message_of(text):
    """The JSON-RPC response in a body sent as JSON or as one SSE event."""
    text = text.strip()
    if text.startswith("{"):
        return json.loads(text)
    for line in text.splitlines():
        if line.startswith("data:") and '"jsonrpc"' in line:
            return json.loads(line[len("data:"):])
    return None


def command(marker):
    # Appends a mark of this run (the time in nanoseconds) to a file, and answers with it: each
    # run is counted, and an answer says which run it came from.
    return {"program": "sh", "args": ["-c", f"v=run-$(date +%s%N); echo $v >> {marker}; echo $v"]}


def slow(marker, seconds):
    return {"program": "sh",
            "args": ["-c", f"sleep {seconds}; v=run-$(date +%s%N); echo $v >> {marker}; echo $v"]}


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
            "body": body,
            "headers": {k: v for k, v in request.headers.items()
                        if k.lower() not in ("host", "content-length", "connection")},
        })

    http = httpx2.AsyncClient(timeout=60, headers={"Idempotency-Key": "key-once"},
                              event_hooks={"request": [on_request], "response": [on_response]})
    async with Client(streamable_http_client(plan["url"], http_client=http), mode="auto",
                      cache=None) as client:
        first = await client.call_tool("run_command", command("once.txt"))
        out["first"] = first.model_dump(mode="json", by_alias=True, exclude_none=True)
    call = next(e for e in exchanges if '"tools/call"' in e["body"])
    out["first_instance"] = call["instance"]
    template = json.loads(call["body"])
    headers = call["headers"]

    raw = httpx2.AsyncClient(timeout=60)

    async def post(url, arguments, key, extra=None, number=1):
        params = dict(template["params"], arguments=arguments)
        body = json.dumps(dict(template, id=2000 + number, params=params))
        h = dict(headers)
        h["idempotency-key"] = key
        h.update(extra or {})
        response = await raw.post(url, content=body, headers=h)
        return {"status": response.status_code,
                "instance": response.headers.get("x-bosun-instance"),
                "message": message_of(response.text)}

    # The same call and key again: through the balancer twice (round-robin moves on), and to
    # every instance directly, one after another and then all at once.
    repeats = []
    for n in range(2):
        repeats.append(await post(plan["url"], command("once.txt"), "key-once", number=10 + n))
    for n, (name, url) in enumerate(sorted(plan["instances"].items())):
        if name == plan["doomed"]:
            continue
        answer = await post(url, command("once.txt"), "key-once", number=20 + n)
        answer["to"] = name
        repeats.append(answer)
    out["repeats"] = repeats

    # A fresh key sent to two instances at the same moment, for a call that takes a second:
    # one claims and runs it, the other waits for its result.
    live = [url for name, url in sorted(plan["instances"].items()) if name != plan["doomed"]]
    together = await asyncio.gather(*(post(url, slow("together.txt", 1), "key-together", number=30 + n)
                                      for n, url in enumerate(live)))
    out["together"] = list(together)

    # Another caller (another bearer token) with the first key: its own call, its own answer.
    out["other_caller"] = await post(live[0], command("once.txt"), "key-once",
                                     {"authorization": "Bearer another-caller-0123456789"}, number=40)

    # An instance killed while it runs a keyed call leaves its claim: a retry elsewhere is told
    # "in progress" (and runs nothing) until the claim expires, then runs.
    # Killed once its claim is in the shared directory (no earlier claim is left there), not
    # after a guess at how long a loaded machine takes to make it.
    doomed = asyncio.create_task(post(plan["instances"][plan["doomed"]], slow("crash.txt", 3),
                                      "key-crash", number=50))
    deadline = time.monotonic() + 60
    while not any(name.endswith(".claim") for name in os.listdir(plan["shared_dir"])):
        if time.monotonic() > deadline or doomed.done():
            raise SystemExit("the doomed instance never claimed the key")
        await asyncio.sleep(0.02)
    claimed_at = time.monotonic()
    os.kill(plan["doomed_pid"], signal.SIGKILL)
    try:
        await doomed
    except Exception as e:  # the connection dies with the instance
        out["doomed_error"] = type(e).__name__
    out["while_claimed"] = await post(live[0], slow("crash.txt", 3), "key-crash", number=51)
    out["while_claimed"]["after_secs"] = time.monotonic() - claimed_at
    remaining = plan["claim_secs"] + 2 - (time.monotonic() - claimed_at)
    if remaining > 0:
        await asyncio.sleep(remaining)
    out["after_expiry"] = await post(live[1], slow("crash.txt", 3), "key-crash", number=52)
    print(json.dumps(out))


asyncio.run(main())
