// An independent MCP client (the official TypeScript SDK) driving the rail: search-first save, then recall.
//
// Usage: node ts_client.mjs '<json config>'
//   {"transport": "http", "url": "http://127.0.0.1:PORT/mcp/agent", "token": "mbk_...", "content": "...", "query": "..."}
//   {"transport": "stdio", "command": "python", "args": [...], "cwd": "...", "content": "...", "query": "..."}
// Prints one JSON object describing what the server answered; exits 1 (message on stderr) on any failure.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const config = JSON.parse(process.argv[2] ?? "{}");

function transportFor(cfg) {
  if (cfg.transport === "http") {
    return new StreamableHTTPClientTransport(new URL(cfg.url), {
      requestInit: { headers: { Authorization: `Bearer ${cfg.token}` } },
    });
  }
  if (cfg.transport === "stdio") {
    return new StdioClientTransport({
      command: cfg.command,
      args: cfg.args ?? [],
      cwd: cfg.cwd,
      env: cfg.env, // undefined: the SDK's short default environment, as real clients give
      stderr: "inherit",
    });
  }
  throw new Error(`unknown transport ${cfg.transport}`);
}

function json(result) {
  // The rail mirrors its answer in a text block; read that, as a model would.
  const text = result.content.find((block) => block.type === "text");
  if (!text) throw new Error(`no text block in ${JSON.stringify(result)}`);
  return JSON.parse(text.text);
}

async function firstMatch(client, query) {
  const found = await client.callTool({ name: "search_capabilities", arguments: { query } });
  if (found.isError) throw new Error(`search_capabilities(${query}) failed: ${found.content[0].text}`);
  const matches = json(found).matches;
  if (!matches.length) throw new Error(`search_capabilities(${query}) matched nothing`);
  return matches[0];
}

async function execute(client, args) {
  const result = await client.callTool({ name: "execute_capability", arguments: args });
  return { isError: Boolean(result.isError), structured: result.structuredContent, body: json(result) };
}

async function main() {
  const client = new Client({ name: "memorybank-interop-ts", version: "1.0.0" });
  await client.connect(transportFor(config));
  try {
    const tools = (await client.listTools()).tools;
    const prompts = (await client.listPrompts()).prompts;
    const save = await firstMatch(client, "save a memory");
    const saved = await execute(client, { name: save.name, body: { content: config.content } });
    if (saved.isError) throw new Error(`save failed: ${JSON.stringify(saved.body)}`);
    const search = await firstMatch(client, "search my memories");
    // A JSON-encoded query string, as some agents send it.
    const recalled = await execute(client, { name: search.name, query: JSON.stringify({ q: config.query }) });
    const remove = await firstMatch(client, "delete a memory");
    const deleted = await execute(client, { name: remove.name, path: { id: saved.body.memory.id } });
    const unknown = await client.callTool({ name: "execute_capability", arguments: { name: "memory_save" } });
    console.log(
      JSON.stringify({
        serverName: client.getServerVersion()?.name,
        instructions: client.getInstructions(),
        tools: tools.map((tool) => ({ name: tool.name, annotations: tool.annotations })),
        prompts: prompts.map((prompt) => prompt.name),
        saveName: save.name,
        savedId: saved.body.memory.id,
        saveStatus: saved.structured?.status,
        searchName: search.name,
        recalled: recalled.body.results.map((r) => ({ id: r.id, content: r.content })),
        deleteName: remove.name,
        deleteStatus: deleted.structured?.status,
        unknown: { isError: Boolean(unknown.isError), body: json(unknown) },
      }),
    );
  } finally {
    await client.close();
  }
}

main().catch((error) => {
  console.error(error?.stack ?? String(error));
  process.exit(1);
});
