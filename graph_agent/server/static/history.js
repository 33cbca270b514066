// Time travel: the thread's checkpoints as a list (GET /threads/{id}/checkpoints, newest
// first: step, the nodes that wrote it, what runs next, when, the keys it changed); one
// picked shows the state at it as a tree and lights its nodes in the graph; from there the
// state can be edited and the thread continued (POST /threads/{id}/state, then a run with
// input null), or a run started from it (a fork, or a replay).

import { $, h, enc, notice } from "./dom.js";
import { S } from "./state.js";
import { apiJson } from "./api.js";
import { stateTree } from "./statetree.js";

const PAGE = 1000; // the endpoint's most: a 1,000-checkpoint thread comes in one request

let startRun = () => {
  throw new Error("onHistoryRun was not called");
};
let refresh = () => {};

// `run(body)` starts a run on the thread shown with `body` merged into the request;
// `reread()` reads the thread shown again (after an edit that leaves nothing to run).
export function onHistoryRun(run, reread) {
  startRun = run;
  refresh = reread;
}

const view = { threadId: null, entries: [], more: false, chosen: null, loading: 0 };
S.history = view; // for the page's tests: entries, and `took` (ms to fetch and draw the list)

export function clearHistory() {
  view.threadId = null;
  view.entries = [];
  view.more = false;
  view.chosen = null;
  view.loading += 1;
  $("history").replaceChildren(h("p", { class: "empty", text: "A thread's checkpoints show here." }));
  $("checkpoint").replaceChildren();
  $("checkpoint").hidden = true;
  S.graph && S.graph.highlight([], []);
}

let reading = null; // the read going on: {threadId, promise, again}

// Reads the thread's checkpoints again (after a run, an edit) and draws them; the one chosen
// stays chosen when it is still listed. Asked again while a read goes on (a run read back
// reads the thread at each of its checkpoints), it reads once more after it, not at once.
export function loadHistory(threadId) {
  if (reading && reading.threadId === threadId) {
    reading.again = true;
    return reading.promise;
  }
  const current = { threadId, again: true };
  reading = current;
  current.promise = (async () => {
    try {
      while (current.again && S.threadId === threadId) {
        current.again = false;
        await readHistory(threadId);
      }
    } finally {
      if (reading === current) reading = null;
    }
  })();
  return current.promise;
}

async function readHistory(threadId) {
  const ticket = ++view.loading;
  const started = performance.now();
  const entries = (await apiJson("GET", `threads/${enc(threadId)}/checkpoints?limit=${PAGE}`)) || [];
  if (ticket !== view.loading || S.threadId !== threadId) return;
  view.threadId = threadId;
  view.entries = entries;
  view.more = entries.length === PAGE;
  drawList();
  view.took = performance.now() - started;
  $("history-count").textContent = `${entries.length}${view.more ? "+" : ""}`;
  const chosen = view.chosen && entries.find((e) => e.checkpoint_id === view.chosen.checkpoint_id);
  if (chosen) markChosen(chosen.checkpoint_id);
  else if (view.chosen) closeCheckpoint();
}

async function loadOlder() {
  const threadId = view.threadId;
  const last = view.entries[view.entries.length - 1];
  if (!threadId || !last) return;
  const older = (await apiJson("GET", `threads/${enc(threadId)}/checkpoints?limit=${PAGE}&before=${enc(last.checkpoint_id)}`)) || [];
  if (S.threadId !== threadId) return;
  view.entries = view.entries.concat(older);
  view.more = older.length === PAGE;
  drawList();
}

function clock(iso) {
  const when = new Date(iso);
  if (isNaN(when)) return "";
  const today = new Date().toDateString() === when.toDateString();
  return today ? when.toLocaleTimeString() : when.toLocaleString();
}

