// An MCP stdio server built on the official TypeScript SDK (`@modelcontextprotocol/sdk` from
// npm), used by Bosun's tests as a real server under Bosun's MCP client. Tools: add(a, b);
// fail() (an isError result); drifting(), described by `desc.txt` in the working directory
// when it exists.
//
// Usage: BOSUN_MCP_NODE_MODULES=<dir> node mcp_server.mjs
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.BOSUN_MCP_NODE_MODULES;
const load = (p) => import(pathToFileURL(path.join(modules, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Server } = await load("server/index.js");
const { StdioServerTransport } = await load("server/stdio.js");
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
await server.connect(new StdioServerTransport());
