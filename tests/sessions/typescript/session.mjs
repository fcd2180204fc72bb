// One recorded conversation through the Vercel AI SDK 7 and its OpenTelemetry integration (@ai-sdk/otel).
// The AI SDK has no session object: the app keeps the conversation as its message list and sends it
// with every generateText call (messages: [...history, new user message]), then appends the
// response's messages. The app that drops the history sends only the new message. The session id
// rides as runtime context, and the OpenTelemetry integration's enrichSpan hook writes it as
// gen_ai.conversation.id (the integration writes no conversation id of its own).
// The recorder (tests/sessions/typescript_recorder.py) passes the session in SESSION_SPEC (JSON).

import { NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import * as ai from 'ai';
import { OpenTelemetry } from '@ai-sdk/otel';
import { createOpenAI } from '@ai-sdk/openai';

const spec = JSON.parse(process.env.SESSION_SPEC);
const SERVICE = 'sre-assistant';

async function post(url, body) {
  const response = await fetch(url, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error);
  return answer;
}

const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'sre-agent' }),
  spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: spec.otlpUrl }))],
});
provider.register();
ai.registerTelemetry(new OpenTelemetry({
  enrichSpan: ({ runtimeContext }) => (runtimeContext?.conversationId
    ? { 'gen_ai.conversation.id': runtimeContext.conversationId } : {}),
}));

const model = createOpenAI({ baseURL: spec.modelUrl, apiKey: 'x' }).chat(spec.model);
const tools = Object.fromEntries(spec.tools.map((t) => [t.name, ai.tool({
  description: t.description, inputSchema: ai.jsonSchema(t.parameters),
  execute: async (args) => (await post(`${spec.sidecarUrl}/tools/${t.name}`, args)).result,
})]));

const history = [];
const answers = [];
try {
  for (const [index, text] of spec.turns.entries()) {
    await post(`${spec.sidecarUrl}/turn/${index}`, {});
    const message = { role: 'user', content: text };
    const result = await ai.generateText({
      model, tools, system: spec.instructions, stopWhen: ai.stepCountIs(5),
      messages: spec.history ? [...history, message] : [message],
      runtimeContext: { conversationId: spec.sessionId },
      telemetry: {
        isEnabled: true, functionId: SERVICE, recordInputs: spec.content, recordOutputs: spec.content,
        includeRuntimeContext: { conversationId: true }, // runtime context reaches telemetry only when named
      },
    });
    if (spec.history) history.push(message, ...result.responseMessages);
    answers.push(result.text);
    await provider.forceFlush();
  }
  await post(`${spec.sidecarUrl}/turn/${spec.turns.length}`, {});
  console.log(JSON.stringify({ answers }));
} catch (error) {
  console.log(JSON.stringify({ raised: `${error.name}: ${error.message}`, answers }));
  process.exitCode = 1;
} finally {
  await provider.shutdown();
}
