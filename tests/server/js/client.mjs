// What the official JS client (@langchain/langgraph-sdk) does against a graph-agent server,
// printed as one JSON line for tests/server/test_js_client.py to check.
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: process.argv[2] });
const seen = {};
const ask = (content) => ({ messages: [{ role: "user", content }] });

seen.assistants = (await client.assistants.search()).map((a) => a.graph_id).sort();

const thread = await client.threads.create({ metadata: { user: "ada" } });
const live = [];
let runId = null;
for await (const part of client.runs.stream(thread.thread_id, "weather", {
  input: ask("Weather in Paris?"),
  streamMode: ["values", "messages-tuple", "updates"],
  streamResumable: true,
  onRunCreated: ({ run_id }) => { runId = run_id; },
})) {
  live.push([part.event, part.data]);
}
seen.runCreated = runId === live[0][1].run_id;
seen.events = [...new Set(live.map(([event]) => event))];
seen.answer = (await client.threads.getState(thread.thread_id)).values.messages.at(-1).content;

// rejoin the finished run from its start, as useStream does (Last-Event-ID: -1)
const again = [];
for await (const part of client.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1" })) {
  again.push([part.event, part.data]);
}
seen.rejoinedAll = JSON.stringify(again) === JSON.stringify(live);

const paused = await client.threads.create();
const waiting = await client.runs.wait(paused.thread_id, "refunds", { input: ask("refund") });
seen.interrupt = waiting.__interrupt__[0].value.tool_calls[0].name;
seen.pausedStatus = (await client.threads.get(paused.thread_id)).status;
const done = await client.runs.wait(paused.thread_id, "refunds", {
  command: { resume: { tool_call_id: "call_1", decision: "approved" } },
});
seen.approved = done.messages.at(-1).content;
seen.history = (await client.threads.getHistory(paused.thread_id, { limit: 2 })).length;
seen.found = (await client.threads.search({ metadata: { user: "ada" } })).map((t) => t.thread_id)
  .includes(thread.thread_id);
try {
  await client.threads.get("no-such-thread");
  seen.missing = "found";
} catch (error) {
  seen.missing = error.status;
}
console.log(JSON.stringify(seen));