// The ids on the thread's current branch: the newest checkpoint's and its ancestors'.
function currentBranch(entries) {
  const byId = new Map(entries.map((e) => [e.checkpoint_id, e]));
  const on = new Set();
  for (let e = entries[0]; e && !on.has(e.checkpoint_id); e = byId.get(e.parent_checkpoint_id)) on.add(e.checkpoint_id);
  return on;
}

function row(entry, index, branch) {
  const wrote = entry.nodes.length ? entry.nodes.join(", ") : entry.source || "";
  const changed = entry.changed === null ? "" : entry.changed.join(", ");
  const off = !branch.has(entry.checkpoint_id);
  return h("li", { class: `cp${entry.source === "update" ? " update" : ""}${off ? " off" : ""}`, title: off ? "on an earlier branch (a fork or an edit left it)" : undefined, dataset: { index, id: entry.checkpoint_id } },
    h("span", { class: "step", text: String(entry.step) }),
    h("span", { class: "wrote", text: wrote }),
    entry.next.length ? h("span", { class: "next", text: `→ ${entry.next.join(", ")}` }) : null,
    entry.interrupts ? h("span", { class: "paused", text: "waits", title: `${entry.interrupts} interrupt(s) waiting` }) : null,
    changed ? h("span", { class: "changed", text: changed, title: "the state keys it changed" }) : null,
    h("time", { datetime: entry.created_at, text: clock(entry.created_at) }));
}

// One DOM build for the whole list, placed at once.
function drawList() {
  const list = h("ol", { class: "checkpoints", "aria-label": "checkpoints" });
  const branch = currentBranch(view.entries);
  list.append(...view.entries.map((entry, index) => row(entry, index, branch)));
  const box = $("history");
  if (!view.entries.length) {
    box.replaceChildren(h("p", { class: "empty", text: "No checkpoint yet: run the thread." }));
    return;
  }
  list.addEventListener("click", (event) => {
    const li = event.target.closest("li.cp");
    if (li) choose(view.entries[Number(li.dataset.index)]).catch(shout);
  });
  box.replaceChildren(list);
  if (view.more) box.append(h("button", { type: "button", class: "older", text: "Show older checkpoints", onclick: () => loadOlder().catch(shout) }));
  if (view.chosen) markChosen(view.chosen.checkpoint_id);
}

function shout(error) {
  notice(`The server answered ${error.status || ""}: ${error.detail || error.message || error}`);
}

function markChosen(checkpointId) {
  for (const li of $("history").querySelectorAll("li.cp.chosen")) li.classList.remove("chosen");
  const li = $("history").querySelector(`li.cp[data-id="${CSS.escape(checkpointId)}"]`);
  if (li) li.classList.add("chosen");
}

function closeCheckpoint() {
  view.chosen = null;
  $("checkpoint").hidden = true;
  $("checkpoint").replaceChildren();
  markChosen("");
  S.graph && S.graph.highlight([], []);
}

async function choose(entry) {
  const threadId = S.threadId;
  view.chosen = entry;
  markChosen(entry.checkpoint_id);
  S.graph && S.graph.highlight(entry.nodes, entry.next);
  const box = $("checkpoint");
  box.hidden = false;
  box.replaceChildren(h("p", { class: "muted", text: "loading…" }));
  const state = await apiJson("GET", `threads/${enc(threadId)}/state/${enc(entry.checkpoint_id)}`);
  if (S.threadId !== threadId || view.chosen !== entry) return;
  showState(entry, state.values || {});
}

function header(entry, ...buttons) {
  return h("header", {},
    h("b", { text: `Step ${entry.step}` }),
    h("span", { class: "muted", text: entry.nodes.length ? ` after ${entry.nodes.join(", ")}` : ` ${entry.source || ""}` }),
    entry.next.length ? h("span", { class: "muted", text: ` · next ${entry.next.join(", ")}` }) : null,
    h("code", { class: "cp-id", text: entry.checkpoint_id.slice(0, 13), title: entry.checkpoint_id }),
    h("span", { class: "spacer" }),
    ...buttons,
    h("button", { type: "button", class: "close", text: "×", title: "Close", "aria-label": "close", onclick: closeCheckpoint }));
}

