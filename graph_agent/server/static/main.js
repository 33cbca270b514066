// The graph-agent web page: chat with a served agent, approve its interrupts, watch each run
// as a timeline and the graph it runs. Plain JavaScript modules, no build step, no
// dependencies: it talks only to the server's public Agent Protocol endpoints (the ones
// langgraph-sdk uses).

import { $, h, enc, pretty, oneLine, duration, errorText, textOf, notice, pill } from "./dom.js";
import { S } from "./state.js";
import { ApiError, askToken, api, apiJson, follow } from "./api.js";

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

function stream(message, ns) {
  const id = message.id || `anon-${S.streaming.size}`;
  let entry = S.streaming.get(id);
  if (!entry) {
    entry = { text: "", calls: new Map(), ns, complete: null };
    S.streaming.set(id, entry);
  }
  if (message.type === "AIMessageChunk") {
    entry.text += textOf(message.content);
    for (const call of message.tool_call_chunks || []) {
      // a call's later chunks may carry only its index (OpenAI's way), ours only its id
      const key = call.index !== null && call.index !== undefined ? `#${call.index}` : call.id || `#${entry.calls.size}`;
      const known = entry.calls.get(key) || { name: "", args: "" };
      entry.calls.set(key, { name: known.name || call.name || "", args: known.args + (call.args || "") });
    }
    S.deltas += 1;
  } else {
    entry.complete = message;
  }
  renderStreaming();
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

// -- the conversation -------------------------------------------------------------------

function nearBottom(box) {
  return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
}

function toolCallChip(name, args) {
  return h("div", { class: "tool-call" }, h("span", { class: "icon", text: "⚙" }), h("b", { text: name }), h("code", { text: oneLine(args, 200) }));
}

function messageView(message) {
  const type = message.type;
  const text = textOf(message.content);
  if (type === "tool") {
    const failed = message.status === "error";
    return h("div", { class: `msg tool${failed ? " failed" : ""}`, dataset: { id: message.id || "" } },
      h("span", { class: "who", text: `${message.name || "tool"} →` }),
      h("span", { class: "text", text }));
  }
  const role = type === "human" ? "user" : type === "ai" ? "assistant" : type;
  const calls = [...(message.tool_calls || []), ...(message.invalid_tool_calls || [])];
  return h("div", { class: `msg ${role}`, dataset: { id: message.id || "" } },
    h("span", { class: "who", text: role === "user" ? "You" : role === "assistant" ? message.name || (S.assistant && S.assistant.name) || "Agent" : role }),
    text ? h("div", { class: "text", text }) : null,
    calls.map((c) => toolCallChip(c.name, c.args)));
}

function renderMessages() {
  const box = $("messages");
  const stick = nearBottom(box);
  const views = S.messages.map(messageView);
  box.replaceChildren(...(views.length ? views : [h("p", { class: "empty", text: S.threadId ? "No messages yet." : "Pick an agent, then say something." })]));
  box.append(h("div", { id: "streaming" }));
  renderStreaming(stick);
}

function renderStreaming(stick) {
  const box = $("messages");
  const stickNow = stick === undefined ? nearBottom(box) : stick;
  let holder = $("streaming");
  if (!holder) {
    holder = h("div", { id: "streaming" });
    box.append(holder);
  }
  const views = [];
  for (const [id, entry] of S.streaming) {
    if (entry.complete) {
      const view = messageView(entry.complete);
      view.classList.add("streamed");
      views.push(view);
      continue;
    }
    const who = entry.ns.length ? entry.ns.map((n) => n.split(":")[0]).join(" › ") : S.assistant ? S.assistant.graph_id : "Agent";
    views.push(h("div", { class: "msg assistant streaming", dataset: { id } },
      h("span", { class: "who", text: who }),
      entry.text ? h("div", { class: "text", text: entry.text }) : null,
      [...entry.calls.values()].map((c) => toolCallChip(c.name, c.args)),
      h("span", { class: "cursor", text: "▍" })));
  }
  holder.replaceChildren(...views);
  if (stickNow) box.scrollTop = box.scrollHeight;
}

// -- interrupts -------------------------------------------------------------------------

function renderInterrupts() {
  const box = $("interrupts");
  const waiting = S.interrupts || [];
  box.hidden = !waiting.length;
  box.replaceChildren(...waiting.map(interruptView));
  if (S.running) for (const button of box.querySelectorAll("button")) button.disabled = true;
}

function interruptView(interrupt) {
  const value = interrupt.value;
  if (S.answers.has(interrupt.id)) {
    return h("div", { class: "interrupt answered", dataset: { id: interrupt.id } },
      h("p", { class: "muted", text: "Answered; waiting for your answers to the others." }));
  }
  if (value && value.type === "tool_approval" && Array.isArray(value.tool_calls)) {
    const decided = S.decisions.get(interrupt.id) || new Map();
    return h("div", { class: "interrupt", dataset: { id: interrupt.id } },
      h("h3", { text: value.tool_calls.length > 1 ? "These tool calls need your approval" : "This tool call needs your approval" }),
      value.tool_calls.map((call) => approvalCard(interrupt, call, decided.get(call.id))));
  }
  const answer = h("textarea", { class: "resume-value", rows: 3, "aria-label": "resume value", placeholder: "Your answer (JSON or text)" });
  return h("div", { class: "interrupt", dataset: { id: interrupt.id } },
    h("h3", { text: "The agent is waiting for you" }),
    h("pre", { class: "value", text: pretty(value) }),
    answer,
    h("div", { class: "buttons" },
      h("button", { type: "button", class: "primary resume", text: "Resume", onclick: () => {
        let parsed = answer.value;
        try {
          parsed = JSON.parse(answer.value);
        } catch (_) {
          /* plain text */
        }
        decide(interrupt, null, parsed);
      } })));
}

function approvalCard(interrupt, call, decision) {
  const args = h("textarea", { class: "arguments", rows: 3, "aria-label": `arguments of ${call.name}`, spellcheck: "false" });
  args.value = pretty(call.arguments === undefined ? {} : call.arguments);
  const reason = h("input", { class: "reason", type: "text", placeholder: "Reason (for a rejection)", "aria-label": "reason" });
  const error = h("p", { class: "card-error", hidden: true });
  const feedback = (kind) => {
    if (kind === "approved") return { tool_call_id: call.id, decision: "approved" };
    if (kind === "rejected") {
      const why = reason.value.trim();
      return why ? { tool_call_id: call.id, decision: "rejected", reason: why } : { tool_call_id: call.id, decision: "rejected" };
    }
    let parsed;
    try {
      parsed = JSON.parse(args.value);
    } catch (e) {
      error.hidden = false;
      error.textContent = `The arguments are not JSON: ${e.message}`;
      return null;
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      error.hidden = false;
      error.textContent = "The arguments must be a JSON object.";
      return null;
    }
    return { tool_call_id: call.id, decision: "edited", arguments: parsed };
  };
  const act = (kind) => () => {
    const value = feedback(kind);
    if (value) decide(interrupt, call, value);
  };
  return h("div", { class: `approval${decision ? " decided" : ""}`, dataset: { callId: call.id } },
    h("div", { class: "call" }, h("b", { text: call.name }), h("span", { class: "muted", text: call.id })),
    call.description ? h("p", { class: "description", text: call.description.split("\n")[0] }) : null,
    args,
    reason,
    error,
    decision
      ? h("p", { class: "decision", text: `${decision.decision}; waiting for the other calls` })
      : h("div", { class: "buttons" },
          h("button", { type: "button", class: "primary approve", text: "Approve", onclick: act("approved") }),
          h("button", { type: "button", class: "edit", text: "Approve edited", title: "Run the tool with the arguments above", onclick: act("edited") }),
          h("button", { type: "button", class: "danger reject", text: "Reject", onclick: act("rejected") })));
}

// A decision: a HumanInTheLoopHook pause takes one ToolFeedback as JSON ({tool_call_id,
// decision, reason | arguments}), or a list of them when several calls wait; several
// waiting interrupts are answered together, by interrupt id.
function decide(interrupt, call, value) {
  let answer = value;
  if (call) {
    const decided = S.decisions.get(interrupt.id) || new Map();
    decided.set(call.id, value);
    S.decisions.set(interrupt.id, decided);
    const calls = interrupt.value.tool_calls;
    if (decided.size < calls.length) {
      renderInterrupts();
      return;
    }
    answer = calls.length === 1 ? decided.get(calls[0].id) : calls.map((c) => decided.get(c.id));
  }
  S.decisions.delete(interrupt.id);
  S.answers.set(interrupt.id, answer);
  const waiting = S.interrupts;
  if (waiting.some((i) => !S.answers.has(i.id))) {
    renderInterrupts();
    return;
  }
  const resume = waiting.length === 1 ? answer : Object.fromEntries(waiting.map((i) => [i.id, S.answers.get(i.id)]));
  S.interrupts = [];
  S.decisions.clear();
  S.answers.clear();
  renderInterrupts();
  startRun({ command: { resume } });
}

// -- the timeline -----------------------------------------------------------------------

function addTimeline(createdAt) {
  const box = $("timeline");
  const empty = box.querySelector(".empty");
  if (empty) empty.remove();
  const timeline = new RunTimeline(S.runs.length + 1, createdAt);
  S.runs.push(timeline);
  box.append(timeline.root);
  box.scrollTop = box.scrollHeight;
  return timeline;
}

class RunTimeline {
  constructor(number, createdAt) {
    this.rows = new Map(); // key -> row ({li, children, ...})
    this.claimed = new Set(); // rows a sub-namespace was matched to
    this.errors = new Set(); // the run's errors shown
    this.t0 = null;
    this.status = pill("running");
    this.took = h("span", { class: "took" });
    this.runId = h("span", { class: "run-id muted" });
    const when = createdAt ? new Date(createdAt) : new Date();
    this.list = h("ol", { class: "rows" });
    this.root = h("section", { class: "run" },
      h("header", {}, h("b", { text: `Run ${number}` }), h("span", { class: "muted", text: when.toLocaleTimeString() }), this.status, this.took, this.runId),
      this.list);
  }

  setRunId(runId) {
    this.runId.textContent = runId ? runId.slice(0, 8) : "";
    this.root.dataset.runId = runId || "";
  }

  setStatus(text) {
    this.status.textContent = text;
    this.status.className = `pill ${text}`;
  }

  finish(status) {
    if (this.status.textContent === "running") this.setStatus(status === "running" ? "stopped" : status || "done");
    this.root.classList.remove("live");
    for (const row of this.rows.values()) if (row.li.classList.contains("open")) row.li.classList.replace("open", "unfinished");
  }

  fail(error) {
    this.setStatus("error");
    const text = errorText(error);
    if (this.errors.has(text)) return; // the run's error comes as a run event and as `error`
    this.errors.add(text);
    this.list.append(h("li", { class: "row error" }, h("div", { class: "line" }, h("span", { class: "icon", text: "✖" }), h("span", { class: "label", text }))));
  }

  note(text) {
    this.list.append(h("li", { class: "row note" }, h("div", { class: "line" }, h("span", { class: "muted", text }))));
  }

  row(kind, parent, key, label, extra) {
    const line = h("div", { class: "line" }, h("span", { class: "icon", text: ICONS[kind] || "•" }), h("span", { class: "label", text: label }), extra || null);
    const meta = h("span", { class: "meta" });
    line.append(meta);
    const detail = h("div", { class: "detail" });
    const children = h("ol", { class: "rows" });
    const after = h("div", { class: "detail after" }); // what comes once the nested rows ended
    const li = h("li", { class: `row ${kind} open` }, line, detail, children, after);
    line.addEventListener("click", () => li.classList.toggle("collapsed"));
    parent.append(li);
    const row = { li, line, meta, detail, children, after, kind, key };
    if (key) this.rows.set(key, row);
    return row;
  }

  // The list the events of namespace `ns` go in: the node row a flow's sub-agent runs in
  // ("node:task_id"), else the running call of the tool that runs the sub-agent
  // ("tool:..."), else a row of its own.
  container(ns) {
    if (!ns.length) return this.list;
    const key = ns.join("|");
    const known = this.rows.get(key);
    if (known) return known.children;
    const segment = ns[ns.length - 1];
    const name = segment.includes(":") ? segment.slice(0, segment.lastIndexOf(":")) : segment;
    const parentKey = ns.slice(0, -1).join("|");
    const candidates = [...this.rows.values()].filter((r) => r.parentKey === parentKey && !this.claimed.has(r) && r.li.classList.contains("open"));
    const found =
      candidates.filter((r) => r.kind === "tool" && r.name === name).pop() ||
      candidates.filter((r) => r.kind === "node" && r.name === name).pop();
    if (found) {
      this.claimed.add(found);
      this.rows.set(key, found);
      found.li.classList.add("has-sub");
      return found.children;
    }
    const group = this.row("sub", this.container(ns.slice(0, -1)), key, name);
    group.parentKey = parentKey;
    group.name = name;
    return group.children;
  }

  nodeRow(ns, node, taskId) {
    return this.rows.get([...ns, `${node}:${taskId}`].join("|"));
  }

  add(ev) {
    if (!ev || !ev.kind) return;
    const ns = ev.namespace || [];
    const nsKey = ns.join("|");
    if (this.t0 === null && ev.time) this.t0 = ev.time;
    const parentOf = () => {
      const node = ev.node && ev.task_id ? this.nodeRow(ns, ev.node, ev.task_id) : null;
      return node ? node.children : this.container(ns);
    };
    switch (ev.kind) {
      case "run_start":
        if (ns.length) {
          // an agent called as a tool nests under that call's row (found by its id)
          const call = ev.call_id ? this.rows.get(`tool|${ns.slice(0, -1).join("|")}|${ev.call_id}`) : null;
          if (call && !this.rows.has(nsKey)) {
            this.claimed.add(call);
            call.li.classList.add("has-sub");
            this.rows.set(nsKey, call);
          }
          this.container(ns);
          const row = this.rows.get(nsKey);
          if (row && ev.graph && ev.graph !== row.name) {
            row.line.querySelector(".label").append(h("span", { class: "muted", text: ` → ${ev.graph}` }));
          }
        } else {
          this.root.classList.add("live");
          if (ev.input && typeof ev.input === "object" && "resume" in ev.input) {
            const row = this.row("resume", this.list, null, `resumed with ${oneLine(ev.input.resume, 140)}`);
            row.li.classList.remove("open");
          }
        }
        break;
      case "node_start": {
        const row = this.row("node", this.container(ns), [...ns, `${ev.node}:${ev.task_id}`].join("|"), ev.node);
        Object.assign(row, { name: ev.node, parentKey: nsKey, start: ev.time });
        break;
      }
      case "node_end":
      case "node_error": {
        const row = this.nodeRow(ns, ev.node, ev.task_id);
        if (!row) break;
        row.li.classList.remove("open");
        if (ev.kind === "node_error") {
          row.li.classList.add("failed");
          row.detail.append(h("pre", { class: "error", text: `${errorText(ev.error)}${ev.attempt > 1 ? ` (attempt ${ev.attempt})` : ""}` }));
        }
        row.meta.append(h("span", { class: "dur", text: duration(ev.time - row.start) }));
        break;
      }
      case "model_start": {
        const row = this.row("model", parentOf(), `model|${nsKey}|${ev.task_id}`, ev.model || "model");
        Object.assign(row, { start: ev.time, chunks: 0, parentKey: nsKey, name: ev.model });
        row.meta.append(h("span", { class: "muted", text: `${(ev.messages || []).length} messages in` }));
        break;
      }
      case "model_delta": {
        const row = this.rows.get(`model|${nsKey}|${ev.task_id}`);
        if (row) row.chunks += 1;
        break;
      }
      case "model_end": {
        const row = this.rows.get(`model|${nsKey}|${ev.task_id}`) || this.row("model", parentOf(), null, ev.model || "model");
        row.li.classList.remove("open");
        row.meta.replaceChildren();
        const usage = ev.usage || (ev.message && ev.message.usage_metadata && {
          prompt_tokens: ev.message.usage_metadata.input_tokens,
          completion_tokens: ev.message.usage_metadata.output_tokens,
        });
        if (usage) row.meta.append(h("span", { class: "tokens", text: `${usage.prompt_tokens ?? "?"} in / ${usage.completion_tokens ?? "?"} out tokens` }));
        row.meta.append(h("span", { class: "dur", text: duration(ev.duration) }));
        if (ev.error) {
          row.li.classList.add("failed");
          row.detail.append(h("pre", { class: "error", text: errorText(ev.error) }));
        } else if (ev.message) {
          const said = textOf(ev.message.content);
          const calls = ev.message.tool_calls || [];
          if (said) row.detail.append(h("div", { class: "said", text: oneLine(said, 300) }));
          if (calls.length) row.detail.append(h("div", { class: "said muted", text: `asks for ${calls.map((c) => c.name).join(", ")}` }));
        }
        // a new model call of the same task gets a row of its own
        this.rows.delete(`model|${nsKey}|${ev.task_id}`);
        break;
      }
      case "tool_start": {
        const row = this.row("tool", parentOf(), `tool|${nsKey}|${ev.call_id}`, ev.name);
        Object.assign(row, { name: ev.name, parentKey: nsKey, start: ev.time });
        row.detail.append(h("div", { class: "kv" }, h("span", { class: "k", text: "arguments" }), h("pre", { class: "args", text: pretty(ev.arguments || "{}") })));
        break;
      }
      case "tool_end": {
        const row = this.rows.get(`tool|${nsKey}|${ev.call_id}`) || this.row("tool", parentOf(), null, ev.name);
        row.li.classList.remove("open");
        row.meta.append(h("span", { class: "dur", text: duration(ev.duration) }));
        if (ev.error) {
          row.li.classList.add("failed");
          row.after.append(h("div", { class: "kv" }, h("span", { class: "k", text: "error" }), h("pre", { class: "error", text: errorText(ev.error) })));
        } else {
          row.after.append(h("div", { class: "kv" }, h("span", { class: "k", text: ev.return_direct ? "result (returned directly)" : "result" }), h("pre", { class: "result", text: pretty(ev.result ?? "") })));
        }
        break;
      }
      case "interrupt": {
        const interrupt = ev.interrupt || {};
        const value = interrupt.value;
        let label = "waiting for a person";
        if (value && value.type === "tool_approval") label = `approval needed: ${(value.tool_calls || []).map((c) => c.name).join(", ")}`;
        else if (interrupt.when && interrupt.when !== "during") label = `paused ${interrupt.when} ${interrupt.node}`;
        const node = interrupt.node ? [...this.rows.values()].filter((r) => r.kind === "node" && r.parentKey === nsKey && r.name === interrupt.node).pop() : null;
        if (node) node.li.classList.replace("open", "paused");
        const row = this.row("interrupt", node ? node.children : this.container(ns), null, label);
        row.li.classList.remove("open");
        if (value && value.type === "tool_approval") {
          const calls = (value.tool_calls || []).map((c) => `${c.name} ${oneLine(c.arguments === undefined ? {} : c.arguments, 160)}`);
          row.detail.append(h("pre", { class: "args", text: calls.join("\n") }));
        } else if (value !== undefined && value !== null) {
          row.detail.append(h("pre", { text: pretty(value) }));
        }
        if (!ns.length) this.setStatus("paused");
        break;
      }
      case "custom": {
        const row = this.row("custom", parentOf(), null, "custom");
        row.li.classList.remove("open");
        row.detail.append(h("pre", { text: pretty(ev.data) }));
        break;
      }
      case "run_end":
        if (!ns.length) {
          if (ev.time && this.t0 !== null) this.took.textContent = duration(ev.time - this.t0);
          this.setStatus((ev.interrupts || []).length ? "paused" : "done");
        } else {
          const row = this.rows.get(nsKey);
          if (row && row.kind === "sub") row.li.classList.remove("open");
        }
        break;
      case "run_error":
        if (!ns.length) {
          if (ev.time && this.t0 !== null) this.took.textContent = duration(ev.time - this.t0);
          this.fail(ev.error);
        }
        break;
      default:
        break;
    }
  }
}

const ICONS = { resume: "▶", node: "▣", model: "✦", tool: "⚙", interrupt: "‖", custom: "✎", sub: "↳", error: "✖" };
// -- the graph --------------------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";

function s(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

async function loadGraph(assistant) {
  const box = $("graph");
  box.replaceChildren(h("p", { class: "muted", text: "loading…" }));
  try {
    const graph = await apiJson("GET", `assistants/${enc(assistant.assistant_id)}/graph`);
    if (S.assistant !== assistant) return;
    S.graph = new GraphView(graph);
    box.replaceChildren(S.graph.svg);
  } catch (error) {
    S.graph = null;
    box.replaceChildren(h("p", { class: "muted", text: `no drawing: ${error.detail || error.message}` }));
  }
}

class GraphView {
  constructor(graph) {
    this.boxes = new Map();
    const ids = graph.nodes.map((n) => n.id);
    const out = new Map(ids.map((id) => [id, []]));
    for (const e of graph.edges) if (out.has(e.source)) out.get(e.source).push(e.target);
    // ranks: shortest distance from __start__; __end__ below everything
    const rank = new Map();
    const start = ids.includes("__start__") ? "__start__" : ids[0];
    const queue = [start];
    rank.set(start, 0);
    while (queue.length) {
      const id = queue.shift();
      for (const next of out.get(id) || []) {
        if (!rank.has(next) && next !== "__end__") {
          rank.set(next, rank.get(id) + 1);
          queue.push(next);
        }
      }
    }
    let deepest = Math.max(0, ...rank.values());
    for (const id of ids) if (!rank.has(id) && id !== "__end__") rank.set(id, ++deepest);
    if (ids.includes("__end__")) rank.set("__end__", deepest + 1);
    const rows = [];
    for (const id of ids) (rows[rank.get(id)] = rows[rank.get(id)] || []).push(id);
    const label = (id) => (id === "__start__" ? "start" : id === "__end__" ? "end" : id);
    const width = (id) => Math.max(id.startsWith("__") ? 56 : 84, label(id).length * 7.2 + 26);
    const H = 28;
    const GAP_X = 22;
    const GAP_Y = 38;
    const rowWidths = rows.map((r) => (r || []).reduce((w, id) => w + width(id), 0) + GAP_X * Math.max(0, (r || []).length - 1));
    const W = Math.max(240, ...rowWidths) + 160;
    rows.forEach((r, i) => {
      let x = (W - rowWidths[i]) / 2;
      for (const id of r || []) {
        this.boxes.set(id, { id, x, y: 16 + i * (H + GAP_Y), w: width(id), h: H });
        x += width(id) + GAP_X;
      }
    });
    const height = 16 + rows.length * (H + GAP_Y) - GAP_Y + 16;
    this.svg = s("svg", { viewBox: `0 0 ${W} ${height}`, width: W, height, role: "img", "aria-label": "the agent's graph", class: "graph-svg" });
    const defs = s("defs", {},
      s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" })));
    this.svg.append(defs);
    const edges = s("g", { class: "edges" });
    let loop = 0;
    let lefts = 0;
    for (const e of graph.edges) {
      const a = this.boxes.get(e.source);
      const b = this.boxes.get(e.target);
      if (!a || !b) continue;
      let d;
      let lx;
      let ly;
      const skip = rank.get(e.target) - rank.get(e.source);
      if (skip > 1) {
        // over a rank or more: around the left of the boxes in between
        lefts += 1;
        const between = [...this.boxes.values()].filter((box) => {
          const r = rank.get(box.id);
          return r > rank.get(e.source) && r < rank.get(e.target);
        });
        const xl = Math.min(a.x, b.x, ...between.map((box) => box.x)) - 18 - 12 * lefts;
        const x1 = a.x + Math.min(14, a.w / 4);
        const y1 = a.y + a.h;
        const x2 = b.x + Math.min(14, b.w / 4);
        const y2 = b.y;
        d = `M ${x1} ${y1} C ${xl} ${y1 + 40}, ${xl} ${y2 - 40}, ${x2} ${y2}`;
        lx = xl + 6;
        ly = (y1 + y2) / 2;
      } else if (skip > 0) {
        const x1 = a.x + a.w / 2;
        const y1 = a.y + a.h;
        const x2 = b.x + b.w / 2;
        const y2 = b.y;
        const my = (y1 + y2) / 2;
        d = `M ${x1} ${y1} C ${x1} ${my}, ${x2} ${my}, ${x2} ${y2}`;
        lx = (x1 + x2) / 2;
        ly = my;
      } else {
        // back (or sideways) edge: around the right of both boxes
        loop += 1;
        const x1 = a.x + a.w;
        const y1 = a.y + a.h / 2;
        const x2 = b.x + b.w;
        const y2 = b.y + b.h / 2;
        const out = Math.max(x1, x2) + 26 + 14 * loop;
        d = `M ${x1} ${y1} C ${out} ${y1}, ${out} ${y2}, ${x2} ${y2}`;
        lx = out - 4;
        ly = (y1 + y2) / 2;
      }
      edges.append(s("path", { d, class: `edge${e.conditional ? " conditional" : ""}`, "marker-end": "url(#arrow)" }));
      if (e.data && e.data !== e.target && !(e.data === "end" && e.target === "__end__")) {
        const text = s("text", { x: lx, y: ly - 3, class: "edge-label", "text-anchor": "middle" });
        text.textContent = e.data;
        edges.append(text);
      }
    }
    this.svg.append(edges);
    const nodes = s("g", { class: "nodes" });
    for (const box of this.boxes.values()) {
      const special = box.id.startsWith("__");
      const g = s("g", { class: `node${special ? " terminal" : ""}`, "data-node": box.id });
      g.append(s("rect", { x: box.x, y: box.y, width: box.w, height: box.h, rx: special ? 15 : 6 }));
      const text = s("text", { x: box.x + box.w / 2, y: box.y + box.h / 2 + 4, "text-anchor": "middle" });
      text.textContent = label(box.id);
      g.append(text);
      const title = s("title");
      title.textContent = box.id;
      g.append(title);
      nodes.append(g);
      box.g = g;
    }
    this.svg.append(nodes);
  }

  reset() {
    for (const box of this.boxes.values()) box.g.classList.remove("active", "visited");
  }

  track(ev) {
    const box = ev.node && this.boxes.get(ev.node);
    if (ev.kind === "run_start") {
      this.reset();
      this.boxes.get("__start__")?.g.classList.add("visited");
    } else if (ev.kind === "node_start" && box) {
      box.g.classList.add("active");
    } else if ((ev.kind === "node_end" || ev.kind === "node_error") && box) {
      box.g.classList.remove("active");
      box.g.classList.add("visited");
    } else if (ev.kind === "run_end" && !(ev.interrupts || []).length) {
      this.boxes.get("__end__")?.g.classList.add("visited");
    }
  }

  settle() {
    for (const box of this.boxes.values()) box.g.classList.remove("active");
  }
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

document.addEventListener("DOMContentLoaded", guard(start));
