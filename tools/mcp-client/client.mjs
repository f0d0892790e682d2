// An outside MCP client: the official TypeScript SDK (@modelcontextprotocol/sdk,
// pinned in tools/package.json), which nobody here wrote, drives groundgate
// over one transport and checks what an agent host relies on. It validates
// every structured result against the tool's output schema itself (Ajv).
//
//   node tools/mcp-client/client.mjs stdio GROUNDGATE_BINARY DB_FILE
//   node tools/mcp-client/client.mjs http  http://HOST:PORT/mcp TOKEN
//
// Exits 0 when every check holds; otherwise prints what failed and exits 1.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [mode, a, b] = process.argv.slice(2);
let transport;
if (mode === 'stdio') {
  transport = new StdioClientTransport({ command: a, args: ['mcp', '--db', b], stderr: 'inherit' });
} else if (mode === 'http') {
  transport = new StreamableHTTPClientTransport(new URL(a), { requestInit: { headers: { Authorization: `Bearer ${b}` } } });
} else {
  console.error('usage: client.mjs stdio BINARY DB | http URL TOKEN');
  process.exit(2);
}

let failed = 0;
function check(ok, what, detail) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${mode}: ${what}${ok || detail === undefined ? '' : ': ' + JSON.stringify(detail).slice(0, 400)}`);
  if (!ok) failed++;
}

const client = new Client({ name: 'groundgate-outside-check', version: '1.0.0' });
await client.connect(transport);
const info = client.getServerVersion();
check(info?.name === 'groundgate', 'server identifies as groundgate', info);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
check(JSON.stringify(names) === JSON.stringify(['call', 'diff', 'discover', 'execute', 'get_capability', 'ground', 'replay']), 'tools/list names the seven tools', names);
check(tools.every((t) => t.inputSchema?.type === 'object' && t.outputSchema?.type === 'object'), 'every tool has input and output schemas');
const discoverTool = tools.find((t) => t.name === 'discover');
check(discoverTool?.description?.startsWith('Call this first.'), 'discover says it is the first call', discoverTool?.description);

// callTool validates structuredContent against the tool's outputSchema and
// throws when it does not match.
const prompt = 'momentum on WTI crude oil, scored by Sharpe ratio';
const d = await client.callTool({ name: 'discover', arguments: { prompt } });
const names2 = (d.structuredContent?.matches ?? []).map((m) => m.name);
check(!d.isError && d.structuredContent?.id?.startsWith('sha256:'), 'discover returns a discovery id', d.structuredContent);
check(names2.includes('MOM_WZS') && names2.includes('SRP'), 'discover finds MOM_WZS and SRP', names2);

const request = { family: 'MOM_WZS', metric: 'SRP', params: { window: [25, 50] }, data: 'oil-spot/wti-daily.csv' };
const g = await client.callTool({ name: 'ground', arguments: { request, discovery: d.structuredContent.id } });
check(!g.isError && g.structuredContent?.decision?.admitted === true, 'ground admits the discovered request', g.structuredContent);

const refused = await client.callTool({ name: 'ground', arguments: { request: { ...request, family: 'MOM_REV' }, discovery: d.structuredContent.id } });
const failures = refused.structuredContent?.failures ?? [];
check(refused.isError === true, 'ground refuses an undiscovered family as a tool error', refused);
check(failures.length === 1 && failures[0].code === 'F3' && failures[0].field === 'family', 'the refusal carries the F3 failure on family', failures);
check(refused.content?.[0]?.text?.includes('Next (F3)'), 'the refusal text tells the model what to do', refused.content);

const x = await client.callTool({ name: 'execute', arguments: { grounding: g.structuredContent.id } });
check(!x.isError && x.structuredContent?.hash?.startsWith('sha256:'), 'execute returns the footprint', x.structuredContent?.hash);
const r = await client.callTool({ name: 'replay', arguments: { hash: x.structuredContent.hash } });
check(r.structuredContent?.match === true, 'replay reproduces the execution', r.structuredContent);

const res = await client.readResource({ uri: `groundgate://executions/${x.structuredContent.hash}` });
check(JSON.parse(res.contents[0].text).hash === x.structuredContent.hash, 'the footprint is a resource');

try {
  await client.callTool({ name: 'discover', arguments: { prompt: 5 } });
  check(false, 'a wrong argument type is a protocol error');
} catch (e) {
  check(e.code === -32602, 'a wrong argument type is a protocol error (-32602)', e.message);
}
try {
  await client.callTool({ name: 'no_such_tool', arguments: {} });
  check(false, 'an unknown tool is a protocol error');
} catch (e) {
  check(e.code === -32602, 'an unknown tool is a protocol error (-32602)', e.message);
}

await client.close();
console.log(failed === 0 ? `${mode}: all checks passed` : `${mode}: ${failed} checks failed`);
process.exit(failed === 0 ? 0 : 1);
