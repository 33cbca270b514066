// The agent's graph (GET /assistants/{id}/graph) drawn as SVG, ranked from __start__, with
// the nodes of the live run lit as they start and end, and a checkpoint's picked in the history.

import { $, h, enc } from "./dom.js";
import { S } from "./state.js";
import { apiJson } from "./api.js";

const SVG = "http://www.w3.org/2000/svg";

function s(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

export async function loadGraph(assistant) {
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
    for (const box of this.boxes.values()) box.g.classList.remove("active", "visited", "wrote", "next");
  }

  // A checkpoint picked in the history: the nodes whose writes made it, and those it runs next.
  highlight(wrote, next) {
    const picked = (wrote || []).length + (next || []).length > 0; // (the last run's marks give way)
    for (const box of this.boxes.values()) box.g.classList.remove("wrote", "next", ...(picked ? ["visited", "active"] : []));
    for (const id of wrote || []) this.boxes.get(id)?.g.classList.add("wrote");
    for (const id of next || []) this.boxes.get(id)?.g.classList.add("next");
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
