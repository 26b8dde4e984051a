// A fix session through the TypeScript MCP SDK's client, over stdio, with the SDK's
// default request options: no `timeout`, no `resetTimeoutOnProgress`, no `maxTotalTimeout`
// (tests/test_ts_client.py). Only `onprogress` is passed, to see the notifications; it does
// not change the timeout.
//
// Usage: node session.mjs PLAN.json
//   PLAN = {"server": {"command", "args", "env", "cwd"},
//           "edit": {"path", "old_text", "new_text"}, "message": "...", "max_polls": N}
// Prints one JSON object per line on stdout: "start" (the SDK's version and default
// timeout), "tools", one "call" per tool call (its arguments, how long it took, the
// structured result or the error), one "progress" per notification, and "end".

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from "@modelcontextprotocol/sdk/shared/protocol.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const sdk = JSON.parse(
  readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url)),
);
const t0 = Date.now();
const emit = (event, fields) =>
  process.stdout.write(`${JSON.stringify({ event, t_ms: Date.now() - t0, ...fields })}\n`);

const client = new Client({ name: "patchwarden-ts-test", version: "1.0.0" });
const transport = new StdioClientTransport({ ...plan.server, stderr: "inherit" });

async function call(name, args) {
  const started = Date.now();
  const onprogress = (p) =>
    emit("progress", { tool: name, progress: p.progress, total: p.total, message: p.message });
  try {
    const result = await client.callTool({ name, arguments: args }, undefined, { onprogress });
    const fields = { tool: name, arguments: args, ms: Date.now() - started };
    if (result.isError) {
      emit("call", { ...fields, error: result.content.map((c) => c.text).join(" ") });
      throw new Error(`${name} failed`);
    }
    emit("call", { ...fields, result: result.structuredContent });
    return result.structuredContent;
  } catch (error) {
    if (!(error instanceof Error && error.message === `${name} failed`)) {
      emit("call", { tool: name, arguments: args, ms: Date.now() - started, error: String(error) });
    }
    throw error;
  }
}

let exitCode = 0;
try {
  emit("start", { sdk: sdk.version, default_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MSEC });
  await client.connect(transport);
  const { tools } = await client.listTools();
  emit("tools", { names: tools.map((t) => t.name) });
  await call("get_contract", {});
  await call("edit_file", plan.edit);
  let answer = await call("submit_patch", { message: plan.message });
  for (let polls = 0; answer.status === "pending" && polls < plan.max_polls; polls++) {
    answer = await call("get_verdict", { submission: answer.submission });
  }
} catch (error) {
  emit("failed", { error: String(error) });
  exitCode = 1;
} finally {
  await client.close();
  emit("end", {});
}
process.exit(exitCode);
