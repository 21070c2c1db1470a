// A LangChain.js RAG chain as its docs write it, traced by OpenInference JS: files loaded with
// TextLoader (metadata.source = the file's path), split by RecursiveCharacterTextSplitter, each
// chunk given its own Document.id, stored in a MemoryVectorStore over a fake embeddings class;
// retriever -> prompt -> ChatOpenAI (a fake OpenAI server at the wire) -> string parser;
// exported by the standard OTLP/HTTP protobuf exporter. A question the corpus plans sub-queries
// for is answered by a chain that runs the retriever once per sub-query (a RunnableLambda
// handing its config on, as the docs show for nested runnables). Turns of a conversation carry
// its ID as the run's `session_id` metadata (LangSmith's thread keys, which OpenInference JS
// records as `session.id`).
//
// node langchain_app.mjs ENDPOINT CORPUS_JSON MODE   (MODE: ids, or noids: no Document.id, only
// the loader's metadata)
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";

import { askAll, fakeOpenAI, loadCorpus, questionIn, tracing } from "./harness.mjs";

const [endpoint, corpusPath, mode] = process.argv.slice(2);
const corpus = loadCorpus(corpusPath);
const traces = tracing(endpoint, `langchainjs-${mode}`, "proto");
// The documented set-up for ES modules: patch the callback manager module by hand.
new LangChainInstrumentation().manuallyInstrument(CallbackManagerModule);

const { TextLoader } = await import("@langchain/classic/document_loaders/fs/text");
const { MemoryVectorStore } = await import("@langchain/classic/vectorstores/memory");
const { RecursiveCharacterTextSplitter } = await import("@langchain/textsplitters");
const { Embeddings } = await import("@langchain/core/embeddings");
const { ChatPromptTemplate } = await import("@langchain/core/prompts");
const { StringOutputParser } = await import("@langchain/core/output_parsers");
const { RunnableLambda, RunnablePassthrough, RunnableSequence } = await import(
  "@langchain/core/runnables"
);
const { ChatOpenAI } = await import("@langchain/openai");

const ids = Object.keys(corpus.passages);

/** One dimension per passage; a question's (or planned sub-query's) vector weighs the passages
 * the corpus retrieves for it by rank (a lone passage is followed by the pricing one, so every
 * search returns two). */
class CorpusEmbeddings extends Embeddings {
  async embedDocuments(texts) {
    return texts.map((text) => ids.map((id) => (corpus.passages[id] === text.trim() ? 1 : 0)));
  }

  async embedQuery(text) {
    const ranked = corpus.retrieved[corpus.subqueries[text] ?? questionIn(corpus, text)];
    const weights = ranked.length > 1 ? ranked : [...ranked, "doc-pricing"];
    return ids.map((id) => {
      const rank = weights.indexOf(id);
      return rank < 0 ? 0 : corpus.scores[rank] ?? 0.1;
    });
  }
}

const folder = mkdtempSync(join(tmpdir(), "kb-"));
const docs = [];
for (const id of ids) {
  const path = join(folder, `${id}.md`);
  writeFileSync(path, corpus.passages[id]);
  docs.push(...(await new TextLoader(path).load()));
}
const splitter = new RecursiveCharacterTextSplitter({ chunkSize: 500, chunkOverlap: 0 });
const chunks = await splitter.splitDocuments(docs);
if (mode === "ids") {
  for (const chunk of chunks) chunk.id = basename(chunk.metadata.source, ".md");
}
const store = await MemoryVectorStore.fromDocuments(chunks, new CorpusEmbeddings());
const retriever = store.asRetriever({ k: 2 });

const fake = await fakeOpenAI(corpus);
const llm = new ChatOpenAI({
  model: "gpt-test",
  apiKey: "test-key",
  configuration: { baseURL: fake.url },
});
const prompt = ChatPromptTemplate.fromMessages([
  ["system", "Answer from the context only."],
  ["human", "Context:\n{context}\nQuestion: {question}"],
]);
const joined = (found) => found.map((d) => d.pageContent).join("\n");
const answering = (context) =>
  RunnableSequence.from([
    { context, question: new RunnablePassthrough() },
    prompt,
    llm,
    new StringOutputParser(),
  ]);
const chain = answering(retriever.pipe(joined));
const searchEach = RunnableLambda.from(async (question, config) => {
  const found = [];
  for (const query of corpus.searches[question]) {
    found.push(...(await retriever.invoke(query, config)));
  }
  return joined(found);
});
const twoSearchChain = answering(searchEach);

await askAll(
  corpus.ask,
  (question) =>
    (corpus.searches[question] ? twoSearchChain : chain).invoke(question, {
      metadata: corpus.sessions[question] ? { session_id: corpus.sessions[question] } : {},
    }),
  traces,
);
await fake.close();
