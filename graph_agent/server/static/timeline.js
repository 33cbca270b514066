// The runs of the thread shown, each as a timeline card: nodes, model calls (tokens,
// duration), tool calls (arguments, result), interrupts, sub-agents nested under the node or
// tool call that ran them; drawn from the run's `run_events`.

import { $, h, pretty, oneLine, duration, errorText, textOf, pill } from "./dom.js";
import { S } from "./state.js";

const ICONS = { resume: "▶", node: "▣", model: "✦", tool: "⚙", interrupt: "‖", custom: "✎", sub: "↳", error: "✖" };

export function addTimeline(createdAt) {
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
    this.via = h("span", { class: "took via" });
    const when = createdAt ? new Date(createdAt) : new Date();
    this.list = h("ol", { class: "rows" });
    this.root = h("section", { class: "run" },
      h("header", {}, h("b", { text: `Run ${number}` }), h("span", { class: "muted", text: when.toLocaleTimeString() }), this.status, this.took, this.via, this.runId),
      this.list);
  }

  setRunId(runId) {
    this.runId.textContent = runId ? runId.slice(0, 8) : "";
    this.root.dataset.runId = runId || "";
  }

  // How its client started it, when not from this page: "waited" (no stream), or the
  // stream modes it asked for.
  setVia(text) {
    this.via.textContent = text ? `· ${text}` : "";
    this.via.title = text ? "how its client started the run" : "";
  }

  setStatus(text) {
    this.status.textContent = text;
    this.status.className = `pill ${text}`;
  }

  // `status`: the run's, as the server says it ("interrupted" is a cancelled run), or
  // "running" when the page stopped following a run that goes on.
  finish(status) {
    const shown = { running: "stopped", interrupted: "cancelled" }[status] || status || "done";
    if (this.status.textContent === "running") this.setStatus(shown);
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
