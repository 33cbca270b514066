// Small DOM and text helpers shared by every part of the page.

export const $ = (id) => document.getElementById(id);

export function h(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export const enc = encodeURIComponent;

export function pretty(value) {
  if (typeof value === "string") {
    try {
      const parsed = JSON.parse(value);
      if (parsed !== null && typeof parsed === "object") return JSON.stringify(parsed, null, 2);
    } catch (_) {
      /* not JSON: shown as it is */
    }
    return value;
  }
  return JSON.stringify(value, null, 2);
}

export function oneLine(value, max = 120) {
  let text = typeof value === "string" ? value : JSON.stringify(value);
  if (typeof value === "string") {
    try {
      text = JSON.stringify(JSON.parse(value));
    } catch (_) {
      /* keep the text */
    }
  }
  text = (text || "").replace(/\s+/g, " ");
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}

export function duration(seconds) {
  if (typeof seconds !== "number" || !isFinite(seconds) || seconds < 0) return "";
  if (seconds < 1) return `${Math.max(0, Math.round(seconds * 1000))} ms`;
  if (seconds < 60) return `${seconds.toFixed(2)} s`;
  return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
}

export function errorText(error) {
  if (!error) return "";
  if (typeof error === "string") return error;
  return [error.error, error.message].filter(Boolean).join(": ");
}

export function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((b) => (typeof b === "string" ? b : b && b.text) || "").join("");
  }
  return content == null ? "" : JSON.stringify(content);
}

export function notice(message, kind = "error") {
  const box = $("notice");
  if (!message) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  box.className = `notice ${kind}`;
  box.textContent = message;
}
export function pill(text) {
  return h("span", { class: `pill ${text}`, text });
}
