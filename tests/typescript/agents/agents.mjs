// One scripted agent run, the way a TypeScript user sets each framework up with its own
// OpenTelemetry instrumentation. The recorder (tests/typescript/recorder.py) passes the run in
// CORPUS_SPEC (JSON): setup, task, instructions, step limit, the tools (name, description,
// JSON schema), where the model, the tools and the OTLP endpoint are, whether content is recorded.
// Tools are thin HTTP calls to the recorder's simulated cluster, so every setup works on the
// same cluster the Python corpus uses.

import { NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';

const spec = JSON.parse(process.env.CORPUS_SPEC);
const SERVICE = 'sre-agent';

async function callTool(name, args) {
  const response = await fetch(`${spec.toolsUrl}/${name}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(args),
  });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error);
  return body.result;
}

// The documented setup every AI SDK integration rests on: a tracer provider with an OTLP exporter.
function tracerProvider() {
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': SERVICE }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: spec.otlpUrl }))],
  });
  provider.register();
  return provider;
}

// A history window too small for the run: the system prompt stays, only the last few messages go.
function tightWindow({ messages }) {
  const { trigger, keep } = spec.history;
  return messages.length > trigger ? { messages: messages.slice(-keep) } : {};
}

async function aiSdk(ai, openai, telemetryKey) {
  const { generateText, streamText, tool, jsonSchema, stepCountIs } = ai;
  const model = openai.createOpenAI({ baseURL: spec.modelUrl, apiKey: 'x' }).chat(spec.model);
  const tools = Object.fromEntries(spec.tools.map((t) => [t.name, tool({
    description: t.description, inputSchema: jsonSchema(t.parameters), execute: (args) => callTool(t.name, args),
  })]));
  const options = {
    model, tools, system: spec.instructions, prompt: spec.task, stopWhen: stepCountIs(spec.limit),
    [telemetryKey]: { isEnabled: true, functionId: SERVICE, recordInputs: spec.content, recordOutputs: spec.content },
    ...(spec.history ? { prepareStep: tightWindow } : {}),
  };
  if (spec.stream) {
    const result = streamText({ ...options, onError: () => {} });
    await result.consumeStream();
    return await result.text;
  }
  return (await generateText(options)).text;
}

async function mastra() {
  const { Mastra } = await import('@mastra/core/mastra');
  const { Agent } = await import('@mastra/core/agent');
  const { createTool } = await import('@mastra/core/tools');
  const { Observability } = await import('@mastra/observability');
  const { OtelExporter } = await import('@mastra/otel-exporter');
  const { jsonSchema } = await import('ai');
  const { createOpenAI } = await import('@ai-sdk/openai');
  const model = createOpenAI({ baseURL: spec.modelUrl, apiKey: 'x' }).chat(spec.model);
  const tools = Object.fromEntries(spec.tools.map((t) => [t.name, createTool({
    id: t.name, description: t.description, inputSchema: jsonSchema(t.parameters),
    execute: (args) => callTool(t.name, args),
  })]));
  const agent = new Agent({ id: SERVICE, name: SERVICE, instructions: spec.instructions, model, tools });
  const exporter = new OtelExporter({ provider: { custom: { endpoint: spec.otlpUrl, protocol: 'http/json' } } });
  const app = new Mastra({
    agents: { sreAgent: agent },
    logger: false,
    observability: new Observability({
      configs: { otel: { serviceName: SERVICE, exporters: [exporter], ...(spec.content ? {} : { spanOutputProcessors: [dropContent] }) } },
    }),
  });
  try {
    const result = await app.getAgent('sreAgent').generate(spec.task, {
      maxSteps: spec.limit, ...(spec.history ? { prepareStep: tightWindow } : {}),
    });
    return result.text;
  } finally {
    await app.shutdown();
  }
}

// OpenAI Agents SDK through OpenInference's trace processor, registered exclusively (its default):
// only OpenInference spans leave the process, nothing goes to OpenAI's trace ingest.
async function openaiAgents(provider) {
  const agents = await import('@openai/agents');
  const { OpenAIAgentsInstrumentation } = await import('@arizeai/openinference-instrumentation-openai-agents');
  const { default: OpenAI } = await import('openai');
  new OpenAIAgentsInstrumentation({
    tracerProvider: provider, traceConfig: spec.content ? {} : { hideInputs: true, hideOutputs: true },
  }).manuallyInstrument(agents);
  agents.setDefaultOpenAIClient(new OpenAI({ baseURL: spec.modelUrl, apiKey: 'x' }));
  agents.setOpenAIAPI('chat_completions');
  const tools = spec.tools.map((t) => agents.tool({
    name: t.name, description: t.description, parameters: t.parameters, strict: false,
    execute: (args) => callTool(t.name, args),
  }));
  const agent = new agents.Agent({ name: SERVICE, instructions: spec.instructions, model: spec.model, tools });
  // History: past the trigger, only the last few input items (the instructions are sent apart).
  const keepLast = ({ modelData }) => (modelData.input.length + 1 > spec.history.trigger
    ? { ...modelData, input: modelData.input.slice(-spec.history.keep) } : modelData);
  const result = await agents.run(agent, spec.task, {
    maxTurns: spec.limit, ...(spec.history ? { callModelInputFilter: keepLast } : {}),
  });
  return result.finalOutput;
}

// Mastra has no content switch on its exporter: a span output processor that drops inputs and outputs.
const dropContent = {
  name: 'drop-content',
  process(span) {
    if (span) { span.input = undefined; span.output = undefined; }
    return span;
  },
  async shutdown() {},
};

async function main() {
  let provider;
  let answer;
  try {
    switch (spec.setup) {
      case 'ai-sdk-7': {
        provider = tracerProvider();
        const ai = await import('ai');
        const { OpenTelemetry } = await import('@ai-sdk/otel');
        ai.registerTelemetry(new OpenTelemetry());
        answer = await aiSdk(ai, await import('@ai-sdk/openai'), 'telemetry');
        break;
      }
      case 'ai-sdk-7-legacy': {
        provider = tracerProvider();
        const ai = await import('ai');
        const { LegacyOpenTelemetry } = await import('@ai-sdk/otel');
        ai.registerTelemetry(new LegacyOpenTelemetry());
        answer = await aiSdk(ai, await import('@ai-sdk/openai'), 'telemetry');
        break;
      }
      case 'ai-sdk-6':
        provider = tracerProvider();
        answer = await aiSdk(await import('ai-v6'), await import('@ai-sdk/openai-v3'), 'experimental_telemetry');
        break;
      case 'openai-agents':
        provider = tracerProvider();
        answer = await openaiAgents(provider);
        break;
      case 'mastra':
        answer = await mastra();
        break;
      default:
        throw new Error(`unknown setup ${spec.setup}`);
    }
    console.log(JSON.stringify({ answer }));
  } catch (error) { // a framework's own limit error is part of the recording
    console.log(JSON.stringify({ raised: `${error.name}: ${error.message}` }));
    process.exitCode = 1;
  } finally {
    if (provider) await provider.shutdown();
  }
}

await main();
