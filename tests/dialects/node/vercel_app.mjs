// The Vercel AI SDK (``ai`` 5, 6 or 7 with its OpenAI provider) answering with RAG as a tool
// call, as its docs write it: ``generateText`` with a ``searchDocs`` tool and a step limit,
// telemetry on, exported by the standard OTLP/HTTP JSON exporter. ``ai`` 5 and 6 trace with
// ``experimental_telemetry`` (their own ``ai.*`` spans); ``ai`` 7 through the ``@ai-sdk/otel``
// integration registered once (GenAI-convention spans) and the call's ``telemetry``. A turn of
// a conversation carries its ID: in ``experimental_telemetry.metadata.sessionId`` (5, 6), or
// (7, whose telemetry has no metadata and records no conversation) in the call's
// ``runtimeContext``, let into telemetry by ``includeRuntimeContext`` and put on every span as
// ``gen_ai.conversation.id`` by the integration's ``enrichSpan`` hook.
//
// node vercel_app.mjs ENDPOINT CORPUS_JSON VERSION   (VERSION: 5, 6 or 7)
import { z } from "zod";

import { askAll, fakeOpenAI, loadCorpus, questionIn, tracing } from "./harness.mjs";

const [endpoint, corpusPath, version] = process.argv.slice(2);
const ai = await import({ 5: "ai5", 6: "ai6", 7: "ai" }[version]);
const { generateText, stepCountIs, tool } = ai;
const { createOpenAI } = await import(`ai-sdk-openai-${Number(version) - 3}`);

const corpus = loadCorpus(corpusPath);
const traces = tracing(endpoint, `vercel-ai-${version}`, "json");
if (version === "7") {
  // After the tracer provider, as the docs' Next.js set-up orders it.
  const { OpenTelemetry } = await import("@ai-sdk/otel");
  ai.registerTelemetry(
    new OpenTelemetry({
      enrichSpan: ({ runtimeContext }) =>
        runtimeContext?.sessionId ? { "gen_ai.conversation.id": runtimeContext.sessionId } : {},
    }),
  );
}
const fake = await fakeOpenAI(corpus);
const openai = createOpenAI({ baseURL: fake.url, apiKey: "test-key" });

/** The app's search: the corpus retriever table, keyed by the question a query names (or a
 * planned sub-query), ranked with scores. */
function search(query) {
  const plan = Object.entries(corpus.subqueries).find(([sub]) => query === sub);
  const ids = plan ? corpus.retrieved[plan[1]] : corpus.retrieved[questionIn(corpus, query)];
  return ids.map((id, i) => ({ id, text: corpus.passages[id], score: corpus.scores[i] }));
}

const searchDocs = tool({
  description: "Search the product documentation.",
  inputSchema: z.object({ query: z.string().describe("what to look for") }),
  execute: async ({ query }) => search(query),
});

/** The conversation a question is a turn of (by default one of its own). */
const sessionOf = (question) =>
  corpus.sessions[question] ?? `session-${corpus.ask.indexOf(question)}`;

await askAll(
  corpus.ask,
  (question) =>
    generateText({
      model: openai.chat("gpt-test"),
      system: "Answer from the search results only.",
      prompt: question,
      tools: { searchDocs },
      stopWhen: stepCountIs(3),
      ...(version === "7"
        ? {
            runtimeContext: { sessionId: sessionOf(question) },
            telemetry: {
              isEnabled: true,
              functionId: "support-bot",
              includeRuntimeContext: { sessionId: true },
            },
          }
        : {
            experimental_telemetry: {
              isEnabled: true,
              functionId: "support-bot",
              metadata: { sessionId: sessionOf(question) },
            },
          }),
    }),
  traces,
);
await fake.close();
