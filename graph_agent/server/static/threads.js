// Picking an agent and a thread: the agent list, the thread list (every thread the server
// keeps, whoever made it, grouped by the graph that ran it; this browser's list of the
// threads it made is only a fallback when the server does not answer), a new thread, and
// switching to another one (its runs replayed, its agent selected).

import { $, h, notice } from "./dom.js";
import { S } from "./state.js";
import { apiJson } from "./api.js";
import { loadGraph } from "./graph.js";
import { abortRunning, replayRuns } from "./runs.js";
import { knownThreads, rememberThread, forgetThread, titleOf, showThread, refreshThread, threadLabel } from "./thread.js";

const THREADS_LISTED = 100;
const RELIST_MS = 15000; // how often the list is read again (threads made elsewhere)
const NO_GRAPH = ""; // a thread no run has used yet

let listed = []; // the threads in the list: {thread_id, title, graph_id, status, updated_at}

// A server's thread as the list shows it: its title (metadata's, else its first message),
// the graph that ran it, its status and when it last changed.
function entry(thread) {
  const metadata = thread.metadata || {};
  const title = metadata.title || metadata.name || titleOf(thread.values && thread.values.messages);
  return {
    thread_id: thread.thread_id,
    title: typeof title === "string" ? title : "",
    graph_id: metadata.graph_id || metadata.assistant_id || NO_GRAPH,
    status: thread.status || "",
    updated_at: thread.updated_at || thread.created_at || "",
  };
}

// Every thread the server keeps (POST /threads/search, the last changed first), after a
// restart too; those this browser made when the server does not answer.
async function listThreads() {
  try {
    const found = await apiJson("POST", "threads/search", { limit: THREADS_LISTED, offset: 0, sort_by: "updated_at", sort_order: "desc" });
    return (found || []).map(entry);
  } catch (_) {
    const graphId = S.assistant ? S.assistant.graph_id : NO_GRAPH;
    return knownThreads(graphId).map((t) => ({ ...t, graph_id: graphId, status: "", updated_at: "" }));
  }
}

function option(thread) {
  const about = [`thread ${thread.thread_id}`, thread.graph_id && `graph ${thread.graph_id}`, thread.status, thread.updated_at && `updated ${thread.updated_at}`];
  return h("option", {
    value: thread.thread_id,
    text: threadLabel(thread),
    title: about.filter(Boolean).join("\n"),
    dataset: { graph: thread.graph_id, status: thread.status },
  });
}

// The list, grouped by graph: the selected agent's threads first.
function fillThreads() {
  const select = $("thread");
  const mine = S.assistant ? S.assistant.graph_id : NO_GRAPH;
  const graphs = [...new Set(listed.map((t) => t.graph_id))].sort((a, b) => (b === mine) - (a === mine) || (a === NO_GRAPH) - (b === NO_GRAPH) || a.localeCompare(b));
  select.replaceChildren(
    ...graphs.map((graph) =>
      h("optgroup", { label: graph || "(not run yet)", dataset: { graph } }, listed.filter((t) => t.graph_id === graph).map(option)),
    ),
  );
  if (S.threadId && !listed.some((t) => t.thread_id === S.threadId)) select.prepend(option({ thread_id: S.threadId, title: "", graph_id: mine, status: "", updated_at: "" }));
  if (!select.options.length) select.append(h("option", { value: "", text: "(no thread yet)" }));
  select.value = S.threadId || "";
}

// The list read again (while it is not being picked from), every RELIST_MS and when the
// page is seen again: threads made elsewhere join it, statuses and titles change.
export function keepListed() {
  const relist = async () => {
    if (document.hidden || document.activeElement === $("thread")) return;
    const threads = await listThreads();
    if (document.activeElement === $("thread")) return;
    listed = threads;
    fillThreads();
  };
  const guarded = () => relist().catch(() => {});
  setInterval(guarded, RELIST_MS);
  document.addEventListener("visibilitychange", guarded);
}

function assistantOf(graphId) {
  return S.assistants.find((a) => a.assistant_id === graphId || a.graph_id === graphId);
}

function useAssistant(assistant) {
  S.assistant = assistant;
  $("agent").value = assistant.assistant_id;
  localStorage.setItem("graph-agent:agent", assistant.graph_id);
  $("graph-name").textContent = assistant.graph_id;
  loadGraph(assistant);
}

// `threadId`: the thread to show (else the agent's newest).
export async function selectAgent(assistantId, threadId) {
  const assistant = assistantOf(assistantId) || S.assistants[0];
  if (!assistant) return;
  abortRunning();
  useAssistant(assistant);
  listed = await listThreads();
  const wanted = threadId || (listed.find((t) => t.graph_id === assistant.graph_id) || {}).thread_id || null;
  S.threadId = null;
  fillThreads();
  if (wanted) await selectThread(wanted);
  else showThread(null);
}

export async function newThread() {
  const assistant = S.assistant;
  const thread = await apiJson("POST", "threads", { metadata: { graph_id: assistant.graph_id } });
  rememberThread(assistant.graph_id, { thread_id: thread.thread_id, title: "" });
  listed = [entry(thread), ...listed];
  S.threadId = thread.thread_id;
  fillThreads();
  showThread(thread.thread_id);
  await replayRuns(thread.thread_id); // (none yet: it watches for runs started elsewhere)
  return thread.thread_id;
}

// Shows the thread, with the agent that ran it.
export async function selectThread(threadId) {
  abortRunning();
  const known = listed.find((t) => t.thread_id === threadId);
  const assistant = known && known.graph_id && assistantOf(known.graph_id);
  if (assistant && assistant !== S.assistant) useAssistant(assistant);
  showThread(threadId);
  $("thread").value = threadId;
  try {
    await refreshThread();
  } catch (error) {
    if (error.status === 404) {
      forgetThread(S.assistant.graph_id, threadId);
      notice(`Thread ${threadId} is not on this server (any more).`, "info");
      listed = listed.filter((t) => t.thread_id !== threadId);
      S.threadId = null;
      fillThreads();
      showThread(null);
      return;
    }
    throw error;
  }
  await replayRuns(threadId);
}
