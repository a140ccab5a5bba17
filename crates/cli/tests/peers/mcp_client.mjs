// An MCP client built on the official TypeScript SDK (`@modelcontextprotocol/sdk` from npm),
// used by Bosun's tests as a real peer of `bosun serve`. Same plan and output as mcp_client.py.
//
// Usage: BOSUN_MCP_NODE_MODULES=<dir> node mcp_client.mjs PLAN_JSON
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.BOSUN_MCP_NODE_MODULES;
const load = (p) => import(pathToFileURL(path.join(modules, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { ElicitRequestSchema } = await load("types.js");

const plan = JSON.parse(process.argv[2]);
const elicited = [];
const capabilities = plan.elicit ? { elicitation: { form: {} } } : {};
const client = new Client({ name: "ts-peer", version: "1.0.0" }, { capabilities });
if (plan.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicited.push(request.params.message);
    if (plan.elicit === "accept") return { action: "accept", content: {} };
    if (plan.elicit === "accept_session") return { action: "accept", content: { allow_for_this_session: true } };
    return { action: "decline" };
  });
}
let transport;
if (plan.stdio) {
  transport = new StdioClientTransport({
    command: plan.stdio.command,
    args: plan.stdio.args,
    env: plan.stdio.env,
    cwd: plan.stdio.cwd,
  });
} else {
  const headers = plan.token ? { Authorization: `Bearer ${plan.token}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers } });
}
await client.connect(transport);
const out = {
  protocol: transport.protocolVersion ?? client.getServerVersion()?.protocolVersion ?? null,
  server: client.getServerVersion(),
  calls: [],
};
out.tools = (await client.listTools()).tools;
for (const call of plan.calls ?? []) {
  try {
    out.calls.push(await client.callTool({ name: call.name, arguments: call.arguments ?? {} }));
  } catch (e) {
    out.calls.push({ raised: String(e) });
  }
}
out.elicited = elicited;
await client.close();
console.log(JSON.stringify(out));
