// The graph-agent web page: chat with a served agent (or run any graph from a form), approve
// its interrupts, watch each run as a timeline and the graph it runs, and travel its history.
// Plain JavaScript modules, no build step, no dependencies: it talks only to the server's
// public Agent Protocol endpoints (the ones langgraph-sdk uses) and a few of ours.

import { $, h, notice } from "./dom.js";
import { S } from "./state.js";
import { ApiError, askToken, apiJson } from "./api.js";
import { onResume } from "./approvals.js";
import { renderMessages } from "./chat.js";
import { startRun, stopRun, abortRunning } from "./runs.js";
import { selectAgent, newThread, selectThread, keepListed } from "./threads.js";
import { onInput } from "./form.js";
import { onHistoryRun } from "./history.js";
import { refreshThread } from "./thread.js";

async function send() {
  const input = $("input");
  const text = input.value.trim();
  if (!text || S.running) return;
  if (!S.threadId) await newThread();
  input.value = "";
  S.messages = [...S.messages, { type: "human", content: text, id: `local-${Date.now()}` }];
  renderMessages();
  await startRun({ input: { messages: [{ type: "human", content: text }] } });
}

function guard(fn) {
  return (...args) =>
    Promise.resolve(fn(...args)).catch((error) => {
      notice(error instanceof ApiError ? `The server answered ${error.status}: ${error.detail}` : String(error.message || error));
    });
}

async function start() {
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    guard(send)();
  });
  $("input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      guard(send)();
    }
  });
  $("stop").addEventListener("click", guard(stopRun));
  $("agent").addEventListener("change", guard(() => selectAgent($("agent").value)));
  $("thread").addEventListener("change", guard(() => $("thread").value && selectThread($("thread").value)));
  $("new-thread").addEventListener("click", guard(async () => {
    abortRunning();
    await newThread();
    $("input").focus();
  }));
  $("change-token").addEventListener("click", guard(async () => {
    await askToken(false);
    await start2();
  }));
  await start2();
  keepListed();
}

async function start2() {
  S.assistants = (await apiJson("POST", "assistants/search", { limit: 100, offset: 0 })) || [];
  $("agent").replaceChildren(...S.assistants.map((a) => h("option", { value: a.assistant_id, text: a.name || a.graph_id })));
  const params = new URLSearchParams(location.hash.slice(1));
  const agent = params.get("agent") || localStorage.getItem("graph-agent:agent");
  await selectAgent(agent || (S.assistants[0] && S.assistants[0].assistant_id), params.get("thread"));
  document.body.dataset.ready = "true";
}

onResume((resume) => startRun({ command: { resume } }));
onInput(async (input) => {
  if (!S.threadId) await newThread();
  await startRun({ input });
});
onHistoryRun((body) => startRun(body), refreshThread);
document.addEventListener("DOMContentLoaded", guard(start));
