// Runs: one started from the page and streamed (messages, values, run_events) into the
// chat, the timeline and the graph, and stopped with Stop; the thread's earlier runs
// replayed from their kept events, and one still going on joined live.

import { $, enc, errorText, notice } from "./dom.js";
import { S } from "./state.js";
import { api, apiJson, follow } from "./api.js";
import { stream, renderMessages } from "./chat.js";
import { renderInterrupts } from "./approvals.js";
import { addTimeline } from "./timeline.js";
import { refreshThread } from "./thread.js";

const STREAM_MODES = ["messages-tuple", "values", "run_events"];
const RUNS_SHOWN = 20;

function handle(event, data, ctx) {
  const [mode, ...ns] = event.split("|");
  if (mode === "metadata") {
    ctx.runId = data && data.run_id;
    ctx.timeline.setRunId(ctx.runId);
    if (ctx.stopping && ctx.runId) cancel(ctx); // Stop was pressed before the run had its id
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

export async function startRun(body) {
  const threadId = S.threadId;
  const assistant = S.assistant;
  if (!threadId || !assistant) return;
  const controller = new AbortController();
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
  S.running = { abort: controller, threadId, ctx };
  setBusy(true);
  notice(null);
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
  $("stop").hidden = !busy;
  $("stop").disabled = false;
  $("composer").classList.toggle("busy", busy);
  for (const button of document.querySelectorAll("#interrupts button")) button.disabled = busy;
}

// Stop: the run being streamed is cancelled at once (`action=interrupt`: the thread keeps
// what the run did, and the part of an answer already streamed, marked cut); its stream
// then ends as any run's does, and the thread's state is read again. Pressed before the run
// has its id (the stream's first event), the cancel is sent when the id comes.
export async function stopRun() {
  const running = S.running;
  if (!running || running.ctx.stopping) return;
  running.ctx.stopping = true;
  $("stop").disabled = true;
  if (running.ctx.runId) await cancel(running.ctx);
}

async function cancel(ctx) {
  const path = `threads/${enc(ctx.threadId)}/runs/${enc(ctx.runId)}/cancel?action=interrupt`;
  await apiJson("POST", path).catch((error) => {
    $("stop").disabled = false;
    ctx.stopping = false;
    notice(`Could not stop the run: ${error.detail || error.message}`);
  });
}

export function abortRunning() {
  if (S.running) {
    S.running.abort.abort(); // the run goes on on the server; coming back rejoins it
    S.running = null;
    setBusy(false);
  }
}

// The thread's earlier runs, from their kept events (Last-Event-ID -1: from the start); a
// run still going on is joined live, and followed after this returns (until it ends or is
// stopped).
export async function replayRuns(threadId) {
  let runs = [];
  try {
    runs = (await apiJson("GET", `threads/${enc(threadId)}/runs?limit=${RUNS_SHOWN}`)) || [];
  } catch (_) {
    return;
  }
  runs = runs.slice(0, RUNS_SHOWN).reverse();
  for (const run of runs) {
    if (S.threadId !== threadId) return;
    const replayed = replayRun(threadId, run);
    if (!["pending", "running"].includes(run.status)) await replayed;
  }
}

async function replayRun(threadId, run) {
  const live = ["pending", "running"].includes(run.status);
  const timeline = addTimeline(run.created_at);
  timeline.setRunId(run.run_id);
  const controller = new AbortController();
  const ctx = { threadId, runId: run.run_id, lastId: "-1", live, failed: false, status: run.status, rejoins: 0, signal: controller.signal, timeline };
  if (live) {
    S.running = { abort: controller, threadId, ctx };
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
      if (S.threadId === threadId) await refreshThread().catch((error) => notice(`Could not read the thread: ${error.detail || error.message}`));
    }
  }
}
