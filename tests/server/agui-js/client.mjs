// What the official AG-UI JS client (@ag-ui/client's HttpAgent) does against a graph-agent
// server's /ag-ui routes, printed as one JSON line for tests/server/test_agui_js_client.py to
// check. Every run goes through the client's own pipeline: its schemas (enforceEvents), its
// event-order verification (verifyEvents: a run opens and closes, messages, tool calls, steps
// and sub-agents open before they close) and its reducer (messages, state, interrupts); a
// stream it refuses makes runAgent throw, and the error is what is printed.
import { HttpAgent } from "@ag-ui/client";

const base = process.argv[2];
const seen = {};

// One run: the event types in order (each kept once), the outcome, the tool calls and the
// texts the client assembled from the stream (a text marked by whether a sub-agent said it).
async function run(agent, parameters = {}) {
  const types = [];
  const calls = [];
  const texts = [];
  let finished = null;
  await agent.runAgent(parameters, {
    onEvent: ({ event }) => {
      if (!types.includes(event.type)) types.push(event.type);
    },
    onToolCallEndEvent: ({ toolCallName, toolCallArgs }) => {
      calls.push([toolCallName, toolCallArgs]);
    },
    onTextMessageEndEvent: ({ event, textMessageBuffer }) => {
      texts.push([event.subagentRunId ? "subagent" : "agent", textMessageBuffer]);
    },
    onRunFinishedEvent: (params) => {
      finished = params;
    },
  });
  return { types, calls, texts, finished };
}

const said = (agent) => agent.messages.filter((m) => m.role === "assistant" && m.content)
  .map((m) => m.content);

// a streamed answer with a tool call, then a second turn with the whole history sent back
const weather = new HttpAgent({ url: `${base}/ag-ui/weather`, threadId: "js-weather" });
weather.addMessage({ id: "u1", role: "user", content: "Weather in Paris?" });
const first = await run(weather);
seen.weather = {
  types: first.types,
  calls: first.calls,
  outcome: first.finished.outcome,
  roles: weather.messages.map((m) => m.role),
  said: said(weather),
};
weather.addMessage({ id: "u2", role: "user", content: "And tomorrow?" });
await run(weather);
seen.secondTurn = weather.messages.map((m) => m.role);

// an interrupt (a HumanInTheLoopHook's approval), then its resume
const refunds = new HttpAgent({ url: `${base}/ag-ui/refunds`, threadId: "js-refunds" });
refunds.addMessage({ id: "u1", role: "user", content: "Refund 5" });
const paused = await run(refunds);
const [pause] = refunds.pendingInterrupts;
seen.interrupt = {
  outcome: paused.finished.outcome,
  reason: pause.reason,
  toolCallId: pause.toolCallId,
  required: pause.responseSchema.required,
  pending: refunds.pendingInterrupts.length,
};
const resumed = await run(refunds, {
  resume: [{ interruptId: pause.id, status: "resolved", payload: { approved: true } }],
});
seen.resumed = {
  outcome: resumed.finished.outcome,
  pending: refunds.pendingInterrupts.length,
  tool: refunds.messages.filter((m) => m.role === "tool").map((m) => m.content),
  said: said(refunds),
};

// the same approval cancelled (abandoned without an answer): the call is rejected
const declined = new HttpAgent({ url: `${base}/ag-ui/refunds`, threadId: "js-declined" });
declined.addMessage({ id: "u1", role: "user", content: "Refund 5" });
await run(declined);
const cancelled = await run(declined, {
  resume: [{ interruptId: declined.pendingInterrupts[0].id, status: "cancelled" }],
});
seen.cancelled = {
  outcome: cancelled.finished.outcome,
  tool: declined.messages.filter((m) => m.role === "tool").map((m) => m.content),
};

// a front-end tool: declared by the client, called by the model, answered by the client
const tool = {
  name: "change_background",
  description: "Change the page's background colour.",
  parameters: { type: "object", properties: { color: { type: "string" } } },
};
const ui = new HttpAgent({ url: `${base}/ag-ui/ui`, threadId: "js-ui" });
ui.addMessage({ id: "u1", role: "user", content: "Make it blue" });
const asked = await run(ui, { tools: [tool] });
seen.frontEnd = {
  outcome: asked.finished.outcome,
  pendingToolCallIds: asked.finished.pendingToolCallIds,
  calls: asked.calls,
};
ui.addMessage({ id: "r1", role: "tool", toolCallId: "call_bg", content: "it is blue now" });
const answered = await run(ui, { tools: [tool] });
seen.frontEndAnswered = {
  outcome: answered.finished.outcome,
  pendingToolCallIds: answered.finished.pendingToolCallIds,
  roles: ui.messages.map((m) => m.role),
  said: said(ui),
};

// a tool result for a call the thread does not wait for: the server's 422, as the client
// reports it
ui.addMessage({ id: "r2", role: "tool", toolCallId: "call_bg", content: "again" });
try {
  await run(ui, { tools: [tool] });
  seen.refused = "accepted";
} catch (error) {
  seen.refused = { status: error.status, said: error.message.includes("did not leave") };
}

// a graph's state (a snapshot, then JSON Patch deltas the client applies) and its custom events
const counter = new HttpAgent({ url: `${base}/ag-ui/counter`, threadId: "js-counter" });
counter.addMessage({ id: "u1", role: "user", content: "go" });
const counted = await run(counter);
seen.state = { value: counter.state, types: counted.types };

// an agent called as a tool: its events carry the sub-agent's run id
const boss = new HttpAgent({ url: `${base}/ag-ui/boss`, threadId: "js-boss" });
boss.addMessage({ id: "u1", role: "user", content: "go" });
const bossed = await run(boss);
seen.subagent = {
  types: bossed.types.filter((t) => t.startsWith("SUBAGENT")),
  texts: bossed.texts,
  said: said(boss),
};

// a user message with an image: the messages snapshot gives its parts back
const chat = new HttpAgent({ url: `${base}/ag-ui/chat`, threadId: "js-parts" });
const png = Buffer.from("\x89PNG\r\n\x1a\n").toString("base64");
chat.addMessage({
  id: "u1",
  role: "user",
  content: [
    { type: "text", text: "Look" },
    { type: "image", source: { type: "data", value: png, mimeType: "image/png" } },
  ],
});
await run(chat);
seen.parts = {
  sent: chat.messages[0].content.map((part) => part.type),
  said: said(chat),
};

console.log(JSON.stringify(seen));
