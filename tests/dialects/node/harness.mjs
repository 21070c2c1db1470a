// What every Node dialect app shares (the Node side of tests/dialects/apps/_harness.py): the
// corpus the Python test wrote, a fake OpenAI-compatible chat completions server on loopback
// that scripts the model (tool calls, then the corpus answer), a tracer provider exporting to the
// evaluator with a standard Node OTLP exporter (no re-framing: its requests are chunked), and a
// record of which trace each question became. Each app prints one JSON line:
// [{"question": ..., "trace_id": ...}, ...].
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

import { OTLPTraceExporter as HttpExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";

/** The corpus file: passages, retriever table, answers, questions, two-search plans. */
export function loadCorpus(path) {
  return JSON.parse(readFileSync(path, "utf8"));
}

/** The corpus question a text contains (the fakes answer by it). */
export function questionIn(corpus, text) {
  const found = corpus.questions.find((q) => text.includes(q));
  if (found === undefined) throw new Error(`no known question in ${text.slice(0, 200)}`);
  return found;
}

function messageText(message) {
  const { content } = message;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => p.text ?? "").join("");
  return "";
}

/** The fake model's reply to one chat completions request: with tools and no tool result yet,
 * the searches the corpus plans for the question (one with the question itself by default);
 * else the corpus answer. */
function reply(corpus, body) {
  const users = body.messages.filter((m) => m.role === "user");
  const question = questionIn(corpus, messageText(users[users.length - 1]));
  const searched = body.messages.some((m) => m.role === "tool");
  if (body.tools?.length && !searched) {
    const queries = corpus.searches[question] ?? [question];
    return {
      role: "assistant",
      content: null,
      tool_calls: queries.map((query, i) => ({
        id: `call_${i}`,
        type: "function",
        function: { name: body.tools[0].function.name, arguments: JSON.stringify({ query }) },
      })),
    };
  }
  return { role: "assistant", content: corpus.answers[question] };
}

/** Start the fake OpenAI-compatible server; resolves to its base URL (``.../v1``) and a close.
 * Each reply comes after ``AGENT_MODEL_DELAY_S`` seconds (a real model's latency; 0 unset). */
export async function fakeOpenAI(corpus) {
  let n = 0;
  const delayMs = Number(process.env.AGENT_MODEL_DELAY_S ?? "0") * 1000;
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => setTimeout(() => {
      const body = JSON.parse(raw);
      const message = reply(corpus, body);
      n += 1;
      res.setHeader("Content-Type", "application/json");
      res.end(
        JSON.stringify({
          id: `chatcmpl-${n}`,
          object: "chat.completion",
          created: 1_700_000_000,
          model: body.model,
          choices: [
            {
              index: 0,
              message,
              finish_reason: message.tool_calls ? "tool_calls" : "stop",
            },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      );
    }, delayMs));
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    close: () => new Promise((done) => server.close(done)),
  };
}

/** A registered tracer provider exporting to ``endpoint`` with the standard exporter of
 * ``encoding`` (``proto`` or ``json``), and the trace IDs of the spans that ended. */
export function tracing(endpoint, service, encoding) {
  const seen = [];
  const Exporter = encoding === "json" ? HttpExporter : ProtoExporter;
  const exporter = new Exporter({ url: `${endpoint.replace(/\/$/, "")}/v1/traces` });
  const ids = {
    onStart() {},
    onEnd(span) {
      seen.push(span.spanContext().traceId);
    },
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": service }),
    spanProcessors: [ids, new BatchSpanProcessor(exporter)],
  });
  provider.register();
  return { provider, seen };
}

/** Ask each question; print which trace each became (exactly one new trace each). */
export async function askAll(questions, ask, { provider, seen }) {
  const out = [];
  for (const question of questions) {
    const before = seen.length;
    await ask(question);
    await provider.forceFlush();
    const fresh = [...new Set(seen.slice(before))];
    if (fresh.length !== 1) throw new Error(`${question}: ${fresh.length} traces`);
    out.push({ question, trace_id: fresh[0] });
  }
  await provider.shutdown();
  console.log(JSON.stringify(out));
}
