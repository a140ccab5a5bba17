"""A scripted model on loopback that speaks a provider's wire format, for running real agent
clients (Codex CLI, Claude Code) against `bosun serve` without a real model.

Usage: python3 model_standin.py PLAN_JSON
PLAN: {"wire": "responses" | "anthropic",
       "script": [{"tool": NAME, "arguments": {...}} | {"say": TEXT}, ...],
       "log": PATH, "idle_secs": N}

- `wire: responses` is the OpenAI Responses API: `POST .../responses` answered with the event
  stream (`response.created`, `response.output_item.added`,
  `response.function_call_arguments.delta`, `response.output_text.delta`,
  `response.completed`, ...); `GET .../models` answers an empty list.
- `wire: anthropic` is the Anthropic Messages API: `POST /v1/messages` answered with the event
  stream (`message_start`, `content_block_start`, `content_block_delta`, `message_delta`,
  `message_stop`) when `stream` is set, else with the whole message;
  `POST /v1/messages/count_tokens` answers a count.

The script is played by what the conversation holds, not by how many requests came: a request
whose conversation holds N tool results gets step N. A `tool` step calls the client's tool whose
name is NAME or ends in `__NAME` / `.NAME` (clients prefix MCP tools with their server's name);
a `say` step answers text, `{result}` replaced by the newest tool result's text and `{results}`
by all of them, one a line. A request that
offers none of the script's tools (a client's side request: a title, a summary) is answered
"stand-in" and does not advance the script.

Prints `listening PORT` once it accepts connections; writes each request as one JSON line to
`log` (method, path, body); exits by itself after `idle_secs` (default 120) without a request.
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PLAN = json.loads(sys.argv[1])
LOG_LOCK = threading.Lock()
LAST_REQUEST = [time.monotonic()]


def log(entry):
    with LOG_LOCK:
        with open(PLAN["log"], "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


def text_of(content):
    """The text of a tool result as either API carries it: a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(part) for part in content)
    if isinstance(content, dict):
        for key in ("text", "output", "content"):
            if key in content:
                return text_of(content[key])
    return json.dumps(content)


def tool_names(tools, namespace=None):
    """Every tool a request offers as (namespace, name), including those nested in a Responses
    `namespace` tool (Codex offers an MCP server's tools in one, named `mcp__SERVER`)."""
    names = []
    for tool in tools or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            names.extend(tool_names(tool.get("tools"), tool.get("name")))
            continue
        if "name" in tool:
            names.append((namespace, tool["name"]))
        if isinstance(tool.get("function"), dict) and "name" in tool["function"]:
            names.append((namespace, tool["function"]["name"]))
    return names


def match(offered, wanted):
    """The offered MCP tool for `wanted`: one in a namespace of an MCP server, or one whose
    name carries the server's prefix (`mcp__SERVER__NAME`)."""
    for namespace, name in offered:
        if namespace is not None and namespace.startswith("mcp__") and name == wanted:
            return (namespace, name)
        if name.endswith("__" + wanted):
            return (namespace, name)
    return None


def is_main(offered):
    return any(match(offered, step["tool"]) for step in PLAN["script"] if "tool" in step)


