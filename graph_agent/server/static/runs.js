// Runs: one started from the page and streamed (messages, values, run_events) into the
// chat, the timeline and the graph; the thread's earlier runs replayed from their kept
// events, and one still going on joined live.

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

export function abortRunning() {
  if (S.running) {
    S.running.abort.abort(); // the run goes on on the server; coming back rejoins it
    S.running = null;
    setBusy(false);
  }
}

// The thread's earlier runs, from their kept events (Last-Event-ID -1: from the start); a
// run still going on is joined live.
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
