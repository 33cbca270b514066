// The graph-agent web page: chat with a served agent, approve its interrupts, watch each run
// as a timeline and the graph it runs. Plain JavaScript modules, no build step, no
// dependencies: it talks only to the server's public Agent Protocol endpoints (the ones
// langgraph-sdk uses).

import { $, h, enc, oneLine, errorText, textOf, notice } from "./dom.js";
import { S } from "./state.js";
import { ApiError, askToken, api, apiJson, follow } from "./api.js";
import { stream, renderMessages } from "./chat.js";
import { onResume, renderInterrupts } from "./approvals.js";
import { addTimeline } from "./timeline.js";
import { loadGraph } from "./graph.js";

const STREAM_MODES = ["messages-tuple", "values", "run_events"];
const RUNS_SHOWN = 20;

function handle(event, data, ctx) {
  const [mode, ...ns] = event.split("|");
  if (mode === "metadata") {
    ctx.runId = data && data.run_id;
    ctx.timeline.setRunId(ctx.runId);
  } else if (mode === "run_events") {
    ctx.timeline.add(data);
    if (ctx.live && !ns.length && S.graph) S.graph.track(data);
  } else if (mode === "error") {
    ctx.failed = true;
    ctx.timeline.fail(data);
    if (ctx.live) notice(`The run failed: ${errorText(data)}`);
  } else if (!ctx.live || ctx.threadId !== S.threadId) {
    // a replayed run: only its timeline is drawn; the chat comes from the thread's state
  } else if (mode === "values" && !ns.length) {
    S.messages = (data && data.messages) || [];
    S.streaming.clear();
    if (data && data.__interrupt__) S.interrupts = data.__interrupt__;
    renderMessages();
    renderInterrupts();
  } else if (mode === "messages" || mode.startsWith("messages/")) {
    const [message] = Array.isArray(data) ? data : [data];
    if (message) stream(message, ns);
  }
}

async function startRun(body) {
  const threadId = S.threadId;
  const assistant = S.assistant;
  if (!threadId || !assistant) return;
  const controller = new AbortController();
  S.running = { abort: controller, threadId };
  setBusy(true);
  notice(null);
  const timeline = addTimeline();
  const ctx = {
    threadId,
    runId: null,
    lastId: null,
    live: true,
    failed: false,
    status: "running",
    rejoins: 0,
    signal: controller.signal,
    timeline,
  };
  S.graph && S.graph.reset();
  try {
    const response = await api(
      "POST",
      `threads/${enc(threadId)}/runs/stream`,
      {
        assistant_id: assistant.assistant_id,
        stream_mode: STREAM_MODES,
        stream_subgraphs: true,
        stream_resumable: true,
        on_disconnect: "continue",
        ...body,
      },
      { headers: { Accept: "text/event-stream" }, signal: controller.signal },
    );
    await follow(response, ctx, handle);
  } catch (error) {
    if (!controller.signal.aborted) {
      notice(`Could not run the agent: ${error.detail || error.message}`);
      timeline.fail({ error: "request", message: error.detail || error.message });
    }
  } finally {
    if (S.running && S.running.abort === controller) S.running = null;
    S.graph && S.graph.settle();
    timeline.finish(ctx.failed ? "error" : ctx.status);
    if (!S.running) setBusy(false); // (another thread's run may be shown by now)
    if (S.threadId === threadId) await refreshThread();
  }
}

function setBusy(busy) {
  $("send").disabled = busy;
  $("input").disabled = busy;
  $("composer").classList.toggle("busy", busy);
  for (const button of document.querySelectorAll("#interrupts button")) button.disabled = busy;
}

// -- assistants and threads -------------------------------------------------------------

function threadsKey(graphId) {
  return `graph-agent:threads:${graphId}`;
}

function knownThreads(graphId) {
  try {
    return JSON.parse(localStorage.getItem(threadsKey(graphId)) || "[]");
  } catch (_) {
    return [];
  }
}

function rememberThread(graphId, thread) {
  const list = knownThreads(graphId).filter((t) => t.thread_id !== thread.thread_id);
  list.unshift(thread);
  localStorage.setItem(threadsKey(graphId), JSON.stringify(list.slice(0, 50)));
}

function forgetThread(graphId, threadId) {
  const list = knownThreads(graphId).filter((t) => t.thread_id !== threadId);
  localStorage.setItem(threadsKey(graphId), JSON.stringify(list));
}

function titleOf(messages) {
  const first = (messages || []).find((m) => m.type === "human");
  return first ? oneLine(textOf(first.content), 40) : "";
}

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

async function selectAgent(assistantId, threadId) {
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

async function newThread() {
  const assistant = S.assistant;
  const thread = await apiJson("POST", "threads", { metadata: { graph_id: assistant.graph_id } });
  rememberThread(assistant.graph_id, { thread_id: thread.thread_id, title: "" });
  S.threadId = thread.thread_id;
  fillThreads(knownThreads(assistant.graph_id).concat());
  showThread(thread.thread_id);
  return thread.thread_id;
}

function showThread(threadId) {
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
  const params = new URLSearchParams({ agent: S.assistant ? S.assistant.graph_id : "" });
  if (threadId) params.set("thread", threadId);
  history.replaceState(null, "", `#${params}`);
}

async function selectThread(threadId) {
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

function abortRunning() {
  if (S.running) {
    S.running.abort.abort(); // the run goes on on the server; coming back rejoins it
    S.running = null;
    setBusy(false);
  }
}

async function refreshThread() {
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
  const title = titleOf(S.messages);
  if (title && S.assistant) {
    rememberThread(S.assistant.graph_id, { thread_id: threadId, title });
    const option = [...$("thread").options].find((o) => o.value === threadId);
    if (option) option.textContent = `${title} · ${threadId.slice(0, 8)}`;
  }
}

// The thread's earlier runs, from their kept events (Last-Event-ID -1: from the start); a
// run still going on is joined live.
async function replayRuns(threadId) {
  let runs = [];
  try {
    runs = (await apiJson("GET", `threads/${enc(threadId)}/runs?limit=${RUNS_SHOWN}`)) || [];
  } catch (_) {
    return;
  }
  runs = runs.slice(0, RUNS_SHOWN).reverse();
  for (const run of runs) {
    if (S.threadId !== threadId) return;
    const live = ["pending", "running"].includes(run.status);
    const timeline = addTimeline(run.created_at);
    timeline.setRunId(run.run_id);
    const controller = new AbortController();
    const ctx = { threadId, runId: run.run_id, lastId: "-1", live, failed: false, status: run.status, rejoins: 0, signal: controller.signal, timeline };
    if (live) {
      S.running = { abort: controller, threadId };
      setBusy(true);
    }
    try {
      const response = await api("GET", `threads/${enc(threadId)}/runs/${enc(run.run_id)}/stream`, undefined, {
        headers: { Accept: "text/event-stream", "Last-Event-ID": "-1" },
        signal: controller.signal,
      });
      await follow(response, ctx, handle);
    } catch (_) {
      /* a run whose events are gone: its header is all there is */
    } finally {
      timeline.finish(ctx.failed ? "error" : live ? ctx.status : run.status);
      if (live) {
        if (S.running && S.running.abort === controller) S.running = null;
        if (!S.running) setBusy(false);
        if (S.threadId === threadId) await refreshThread();
      }
    }
  }
}

function setStatus(status) {
  const pill = $("thread-status");
  pill.hidden = !status;
  pill.textContent = status || "";
  pill.className = `pill ${status || ""}`;
}

// -- wiring -----------------------------------------------------------------------------

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
document.addEventListener("DOMContentLoaded", guard(start));
