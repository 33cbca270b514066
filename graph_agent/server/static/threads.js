// Picking an agent and a thread: the agent list, the thread list (the server's and this
// browser's), a new thread, and switching to another one (its runs replayed).

import { $, h, notice } from "./dom.js";
import { S } from "./state.js";
import { apiJson } from "./api.js";
import { loadGraph } from "./graph.js";
import { abortRunning, replayRuns } from "./runs.js";
import { knownThreads, rememberThread, forgetThread, titleOf, showThread, refreshThread } from "./thread.js";

// The threads of an agent: the server's (POST /threads/search, when it answers) and the
// ones this browser made.
async function listThreads(graphId) {
  const mine = knownThreads(graphId);
  let found = [];
  try {
    found = await apiJson("POST", "threads/search", { metadata: { graph_id: graphId }, limit: 50, offset: 0 });
  } catch (_) {
    found = [];
  }
  const byId = new Map(mine.map((t) => [t.thread_id, t]));
  for (const thread of found || []) {
    const title = titleOf(thread.values && thread.values.messages);
    byId.set(thread.thread_id, { ...(byId.get(thread.thread_id) || {}), thread_id: thread.thread_id, title: title || (byId.get(thread.thread_id) || {}).title || "" });
  }
  return [...byId.values()];
}

function fillThreads(threads) {
  const select = $("thread");
  select.replaceChildren(
    ...threads.map((t) => h("option", { value: t.thread_id, text: t.title ? `${t.title} · ${t.thread_id.slice(0, 8)}` : t.thread_id })),
  );
  if (!threads.length) select.append(h("option", { value: "", text: "(no thread yet)" }));
  select.value = S.threadId || "";
}

export async function selectAgent(assistantId, threadId) {
  const assistant = S.assistants.find((a) => a.assistant_id === assistantId || a.graph_id === assistantId) || S.assistants[0];
  if (!assistant) return;
  abortRunning();
  S.assistant = assistant;
  $("agent").value = assistant.assistant_id;
  localStorage.setItem("graph-agent:agent", assistant.graph_id);
  $("graph-name").textContent = assistant.graph_id;
  loadGraph(assistant);
  const threads = await listThreads(assistant.graph_id);
  const wanted = threadId || (threads[0] && threads[0].thread_id) || null;
  S.threadId = null;
  fillThreads(threads);
  if (wanted) await selectThread(wanted);
  else showThread(null);
}

export async function newThread() {
  const assistant = S.assistant;
  const thread = await apiJson("POST", "threads", { metadata: { graph_id: assistant.graph_id } });
  rememberThread(assistant.graph_id, { thread_id: thread.thread_id, title: "" });
  S.threadId = thread.thread_id;
  fillThreads(knownThreads(assistant.graph_id).concat());
  showThread(thread.thread_id);
  return thread.thread_id;
}

export async function selectThread(threadId) {
  abortRunning();
  showThread(threadId);
  $("thread").value = threadId;
  try {
    await refreshThread();
  } catch (error) {
    if (error.status === 404) {
      forgetThread(S.assistant.graph_id, threadId);
      notice(`Thread ${threadId} is not on this server (any more).`, "info");
      fillThreads(knownThreads(S.assistant.graph_id));
      showThread(null);
      return;
    }
    throw error;
  }
  await replayRuns(threadId);
}
