// Runs: one started from the page and streamed (messages, values, run_events) into the
// chat, the timeline and the graph, and stopped with Stop; every run of the thread, whoever
// started it (the page, langgraph-sdk, agent-chat-ui, another process), read back in
// `run_events` (every run's log keeps them, whatever its client streamed), one still going
// on joined live, and one started elsewhere while the thread is shown found and followed.

import { $, enc, errorText, notice } from "./dom.js";
import { S } from "./state.js";
import { api, apiJson, follow } from "./api.js";
import { stream, renderMessages } from "./chat.js";
import { renderInterrupts } from "./approvals.js";
import { addTimeline } from "./timeline.js";
import { refreshThread, setStatus } from "./thread.js";

const STREAM_MODES = ["messages-tuple", "values", "run_events"];
const RUNS_SHOWN = 20;
const LIVE = ["pending", "running"];
const POLL_MS = 1000; // how often the thread shown is asked for runs started elsewhere

const shown = new Set(); // the ids of the runs of the thread shown that have a card
let watchGeneration = 0;

function handle(event, data, ctx) {
  const [mode, ...ns] = event.split("|");
  if (mode === "metadata") {
    ctx.runId = data && data.run_id;
    if (ctx.runId) shown.add(ctx.runId);
    ctx.timeline.setRunId(ctx.runId);
    if (ctx.stopping && ctx.runId) cancel(ctx); // Stop was pressed before the run had its id
  } else if (mode === "run_events") {
    ctx.timeline.add(data);
    if (ctx.live && !ns.length && S.graph) S.graph.track(data);
    if (ctx.live && ctx.chatFromEvents && ctx.threadId === S.threadId) chatFromEvent(data, ctx);
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
  if (busy) setStatus("busy");
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

// A live run read in `run_events` only (one that kept no state: its client streamed none):
// the answer streams into the chat from its model's deltas, and the thread's state is read
// again at each of its checkpoints.
function chatFromEvent(ev, ctx) {
  const ns = ev.namespace || [];
  const call = `${ns.join("|")}|${ev.task_id}`;
  if (ev.kind === "model_start") {
    ctx.modelCalls.set(call, (ctx.modelCalls.get(call) || 0) + 1);
  } else if (ev.kind === "model_delta" && ev.text) {
    const id = `${ctx.runId}|${call}|${ctx.modelCalls.get(call) || 0}`;
    stream({ type: "AIMessageChunk", id, content: ev.text }, ns);
  } else if (ev.kind === "checkpoint" && !ns.length) {
    const done = new Set(S.streaming.keys()); // the answers streamed before this step was stored
    ctx.refreshing = ctx.refreshing.then(() => chatAt(ctx.threadId, done)).catch(() => {});
  }
}

// The thread's messages read again; the bubbles of the answers in them go (not those of an
// answer streaming since).
async function chatAt(threadId, done) {
  const state = await apiJson("GET", `threads/${enc(threadId)}/state`);
  if (S.threadId !== threadId || !state) return;
  S.messages = (state.values && state.values.messages) || [];
  for (const id of done) S.streaming.delete(id);
  renderMessages();
}

// Every run of the thread (the newest RUNS_SHOWN), oldest first, each from its kept events
// (Last-Event-ID -1: from the start); a run still going on is joined live, and followed after
// this returns (until it ends or is stopped). Then the thread is watched for runs started
// elsewhere (see watch).
export async function replayRuns(threadId) {
  shown.clear();
  let runs = [];
  try {
    runs = (await apiJson("GET", `threads/${enc(threadId)}/runs?limit=${RUNS_SHOWN}`)) || [];
  } catch (_) {
    return;
  }
  runs = runs.slice(0, RUNS_SHOWN).reverse();
  if (S.threadId !== threadId) return;
  for (const run of runs) shown.add(run.run_id);
  // read side by side (each card is placed at once, in order); the live ones not waited for
  const replays = runs.map((run) => [run, replayRun(threadId, run)]);
  await Promise.all(replays.filter(([run]) => !LIVE.includes(run.status)).map(([, replayed]) => replayed));
  if (S.threadId === threadId) watch(threadId);
}

// Asks for the thread's runs every POLL_MS while it is shown (and seen) and no run is followed: a run
// started elsewhere (langgraph-sdk, another tab) gets its card, and is joined if it goes on.
function watch(threadId) {
  const generation = ++watchGeneration;
  const tick = async () => {
    if (generation !== watchGeneration || S.threadId !== threadId) return;
    if (!S.running && !document.hidden) await pickUpRuns(threadId).catch(() => {});
    setTimeout(tick, POLL_MS);
  };
  setTimeout(tick, POLL_MS);
}

async function pickUpRuns(threadId) {
  const runs = (await apiJson("GET", `threads/${enc(threadId)}/runs?limit=10`)) || [];
  const fresh = runs.filter((r) => !shown.has(r.run_id)).reverse();
  let ended = false;
  for (const run of fresh) {
    if (S.threadId !== threadId || S.running) break;
    shown.add(run.run_id);
    const replayed = replayRun(threadId, run);
    if (LIVE.includes(run.status)) break; // followed now; the next are picked up after it
    await replayed;
    ended = true;
  }
  if (ended && S.threadId === threadId && !S.running) await refreshThread();
}

// A live run is read in the modes that draw the chat too when it kept the thread's state
// (its client streamed some), else in `run_events` only (a 422 says so); a finished one in
// `run_events`, which any run can be read in. Sub-agents' events come with them.
async function joinRun(ctx) {
  const path = `threads/${enc(ctx.threadId)}/runs/${enc(ctx.runId)}/stream`;
  const tries = ctx.live ? [STREAM_MODES, ["run_events"]] : [["run_events"]];
  for (const [i, modes] of tries.entries()) {
    const query = new URLSearchParams(modes.map((m) => ["stream_mode", m]));
    query.set("stream_subgraphs", "true");
    ctx.query = `?${query}`;
    ctx.chatFromEvents = !modes.includes("values");
    try {
      return await api("GET", path + ctx.query, undefined, {
        headers: { Accept: "text/event-stream", "Last-Event-ID": "-1" },
        signal: ctx.signal,
      });
    } catch (error) {
      if (error.status !== 422 || i === tries.length - 1) throw error;
    }
  }
}

// How a run was started, unless as this page starts its runs.
function via(run) {
  const asked = run.kwargs ? run.kwargs.stream_mode : undefined;
  if (Array.isArray(asked) && !asked.length) return "waited";
  const modes = asked === undefined || asked === null ? ["values"] : [].concat(asked);
  return modes.length === STREAM_MODES.length && STREAM_MODES.every((m) => modes.includes(m)) ? "" : modes.join(", ");
}

async function replayRun(threadId, run) {
  const live = LIVE.includes(run.status);
  const timeline = addTimeline(run.created_at);
  timeline.setRunId(run.run_id);
  timeline.setVia(via(run));
  const controller = new AbortController();
  const ctx = {
    threadId,
    runId: run.run_id,
    lastId: "-1",
    live,
    failed: false,
    status: run.status,
    rejoins: 0,
    signal: controller.signal,
    timeline,
    modelCalls: new Map(),
    refreshing: Promise.resolve(),
  };
  if (live) {
    S.running = { abort: controller, threadId, ctx };
    setBusy(true);
  }
  try {
    await follow(await joinRun(ctx), ctx, handle);
  } catch (error) {
    if (!controller.signal.aborted) timeline.note(`its events could not be read: ${error.detail || error.message}`);
  } finally {
    timeline.finish(ctx.failed ? "error" : live ? ctx.status : run.status);
    if (live) {
      if (S.running && S.running.abort === controller) S.running = null;
      if (!S.running) setBusy(false);
      await ctx.refreshing;
      if (S.threadId === threadId) await refreshThread().catch((error) => notice(`Could not read the thread: ${error.detail || error.message}`));
    }
  }
}
