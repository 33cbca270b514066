// A state (any JSON values) drawn as a collapsible tree: objects and lists as <details>
// (native, no script per toggle), their children built only when first opened past the
// first levels, so a long conversation or a big state costs nothing until looked at.

import { h, oneLine } from "./dom.js";

const OPEN_DEPTH = 1; // levels open at first (0: the root's keys)
const BUILT_DEPTH = 2; // levels built at once; deeper ones when opened
const MAX_CHILDREN = 200; // shown per object or list; the rest behind "show more"

function kind(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "list";
  return typeof value; // object, string, number, boolean
}

function leaf(value) {
  const k = kind(value);
  const text = k === "string" ? JSON.stringify(value) : String(value);
  return h("span", { class: `tv ${k}`, text, title: k === "string" && value.length > 80 ? value : undefined });
}

function summaryOf(value) {
  if (Array.isArray(value)) return `[${value.length}]`;
  const keys = Object.keys(value);
  // a message, or any object with a `type`: its type and first words say what it is
  if (typeof value.type === "string") {
    const said = typeof value.content === "string" ? ` ${oneLine(value.content, 60)}` : "";
    return `${value.type}${said}`;
  }
  return `{${keys.length}} ${oneLine(keys.join(", "), 60)}`;
}

function fill(list, value, depth, changed) {
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const rows = entries.slice(0, MAX_CHILDREN).map(([key, child]) => node(key, child, depth + 1, changed && changed.has(key)));
  list.replaceChildren(...rows);
  if (entries.length > MAX_CHILDREN) {
    const more = h("li", { class: "tmore" }, h("button", { type: "button", class: "link", text: `show ${entries.length - MAX_CHILDREN} more` }));
    more.firstChild.addEventListener("click", () => {
      more.replaceWith(...entries.slice(MAX_CHILDREN).map(([key, child]) => node(key, child, depth + 1, false)));
    });
    list.append(more);
  }
}

function node(key, value, depth, changed) {
  const label = h("span", { class: "tk", text: key === null ? "state" : String(key) });
  const mark = changed ? h("span", { class: "tchanged", text: "changed", title: "changed at this checkpoint" }) : null;
  const k = kind(value);
  if (k !== "object" && k !== "list") {
    return h("li", { class: `tleaf${changed ? " is-changed" : ""}`, dataset: { key: key === null ? "" : String(key) } }, label, h("span", { class: "tsep", text: ": " }), leaf(value), mark);
  }
  const empty = (k === "list" ? value.length : Object.keys(value).length) === 0;
  const children = h("ul", { class: "tchildren" });
  const details = h("details", { class: `tnode ${k}` },
    h("summary", {}, label, h("span", { class: "tsum", text: ` ${summaryOf(value)}` }), mark),
    children);
  if (depth < OPEN_DEPTH && !empty) details.open = true;
  if (depth < BUILT_DEPTH) fill(children, value, depth, null);
  else {
    details.addEventListener("toggle", () => {
      if (details.open && !children.firstChild) fill(children, value, depth, null);
    }, { once: false });
  }
  return h("li", { class: `tbranch${changed ? " is-changed" : ""}`, dataset: { key: key === null ? "" : String(key) } }, details);
}

// The tree of `values` (a state's values): one row per key, `changed` (a list of keys)
// marked. Returns the element to place.
export function stateTree(values, changed) {
  const top = h("ul", { class: "tree" });
  if (values === null || values === undefined || (typeof values === "object" && !Object.keys(values).length)) {
    return h("p", { class: "muted tree-empty", text: "The state is empty." });
  }
  if (typeof values !== "object") {
    top.append(node(null, values, 0, false));
    return top;
  }
  fill(top, values, -1, changed ? new Set(changed) : null);
  return top;
}
