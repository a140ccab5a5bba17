#!/usr/bin/env node
// Time from `session/prompt` to the first `agent_message_chunk` through `bosun acp` (one agent
// process, one session, warm), next to the same turn through `bosun run --json --stream` (a
// process per turn: time from spawn to the first `model.text` line), against the same scripted
// model (`bosun demo-model serve`, replaying its script for every task), and the start of a bare
// `bosun --version` for what a process start costs. What ACP adds is the first figure against the
// second less the third.
//
// Usage: scripts/acp-peers && cargo build --release -p bosun-cli &&
//        node benches/acp.mjs [TURNS]   (BOSUN=<binary> to measure another build)
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import readline from "node:readline";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const target = process.env.CARGO_TARGET_DIR ?? path.join(root, "target");
const bosun = process.env.BOSUN ?? path.join(target, "release/bosun");
const turns = Number(process.argv[2] ?? 30);
const modules = path.join(target, "acp-peers/node/node_modules");
const acp = await import(pathToFileURL(path.join(modules, "@agentclientprotocol/sdk/dist/v1/stable/acp.js")).href);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-acp-bench-"));
const home = path.join(dir, "home");
const ws = path.join(dir, "ws");
fs.mkdirSync(home);
fs.mkdirSync(path.join(ws, ".git"), { recursive: true });
const script = path.join(dir, "script.json");
fs.writeFileSync(script, JSON.stringify({ each_task: true, steps: [{ text: "Hello from the scripted model." }] }));
const model = spawn(bosun, ["demo-model", "serve", script], { stdio: ["ignore", "pipe", "inherit"] });
const baseUrl = (await readline.createInterface({ input: model.stdout })[Symbol.asyncIterator]().next()).value.trim();
fs.writeFileSync(
  path.join(home, "config.toml"),
  `default_model = "scripted"\n[models.scripted]\nprovider = "openai-chat"\nbase_url = "${baseUrl}"\nmodel = "bosun-scripted"\n`,
);
const env = { ...process.env, BOSUN_HOME: home };
const ms = (ns) => Number(ns) / 1e6;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];

// ACP: one agent, one session, TURNS prompts.
const agentProcess = spawn(bosun, ["acp"], { cwd: ws, env, stdio: ["pipe", "pipe", "inherit"] });
let firstChunk = null;
const acpTimes = [];
await acp
  .client({ name: "bench" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    if (params.update.sessionUpdate === "agent_message_chunk" && firstChunk) {
      firstChunk(process.hrtime.bigint());
      firstChunk = null;
    }
  })
  .connectWith(acp.ndJsonStream(Writable.toWeb(agentProcess.stdin), Readable.toWeb(agentProcess.stdout)), async (agent) => {
    await agent.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const { sessionId } = await agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
    for (let i = 0; i <= turns; i++) {
      const chunk = new Promise((resolve) => { firstChunk = resolve; });
      const start = process.hrtime.bigint();
      const done = agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: `turn ${i}` }] });
      const at = await chunk;
      await done;
      if (i > 0) acpTimes.push(ms(at - start)); // the first turn warms caches
    }
  });
agentProcess.stdin.end();

// `bosun run --json --stream`: a process per turn.
const runTimes = [];
for (let i = 0; i <= turns; i++) {
  const start = process.hrtime.bigint();
  const child = spawn(bosun, ["run", "--json", "--stream", `turn ${i}`], { cwd: ws, env, stdio: ["ignore", "pipe", "ignore"] });
  let at = null;
  for await (const line of readline.createInterface({ input: child.stdout })) {
    if (at === null && line.includes('"model.text"')) at = process.hrtime.bigint();
  }
  if (i > 0) runTimes.push(ms(at - start));
}

// A bare process start.
const startTimes = [];
for (let i = 0; i <= turns; i++) {
  const start = process.hrtime.bigint();
  spawnSync(bosun, ["--version"], { env, stdio: "ignore" });
  if (i > 0) startTimes.push(ms(process.hrtime.bigint() - start));
}
model.kill();
fs.rmSync(dir, { recursive: true, force: true });

const row = (name, xs) => `| ${name} | ${median(xs).toFixed(2)} | ${p90(xs).toFixed(2)} |`;
console.log(`${turns} turns each, ${os.cpus().length} cores, ${os.cpus()[0].model}`);
console.log("| path | median ms | p90 ms |");
console.log("| --- | --- | --- |");
console.log(row("ACP: session/prompt → first agent_message_chunk", acpTimes));
console.log(row("bosun run --json --stream: spawn → first model.text", runTimes));
console.log(row("bosun --version: spawn → exit", startTimes));
