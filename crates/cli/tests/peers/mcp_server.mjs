// An MCP stdio server built on the official TypeScript SDK (`@modelcontextprotocol/sdk` from
// npm), used by Bosun's tests as a real server under Bosun's MCP client. Tools: add(a, b);
// fail() (an isError result); drifting(), described by `desc.txt` in the working directory
// when it exists.
//
// Usage: BOSUN_MCP_NODE_MODULES=<dir> node mcp_server.mjs [http PORT]
// With `http PORT` it serves Streamable HTTP on 127.0.0.1:PORT/mcp, one session per client.
import fs from "node:fs";
import http from "node:http";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.BOSUN_MCP_NODE_MODULES;
const load = (p) => import(pathToFileURL(path.join(modules, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Server } = await load("server/index.js");
const { StdioServerTransport } = await load("server/stdio.js");
const { StreamableHTTPServerTransport } = await load("server/streamableHttp.js");
const { ListToolsRequestSchema, CallToolRequestSchema } = await load("types.js");

const drift = fs.existsSync("desc.txt") ? fs.readFileSync("desc.txt", "utf8").trim() : "Returns a constant.";
const tools = [
  {
    name: "add",
    description: "Add two numbers.",
    inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
    annotations: { readOnlyHint: true },
  },
  { name: "fail", description: "Always fails.", inputSchema: { type: "object", properties: {} } },
  { name: "drifting", description: drift, inputSchema: { type: "object", properties: {} } },
];

function makeServer() {
const server = new Server({ name: "ts-peer", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const args = request.params.arguments ?? {};
  switch (request.params.name) {
    case "add":
      return { content: [{ type: "text", text: String(args.a + args.b) }] };
    case "fail":
      return { isError: true, content: [{ type: "text", text: "the quota is spent" }] };
    case "drifting":
      return { content: [{ type: "text", text: "constant" }] };
    default:
      throw new Error(`unknown tool ${request.params.name}`);
  }
});
return server;
}

if (process.argv[2] === "http") {
  const sessions = new Map();
  const readBody = (req) => new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined));
    req.on("error", reject);
  });
  http.createServer(async (req, res) => {
    try {
      if (!req.url.startsWith("/mcp")) {
        res.writeHead(404).end();
        return;
      }
      const body = req.method === "POST" ? await readBody(req) : undefined;
      const id = req.headers["mcp-session-id"];
      let transport = typeof id === "string" ? sessions.get(id) : undefined;
      if (!transport) {
        if (typeof id === "string") {
          res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
          return;
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => sessions.set(sid, transport),
        });
        transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
        await makeServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (error) {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    }
  }).listen(Number(process.argv[3]), "127.0.0.1");
} else {
  await makeServer().connect(new StdioServerTransport());
}
