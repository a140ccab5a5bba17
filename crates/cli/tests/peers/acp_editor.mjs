// A scripted editor built on the official TypeScript ACP SDK (`@agentclientprotocol/sdk` from
// npm, installed by scripts/acp-peers), used by Bosun's tests as the client of `bosun acp`. It
// starts the agent, plays one scenario of a plan and prints, as one JSON object on stdout,
// everything the agent sent: responses, session updates, permission requests, file reads and
// writes. It answers permission requests from the plan's `answers`, in order (an option id,
// `option|reason` to send a reason in `_meta`, `previous:option` to answer with that option of
// the question before, `cancelled`, or `cancel-turn`: cancel the turn
// and record in `withdrawn` whether the agent withdrew the open question), and keeps
// "unsaved buffers" (the plan's `buffers`): reads see them, writes land in them, not on disk.
//
// Usage: BOSUN_ACP_NODE_MODULES=<dir> node acp_editor.mjs '<plan JSON>'
// plan: {bosun, cwd, env, buffers?, answers?, steps: [...]}; a step is one of
//   {"initialize": true}
//   {"new": {"mcpServers": [...]}}           session/new in cwd
//   {"load": "<session id>"}                 session/load in cwd
//   {"mode": "read-only"}                    session/set_mode
//   {"model": "<entry>"}                     session/set_config_option model
//   {"prompt": "text", "cancelOn": "text"}   session/prompt; with cancelOn, session/cancel as
//                                            soon as a tool call's content shows that text
//   {"prompt": "text", "blocks": [...]}      session/prompt with these content blocks (an
//                                            image, say) before the text
//   {"close": true}                          session/close of the current session
//   {"raw": "<line>"}                        a raw line on the agent's stdin (garbage)
//   {"request": {"method": m, "params": p}}  any request, its answer or error recorded
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const modules = process.env.BOSUN_ACP_NODE_MODULES;
const acp = await import(
  pathToFileURL(path.join(modules, "@agentclientprotocol/sdk/dist/v1/stable/acp.js")).href
);
const plan = JSON.parse(process.argv[2]);

const agentProcess = spawn(plan.bosun, ["acp"], {
  cwd: plan.cwd,
  env: { ...process.env, ...(plan.env ?? {}) },
  stdio: ["pipe", "pipe", "pipe"],
});
let stderr = "";
agentProcess.stderr.on("data", (chunk) => {
  stderr += chunk.toString();
});

const report = { responses: [], updates: [], permissions: [], reads: [], writes: [], errors: [], withdrawn: [] };
const buffers = new Map(Object.entries(plan.buffers ?? {}));
const answers = [...(plan.answers ?? [])];
let previousOptions = [];
let sessionId = null;
let cancelOn = null;
let cancelled = false;

const editor = acp
  .client({ name: "bosun-test-editor" })
  .onNotification(acp.methods.client.session.update, async ({ params, agent }) => {
    report.updates.push(params);
    const update = params.update;
    if (
      cancelOn &&
      !cancelled &&
      (update.sessionUpdate === "tool_call_update" || update.sessionUpdate === "tool_call") &&
      JSON.stringify(update.content ?? []).includes(cancelOn)
    ) {
      cancelled = true;
      await agent.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, agent, signal }) => {
    report.permissions.push(params);
    const before = previousOptions;
    previousOptions = params.options;
    const answer = answers.shift();
    if (answer === "cancel-turn") {
      // Cancel the turn while the question is open, and wait for the agent to withdraw it.
      await agent.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
      const withdrawn = await new Promise((resolve) => {
        if (signal.aborted) return resolve(true);
        const timer = setTimeout(() => resolve(false), 10000);
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      report.withdrawn.push(withdrawn);
      return { outcome: { outcome: "cancelled" } };
    }
    if (answer === undefined || answer === "cancelled") {
      return { outcome: { outcome: "cancelled" } };
    }
    const [named, reason] = answer.split("|");
    // Bosun tags each question's option ids (`allow-once#<tag>`): answer with the offered id
    // that the plan names (an id not offered is sent as written, to be refused); with
    // `previous:`, with that option's id from the question before (an answer replayed).
    const stale = named.startsWith("previous:");
    const chosen = stale ? named.slice("previous:".length) : named;
    const options = stale ? before : params.options;
    const offered = options.find((o) => o.optionId.split("#")[0] === chosen);
    const optionId = offered ? offered.optionId : chosen;
    const response = { outcome: { outcome: "selected", optionId } };
    if (reason) response._meta = { reason };
    return response;
  })
  .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
    report.reads.push(params.path);
    if (buffers.has(params.path)) return { content: buffers.get(params.path) };
    return { content: fs.readFileSync(params.path, "utf8") };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
    report.writes.push({ path: params.path, content: params.content });
    buffers.set(params.path, params.content);
    return {};
  });

const stream = acp.ndJsonStream(Writable.toWeb(agentProcess.stdin), Readable.toWeb(agentProcess.stdout));

const record = async (name, promise) => {
  try {
    const result = await promise;
    report.responses.push({ step: name, result });
    return result;
  } catch (error) {
    report.responses.push({ step: name, error: { code: error.code, message: error.message, data: error.data } });
    return null;
  }
};

await editor.connectWith(stream, async (agent) => {
  for (const step of plan.steps) {
    if (step.initialize) {
      await record("initialize", agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION ?? 1,
        clientCapabilities: { fs: { readTextFile: !!plan.fs, writeTextFile: !!plan.fs } },
      }));
    } else if (step.new) {
      const result = await record("new", agent.request(acp.methods.agent.session.new, {
        cwd: plan.cwd,
        mcpServers: step.new.mcpServers ?? [],
      }));
      if (result) sessionId = result.sessionId;
    } else if (step.load) {
      const result = await record("load", agent.request(acp.methods.agent.session.load, {
        sessionId: step.load,
        cwd: plan.cwd,
        mcpServers: [],
      }));
      if (result) sessionId = step.load;
    } else if (step.mode) {
      await record("mode", agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: step.mode }));
    } else if (step.model) {
      await record("model", agent.request(acp.methods.agent.session.setConfigOption, {
        sessionId, configId: "model", value: step.model,
      }));
    } else if (step.prompt !== undefined) {
      cancelOn = step.cancelOn ?? null;
      cancelled = false;
      await record("prompt", agent.request(acp.methods.agent.session.prompt, {
        sessionId: step.session ?? sessionId,
        prompt: [...(step.blocks ?? []), { type: "text", text: step.prompt }],
      }));
      cancelOn = null;
    } else if (step.close) {
      await record("close", agent.request(acp.methods.agent.session.close, { sessionId }));
    } else if (step.raw !== undefined) {
      agentProcess.stdin.write(step.raw + "\n");
    } else if (step.request) {
      await record(step.request.method, agent.request(step.request.method, step.request.params));
    }
  }
});
report.sessionId = sessionId;
agentProcess.stdin.end();
const code = await new Promise((resolve) => agentProcess.on("exit", (c) => resolve(c)));
report.exitCode = code;
report.stderr = stderr;
process.stdout.write(JSON.stringify(report));
process.exit(0);
