// Tools by role (issue 14, MCP-SURFACE.md): a catalogue entry with "roles" exists only for
// agents whose token has one of them, in lists and in calls, for tools, resources, resource
// templates and prompts; a catalogue change reaches only the sessions whose view changed.
// Two accounts of two roles, their agents on one gateway (the real SDK client), their tabs on
// the other.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, PromptListChangedNotificationSchema, ResourceListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startStack, waitUntil } from './lib/stack.mjs';
import { ScriptedTab } from './lib/tab.mjs';

const catalogue = {
  tools: [
    { name: 'get_view', inputSchema: { type: 'object' } },
    { name: 'set_title', inputSchema: { type: 'object' }, roles: ['editor'] },
  ],
  resources: [
    { uri: 'doc://outline', name: 'outline' },
    { uri: 'doc://history', name: 'history', roles: ['editor'] },
  ],
  resourceTemplates: [{ uriTemplate: 'draft://{id}', name: 'draft', roles: ['editor'] }],
  prompts: [
    { name: 'summarize' },
    { name: 'rewrite', roles: ['editor'] },
  ],
};

let stack, gwTabs, gwAgents;
const agents = {};  // role -> { client, notices: [] }
const tabs = {};    // role -> ScriptedTab

before(async () => {
  stack = await startStack({
    gateways: 2,
    users: ['ed:editor', 'vi:viewer'],
    catalogue,
    gatewayArgs: ['--catalogue_poll=100ms'],
  });
  [gwTabs, gwAgents] = stack.gateways;
  for (const [role, account] of [['editor', 'ed'], ['viewer', 'vi']]) {
    const tab = new ScriptedTab(gwTabs.wsUrl);
    const hello = await tab.hello(await stack.ticket(account));
    assert.equal(hello.result.role, role, 'the tab is told its role');
    for (const method of ['tools/call', 'resources/read', 'prompts/get']) {
      tab.handlers[method] = async (params) => method === 'tools/call'
        ? { content: [{ type: 'text', text: `${account} ran ${params.name}` }] }
        : method === 'resources/read'
          ? { contents: [{ uri: params.uri, text: `${account} read ${params.uri}` }] }
          : { messages: [{ role: 'user', content: { type: 'text', text: `${account}: ${params.name}` } }] };
    }
    tabs[role] = tab;
    const client = new Client({ name: `agent-${role}`, version: '1.0.0' });
    const notices = [];
    for (const schema of [ToolListChangedNotificationSchema, PromptListChangedNotificationSchema, ResourceListChangedNotificationSchema]) {
      client.setNotificationHandler(schema, (n) => { notices.push(n.method); });
    }
    await client.connect(new StreamableHTTPClientTransport(new URL(gwAgents.url), {
      requestInit: { headers: { Authorization: `Bearer ${await stack.mintToken(account)}` } },
    }));
    agents[role] = { client, notices };
  }
});

after(async () => {
  for (const tab of Object.values(tabs)) tab.close();
  await Promise.all(Object.values(agents).map((a) => a.client.close().catch(() => {})));
  await stack?.stop();
});

const names = (items) => items.map((i) => i.name).sort();

test('lists: each role sees its entries of all four kinds, and never the "roles" key', async () => {
  const seen = {};
  for (const role of ['editor', 'viewer']) {
    const { client } = agents[role];
    seen[role] = {
      tools: (await client.listTools()).tools,
      resources: (await client.listResources()).resources,
      templates: (await client.listResourceTemplates()).resourceTemplates,
      prompts: (await client.listPrompts()).prompts,
    };
  }
  assert.deepEqual(names(seen.editor.tools), ['get_view', 'set_title']);
  assert.deepEqual(names(seen.viewer.tools), ['get_view']);
  assert.deepEqual(seen.editor.resources.map((r) => r.uri).sort(), ['doc://history', 'doc://outline']);
  assert.deepEqual(seen.viewer.resources.map((r) => r.uri), ['doc://outline']);
  assert.deepEqual(seen.editor.templates.map((t) => t.uriTemplate), ['draft://{id}']);
  assert.deepEqual(seen.viewer.templates, []);
  assert.deepEqual(names(seen.editor.prompts), ['rewrite', 'summarize']);
  assert.deepEqual(names(seen.viewer.prompts), ['summarize']);
  for (const lists of Object.values(seen)) {
    for (const item of Object.values(lists).flat()) assert.equal(item.roles, undefined);
  }
});