function showState(entry, values) {
  const edit = h("button", { type: "button", class: "edit", text: "Edit", title: "Change the state at this checkpoint, then continue from it", onclick: () => editState(entry, values) });
  const fork = h("button", {
    type: "button",
    class: "fork",
    text: "Fork from here",
    title: entry.next.length
      ? `Replay the thread from this checkpoint (${entry.next.join(", ")} next): a new branch, the old one stays listed`
      : "Nothing runs after this checkpoint: pick an earlier one, or edit this state",
    onclick: () => runFrom({ input: null, checkpoint_id: entry.checkpoint_id }),
  });
  edit.disabled = Boolean(S.running);
  fork.disabled = Boolean(S.running) || !entry.next.length;
  $("checkpoint").replaceChildren(header(entry, edit, fork), h("div", { class: "cp-state" }, stateTree(values, entry.changed)));
  $("checkpoint").scrollTop = 0;
}

function runFrom(body) {
  if (S.running) return;
  closeCheckpoint();
  Promise.resolve(startRun(body)).catch(shout);
}

// The keys whose value the user changed: an update goes through the state's reducers (a list
// that appends would get the whole list again), so only those are sent.
function changedKeys(before, after) {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((k) => k in after && JSON.stringify(before[k]) !== JSON.stringify(after[k]));
}

function editState(entry, values) {
  const text = h("textarea", { class: "state-json", rows: 8, spellcheck: "false", "aria-label": "state as JSON" });
  text.value = JSON.stringify(values, null, 2);
  const asNode = h("input", { type: "text", class: "as-node", placeholder: "as node (optional)", "aria-label": "as node", list: "graph-nodes" });
  const error = h("p", { class: "card-error", hidden: true });
  const fail = (message) => {
    error.hidden = false;
    error.textContent = message;
  };
  const save = async () => {
    let edited;
    try {
      edited = JSON.parse(text.value);
    } catch (e) {
      return fail(`The state is not JSON: ${e.message}`);
    }
    if (edited === null || typeof edited !== "object" || Array.isArray(edited)) return fail("The state must be a JSON object of state keys.");
    const keys = changedKeys(values, edited);
    if (!keys.length) return fail("Nothing changed: edit a value first (a key removed is not an update).");
    const body = { values: Object.fromEntries(keys.map((k) => [k, edited[k]])), checkpoint_id: entry.checkpoint_id };
    if (asNode.value.trim()) body.as_node = asNode.value.trim();
    const threadId = S.threadId;
    let now;
    try {
      await apiJson("POST", `threads/${enc(threadId)}/state`, body);
      now = await apiJson("GET", `threads/${enc(threadId)}/state`);
    } catch (e) {
      return fail(`The server answered ${e.status || ""}: ${e.detail || e.message}`);
    }
    if (S.threadId !== threadId) return;
    if ((now.next || []).length) return runFrom({ input: null });
    closeCheckpoint(); // nothing runs after the edit: the thread shows it, as it is
    notice("Saved: the state is changed; nothing runs after it.", "info");
    await refresh();
  };
  const nodes = S.graph ? [...S.graph.boxes.keys()].filter((id) => !id.startsWith("__")) : [];
  $("checkpoint").replaceChildren(
    header(entry),
    h("p", { class: "muted hint", text: "The keys you change are written as a new checkpoint after this one (a branch); the thread runs on from it." }),
    text,
    h("datalist", { id: "graph-nodes" }, nodes.map((id) => h("option", { value: id }))),
    h("div", { class: "buttons" },
      asNode,
      h("button", { type: "button", class: "primary save", text: "Save and continue", onclick: () => save().catch(shout) }),
      h("button", { type: "button", class: "cancel", text: "Cancel", onclick: () => showState(entry, values) })),
    error);
  $("checkpoint").scrollTop = 0;
  text.focus({ preventScroll: true });
}
