// The conformance tab: a tab speaking our tab protocol that serves the tools, resources and
// prompts the official MCP conformance suite asks for. The suite talks to a gateway; its
// requests cross the router to this tab on another gateway, and back.
import { ScriptedTab } from '../e2e/lib/tab.mjs';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ type: 'text', text: t });

function toolError(message) {
  return Object.assign(new Error(message), { code: -32602 });
}

export function serveConformance(tab) {
  // The relay's id of the call in progress, for messages tied to it.
  const callOf = (message) => ({ 'relay/requestId': message.id });

  const tools = {
    test_simple_text: async () => ({ content: [text('This is a simple text response for testing.')] }),
    test_image_content: async () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }),
    test_audio_content: async () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }),
    test_embedded_resource: async () => ({
      content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
    }),
    test_multiple_content_types: async () => ({
      content: [
        text('Multiple content types test:'),
        { type: 'image', data: PNG, mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
      ],
    }),
    test_tool_with_logging: async (args, message) => {
      for (const [i, line] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
        if (i) await sleep(50);
        tab.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: line, _meta: callOf(message) } });
      }
      return { content: [text('Tool with logging executed successfully')] };
    },
    test_tool_with_progress: async (args, message, params) => {
      const token = params._meta?.progressToken;
      for (const [i, progress] of [0, 50, 100].entries()) {
        if (i) await sleep(50);
        if (token !== undefined) {
          tab.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress, total: 100, message: `Completed step ${progress} of 100` } });
        }
      }
      return { content: [text('Progress test completed')] };
    },
    test_error_handling: async () => ({ isError: true, content: [text('This tool intentionally returns an error for testing')] }),
    test_sampling: async (args, message) => {
      const answer = await tab.request('sampling/createMessage', {
        messages: [{ role: 'user', content: text(args.prompt ?? '') }],
        maxTokens: 100,
        _meta: callOf(message),
      });
      if (answer.error) return { isError: true, content: [text(`Sampling failed: ${answer.error.message}`)] };
      return { content: [text(`LLM response: ${answer.result.content?.text ?? ''}`)] };
    },
    test_elicitation: async (args, message) => elicit(message, args.message ?? 'Please provide your information', {
      type: 'object',
      properties: {
        username: { type: 'string', description: "User's response" },
        email: { type: 'string', description: "User's email address" },
      },
      required: ['username', 'email'],
    }, 'User response'),
    test_elicitation_sep1034_defaults: async (args, message) => elicit(message, 'Please review and update the form fields with defaults', {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'User name', default: 'John Doe' },
        age: { type: 'integer', description: 'User age', default: 30 },
        score: { type: 'number', description: 'User score', default: 95.5 },
        status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
        verified: { type: 'boolean', description: 'Verification status', default: true },
      },
      required: [],
    }, 'Elicitation completed'),
    test_elicitation_sep1330_enums: async (args, message) => elicit(message, 'Please select options from the enum fields', {
      type: 'object',
      properties: {
        untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
        titledSingle: {
          type: 'string', description: 'Select one option with titles',
          oneOf: [{ const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' }, { const: 'value3', title: 'Third Option' }],
        },
        legacyEnum: { type: 'string', description: 'Select one option (legacy)', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
        untitledMulti: { type: 'array', description: 'Select multiple options', minItems: 1, maxItems: 3, items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
        titledMulti: {
          type: 'array', description: 'Select multiple options with titles', minItems: 1, maxItems: 3,
          items: { anyOf: [{ const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' }, { const: 'value3', title: 'Third Choice' }] },
        },
      },
      required: [],
    }, 'Elicitation completed'),
  };

  // The 2026-07-28 scenarios (multi round-trip requests): the tab asks the agent through
  // the tab protocol as it always does, with its own request ids, which the relay turns
  // into the keys of input_required rounds.
  const ask = (message, id, method, params) => tab.request(method, { ...params, _meta: callOf(message) }, id);
  const askName = (message, id, question, field) => ask(message, id, 'elicitation/create', {
    message: question,
    requestedSchema: { type: 'object', properties: { [field]: { type: 'string', description: question } }, required: [field] },
  });
  const askModel = (message, id, question) => ask(message, id, 'sampling/createMessage', {
    messages: [{ role: 'user', content: text(question) }], maxTokens: 50,
  });
  const askRoots = (message, id) => ask(message, id, 'roots/list', {});
  const failed = (answer) => answer.error && { isError: true, content: [text(`The agent could not answer: ${answer.error.message}`)] };
  Object.assign(tools, {
    test_missing_capability: async (args, message) => {
      const answer = await askModel(message, 'needs_sampling', 'Say hello');
      return failed(answer) || { content: [text(`Sampled: ${answer.result.content?.text ?? ''}`)] };
    },
    test_streaming_elicitation: async (args, message) => {
      const answer = await askName(message, 'stream_name', 'What is your name?', 'name');
      return failed(answer) || { content: [text(`Streaming complete: ${answer.result.content?.name ?? ''}`)] };
    },
    // A tab's own list change (it serves names beyond the catalogue): agents listening
    // for it hear it through the router, whichever gateway they use.
    test_trigger_tool_change: async () => {
      tab.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      return { content: [text('Tool list changed')] };
    },
    test_trigger_prompt_change: async () => {
      tab.send({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' });
      return { content: [text('Prompt list changed')] };
    },
    test_logging_tool: async (args, message) => {
      tab.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'logging tool ran', _meta: callOf(message) } });
      return { content: [text('Logging evaluated')] };
    },
    test_input_required_result_elicitation: async (args, message) => {
      const answer = await askName(message, 'user_name', 'What is your name?', 'name');
      return failed(answer) || { content: [text(`Hello, ${answer.result.content?.name}!`)] };
    },
    test_input_required_result_sampling: async (args, message) => {
      const answer = await askModel(message, 'capital_question', 'What is the capital of France?');
      return failed(answer) || { content: [text(`Sampling: ${answer.result.content?.text}`)] };
    },
    test_input_required_result_list_roots: async (args, message) => {
      const answer = await askRoots(message, 'client_roots');
      return failed(answer) || { content: [text(`Found ${answer.result.roots?.length ?? 0} root(s)`)] };
    },
    test_input_required_result_request_state: async (args, message) => {
      const answer = await askName(message, 'confirm', 'Please confirm', 'ok');
      return failed(answer) || { content: [text('state-ok')] };
    },
    test_input_required_result_tampered_state: async (args, message) => {
      const answer = await askName(message, 'confirm', 'Please confirm', 'ok');
      return failed(answer) || { content: [text('integrity-ok')] };
    },
    test_input_required_result_multiple_inputs: async (args, message) => {
      // Sent together: one round.
      const answers = await Promise.all([
        askName(message, 'user_name', 'What is your name?', 'name'),
        askModel(message, 'greeting', 'Generate a greeting'),
        askRoots(message, 'client_roots'),
      ]);
      return answers.map(failed).find(Boolean) || { content: [text('all inputs')] };
    },
    test_input_required_result_multi_round: async (args, message) => {
      const name = await askName(message, 'name', 'What is your name?', 'name');
      if (name.error) return failed(name);
      const color = await askName(message, 'color', 'What is your favourite colour?', 'color');
      return failed(color) || { content: [text(`${name.result.name ?? name.result.content?.name} likes ${color.result.color ?? color.result.content?.color}`)] };
    },
    test_input_required_result_capabilities: async (args, message) => {
      // Asks for everything; the relay asks the agent only what it declared and refuses
      // the rest to the tab at once.
      const answers = await Promise.all([
        askName(message, 'e', 'Elicitation input', 'value'),
        askModel(message, 's', 'Sample request'),
        askRoots(message, 'r'),
      ]);
      return answers.some((a) => a.result) ? { content: [text('capabilities-ok')] } : failed(answers[0]);
    },
  });

  async function elicit(message, prompt, requestedSchema, label) {
    const answer = await tab.request('elicitation/create', { message: prompt, requestedSchema, _meta: callOf(message) });
    if (answer.error) return { isError: true, content: [text(`Elicitation failed: ${answer.error.message}`)] };
    return { content: [text(`${label}: action=${answer.result.action}, content=${JSON.stringify(answer.result.content ?? {})}`)] };
  }

  tab.handlers['tools/call'] = async (params, message) => {
    const tool = tools[params.name];
    if (!tool) return { isError: true, content: [text(`Unknown tool: ${params.name}`)] };
    return tool(params.arguments ?? {}, message, params);
  };

  tab.handlers['resources/read'] = async ({ uri }) => {
    if (uri === 'test://static-text') {
      return { contents: [{ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }] };
    }
    if (uri === 'test://static-binary') return { contents: [{ uri, mimeType: 'image/png', blob: PNG }] };
    if (uri === 'test://watched-resource') return { contents: [{ uri, mimeType: 'text/plain', text: 'Watched resource content.' }] };
    const match = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
    if (match) {
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify({ id: match[1], templateTest: true, data: `Data for ID: ${match[1]}` }) }] };
    }
    throw Object.assign(new Error(`Resource not found: ${uri}`), { code: -32002, data: { uri } });
  };

  tab.handlers['prompts/get'] = async ({ name, arguments: args = {} }, message) => {
    switch (name) {
      case 'test_simple_prompt':
        return { messages: [{ role: 'user', content: text('This is a simple prompt for testing.') }] };
      case 'test_prompt_with_arguments':
        return { messages: [{ role: 'user', content: text(`Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'`) }] };
      case 'test_prompt_with_embedded_resource':
        return {
          messages: [
            { role: 'user', content: { type: 'resource', resource: { uri: args.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
            { role: 'user', content: text('Please process the embedded resource above.') },
          ],
        };
      case 'test_prompt_with_image':
        return {
          messages: [
            { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
            { role: 'user', content: text('Please analyze the image above.') },
          ],
        };
      case 'test_input_required_result_prompt': {
        const answer = await askName(message, 'user_context', 'What context should the prompt use?', 'context');
        if (answer.error) throw toolError(`The agent could not answer: ${answer.error.message}`);
        return { messages: [{ role: 'user', content: text(`Context: ${answer.result.content?.context}`) }] };
      }
      default:
        throw toolError(`Unknown prompt: ${name}`);
    }
  };

  tab.handlers['completion/complete'] = async () => ({ completion: { values: [], total: 0, hasMore: false } });
  return tab;
}

export async function connectConformanceTab(url, ticket) {
  const tab = serveConformance(new ScriptedTab(url));
  const hello = await tab.hello(ticket, { name: 'conformance-tab', version: '1.0.0' });
  if (!hello.result) throw new Error(`conformance tab refused: ${JSON.stringify(hello.error)}`);
  return tab;
}