def results_responses(body):
    items = body.get("input")
    if not isinstance(items, list):
        return []
    return [text_of(item.get("output")) for item in items
            if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output", "mcp_tool_call_output")]


def results_anthropic(body):
    out = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.append(text_of(block.get("content")))
    return out


def step_for(offered, results):
    """What to answer: ("tool", name, arguments) or ("say", text)."""
    if not is_main(offered):
        return ("say", "stand-in")
    script = PLAN["script"]
    step = script[min(len(results), len(script) - 1)]
    if "tool" in step:
        return ("tool", match(offered, step["tool"]), step.get("arguments", {}))
    last = results[-1] if results else ""
    return ("say", step["say"].replace("{results}", "\n".join(results)).replace("{result}", last))


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def chunks(text, size):
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def responses_stream(answer, n):
    rid = f"resp_{n}"
    base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": "stand-in",
            "status": "in_progress", "output": [], "error": None, "incomplete_details": None,
            "parallel_tool_calls": False, "tool_choice": "auto", "tools": [], "usage": None}
    seq = iter(range(1000))
    out = [sse("response.created", {"type": "response.created", "sequence_number": next(seq), "response": base}),
           sse("response.in_progress", {"type": "response.in_progress", "sequence_number": next(seq), "response": base})]
    if answer[0] == "tool":
        _, name, arguments = answer
        args = json.dumps(arguments)
        namespace, name = name
        item = {"id": f"fc_{n}", "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": f"call_{n}", "name": name}
        if namespace is not None:
            item["namespace"] = namespace
        out.append(sse("response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": 0, "item": item}))
        for piece in chunks(args, 7):
            out.append(sse("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta", "sequence_number": next(seq), "item_id": item["id"], "output_index": 0, "delta": piece}))
        out.append(sse("response.function_call_arguments.done", {"type": "response.function_call_arguments.done", "sequence_number": next(seq), "item_id": item["id"], "output_index": 0, "arguments": args}))
        done = dict(item, status="completed", arguments=args)
    else:
        text = answer[1]
        item = {"id": f"msg_{n}", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        out.append(sse("response.output_item.added", {"type": "response.output_item.added", "sequence_number": next(seq), "output_index": 0, "item": item}))
        part = {"type": "output_text", "annotations": [], "text": ""}
        out.append(sse("response.content_part.added", {"type": "response.content_part.added", "sequence_number": next(seq), "item_id": item["id"], "output_index": 0, "content_index": 0, "part": part}))
        for piece in chunks(text, 16):
            out.append(sse("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": next(seq), "item_id": item["id"], "output_index": 0, "content_index": 0, "delta": piece}))
        out.append(sse("response.output_text.done", {"type": "response.output_text.done", "sequence_number": next(seq), "item_id": item["id"], "output_index": 0, "content_index": 0, "text": text}))
        part = dict(part, text=text)
        out.append(sse("response.content_part.done", {"type": "response.content_part.done", "sequence_number": next(seq), "item_id": item["id"], "output_index": 0, "content_index": 0, "part": part}))
        done = dict(item, status="completed", content=[part])
    out.append(sse("response.output_item.done", {"type": "response.output_item.done", "sequence_number": next(seq), "output_index": 0, "item": done}))
    usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120}
    completed = dict(base, status="completed", output=[done], usage=usage)
    out.append(sse("response.completed", {"type": "response.completed", "sequence_number": next(seq), "response": completed}))
    return out


def anthropic_blocks(answer, n):
    if answer[0] == "tool":
        _, name, arguments = answer
        return [{"type": "tool_use", "id": f"toolu_{n}", "name": name[1], "input": arguments}], "tool_use"
    return [{"type": "text", "text": answer[1]}], "end_turn"


def anthropic_stream(answer, n):
    blocks, stop = anthropic_blocks(answer, n)
    message = {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "stand-in", "content": [],
               "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}}
    out = [sse("message_start", {"type": "message_start", "message": message})]
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            out.append(sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": dict(block, input={})}))
            for piece in chunks(json.dumps(block["input"]), 7):
                out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}))
        else:
            out.append(sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
            for piece in chunks(block["text"], 16):
                out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 20}}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return out


COUNTER = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply_json(self, status, value):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def reply_sse(self, events):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in events:
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def body(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("content-encoding", "").lower() == "zstd":
            return {"undecodable": "zstd"}
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {"undecodable": raw[:200].decode("utf-8", "replace")}

    def do_GET(self):
        LAST_REQUEST[0] = time.monotonic()
        log({"method": "GET", "path": self.path})
        if self.path.split("?")[0].endswith("/models"):
            self.reply_json(200, {"models": [], "data": [], "object": "list"})
        else:
            self.reply_json(404, {"error": {"message": f"no {self.path} here", "type": "not_found"}})

    def do_POST(self):
        LAST_REQUEST[0] = time.monotonic()
        body = self.body()
        path = self.path.split("?")[0]
        COUNTER[0] += 1
        n = COUNTER[0]
        wire = PLAN["wire"]
        if wire == "anthropic" and path.endswith("/count_tokens"):
            log({"method": "POST", "path": self.path, "body": body})
            self.reply_json(200, {"input_tokens": 100})
            return
        if wire == "responses" and path.endswith("/responses"):
            offered = tool_names(body.get("tools"))
            answer = step_for(offered, results_responses(body))
            log({"method": "POST", "path": self.path, "body": body, "answer": list(answer)})
            self.reply_sse(responses_stream(answer, n))
            return
        if wire == "anthropic" and path.endswith("/messages"):
            offered = tool_names(body.get("tools"))
            answer = step_for(offered, results_anthropic(body))
            log({"method": "POST", "path": self.path, "body": body, "answer": list(answer)})
            if body.get("stream"):
                self.reply_sse(anthropic_stream(answer, n))
            else:
                blocks, stop = anthropic_blocks(answer, n)
                self.reply_json(200, {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "stand-in",
                                      "content": blocks, "stop_reason": stop, "stop_sequence": None,
                                      "usage": {"input_tokens": 100, "output_tokens": 20}})
            return
        log({"method": "POST", "path": self.path, "body": body})
        self.reply_json(404, {"error": {"message": f"no {self.path} here", "type": "not_found"}})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"listening {server.server_address[1]}", flush=True)
    idle = PLAN.get("idle_secs", 120)
    while time.monotonic() - LAST_REQUEST[0] < idle:
        time.sleep(0.5)
    server.shutdown()


if __name__ == "__main__":
    main()