test('calls: a hidden entry is an unknown name to the other role and never reaches its tab', async () => {
  const viewer = agents.viewer.client;
  // The tab's requests only (relay/agents notices may come at any time).
  const requests = () => tabs.viewer.received.filter((m) => m.id !== undefined && m.method).length;
  const before = requests();
  await assert.rejects(viewer.callTool({ name: 'set_title', arguments: {} }), (e) => e.code === -32602 && /Unknown tool: set_title/.test(e.message));
  await assert.rejects(viewer.readResource({ uri: 'doc://history' }), (e) => e.code === -32002);
  await assert.rejects(viewer.readResource({ uri: 'draft://7' }), (e) => e.code === -32002);
  await assert.rejects(viewer.getPrompt({ name: 'rewrite' }), (e) => e.code === -32602 && /Unknown prompt: rewrite/.test(e.message));
  await assert.rejects(viewer.complete({ ref: { type: 'ref/prompt', name: 'rewrite' }, argument: { name: 'x', value: '' } }), (e) => e.code === -32602);
  assert.equal(requests(), before, 'nothing hidden was forwarded');
  // What the viewer sees works as before.
  assert.equal((await viewer.callTool({ name: 'get_view', arguments: {} })).content[0].text, 'vi ran get_view');
  assert.equal((await viewer.readResource({ uri: 'doc://outline' })).contents[0].text, 'vi read doc://outline');

  const editor = agents.editor.client;
  assert.equal((await editor.callTool({ name: 'set_title', arguments: {} })).content[0].text, 'ed ran set_title');
  assert.equal((await editor.readResource({ uri: 'draft://7' })).contents[0].text, 'ed read draft://7');
  assert.equal((await editor.getPrompt({ name: 'rewrite' })).messages[0].content.text, 'ed: rewrite');
});

test("a catalogue change that alters one role's view notifies only that role's sessions", async () => {
  // Both GET streams must be open to hear anything.
  await waitUntil(async () => {
    const text = await (await fetch(`http://127.0.0.1:${gwAgents.port}/metrics`)).text();
    return /relay_gateway_connections_by_kind\{kind="agent_stream"\} 2\n/.test(text);
  }, 'both agents\' streams are open');
  // 1: a tool for editors only.
  const first = structuredClone(catalogue);
  first.tools.push({ name: 'delete_page', inputSchema: { type: 'object' }, roles: ['editor'] });
  writeFileSync(stack.catalogueFile, JSON.stringify(first));
  await waitUntil(() => agents.editor.notices.includes('notifications/tools/list_changed'), 'the editor hears of its new tool');
  // 2: a prompt for everyone. Each stream hears the gateway's notices in order, so once the
  // viewer has heard this one it would have heard the first, had there been one for it.
  const second = structuredClone(first);
  second.prompts.push({ name: 'translate' });
  writeFileSync(stack.catalogueFile, JSON.stringify(second));
  await waitUntil(() => agents.viewer.notices.includes('notifications/prompts/list_changed'), 'the viewer hears of the new prompt');
  assert.deepEqual(agents.viewer.notices, ['notifications/prompts/list_changed']);
  await waitUntil(() => agents.editor.notices.includes('notifications/prompts/list_changed'), 'the editor too');
  assert.deepEqual(names((await agents.viewer.client.listTools()).tools), ['get_view']);
  assert.deepEqual(names((await agents.editor.client.listTools()).tools), ['delete_page', 'get_view', 'set_title']);
});
