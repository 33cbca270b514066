// The thread shown: its state read from the server (messages, or any values as a tree;
// waiting interrupts, status) and drawn, with its checkpoints; and the threads this browser
// made, kept in its local storage.

import { $, h, enc, notice, oneLine, textOf } from "./dom.js";
import { S } from "./state.js";
import { apiJson } from "./api.js";
import { renderMessages } from "./chat.js";
import { renderInterrupts } from "./approvals.js";
import { showMode } from "./form.js";
import { clearHistory, loadHistory } from "./history.js";

function threadsKey(graphId) {
  return `graph-agent:threads:${graphId}`;
}

export function knownThreads(graphId) {
  try {
    return JSON.parse(localStorage.getItem(threadsKey(graphId)) || "[]");
  } catch (_) {
    return [];
  }
}

export function rememberThread(graphId, thread) {
  const list = knownThreads(graphId).filter((t) => t.thread_id !== thread.thread_id);
  list.unshift(thread);
  localStorage.setItem(threadsKey(graphId), JSON.stringify(list.slice(0, 50)));
}

export function forgetThread(graphId, threadId) {
  const list = knownThreads(graphId).filter((t) => t.thread_id !== threadId);
  localStorage.setItem(threadsKey(graphId), JSON.stringify(list));
}

export function titleOf(messages) {
  const first = (messages || []).find((m) => m.type === "human");
  return first ? oneLine(textOf(first.content), 40) : "";
}

function ago(when) {
  const time = Date.parse(when);
  if (!isFinite(time)) return "";
  const seconds = Math.max(0, (Date.now() - time) / 1000);
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return new Date(time).toLocaleDateString();
}

// A thread as the thread list names it: its title (else its id's start), status and age.
export function threadLabel(thread) {
  return [thread.title || thread.thread_id.slice(0, 8), thread.status, ago(thread.updated_at)].filter(Boolean).join(" · ");
}

export function showThread(threadId) {
  S.threadId = threadId;
  S.messages = [];
  S.streaming.clear();
  S.interrupts = [];
  S.decisions.clear();
  S.answers.clear();
  S.runs = [];
  $("timeline").replaceChildren(h("p", { class: "empty", text: "Each run's nodes, model calls and tool calls show here." }));
  renderMessages();
  renderInterrupts();
  setStatus(null);
  clearHistory();
  showMode(null).catch(() => {});
  const params = new URLSearchParams({ agent: S.assistant ? S.assistant.graph_id : "" });
  if (threadId) params.set("thread", threadId);
  history.replaceState(null, "", `#${params}`);
}

export async function refreshThread() {
  const threadId = S.threadId;
  if (!threadId) return;
  const [thread, state] = await Promise.all([
    apiJson("GET", `threads/${enc(threadId)}`),
    apiJson("GET", `threads/${enc(threadId)}/state`),
  ]);
  if (S.threadId !== threadId) return;
  S.messages = (state.values && state.values.messages) || [];
  S.streaming.clear();
  S.interrupts = state.interrupts || [];
  for (const table of [S.decisions, S.answers]) {
    for (const id of [...table.keys()]) if (!S.interrupts.some((i) => i.id === id)) table.delete(id);
  }
  setStatus(thread.status);
  renderMessages();
  renderInterrupts();
  await showMode(state.values || null);
  loadHistory(threadId).catch((error) => notice(`Could not read the thread's checkpoints: ${error.detail || error.message}`));
  const title = titleOf(S.messages);
  if (title && S.assistant) {
    rememberThread(S.assistant.graph_id, { thread_id: threadId, title });
    const option = [...$("thread").options].find((o) => o.value === threadId);
    if (option) option.textContent = threadLabel({ ...thread, title: (thread.metadata && thread.metadata.title) || title });
  }
}

// The thread's status pill (`busy` while a run of it is followed).
export function setStatus(status) {
  const pill = $("thread-status");
  pill.hidden = !status;
  pill.textContent = status || "";
  pill.className = `pill ${status || ""}`;
}
