// The conversation: the thread's messages, and the bubbles of the messages being streamed
// (a chunk at a time, tool calls included) until the run's next `values` replaces them.

import { $, h, oneLine, textOf } from "./dom.js";
import { S } from "./state.js";

export function stream(message, ns) {
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
  const cut = Boolean(message.response_metadata && message.response_metadata.cut); // stopped mid-answer
  return h("div", { class: `msg ${role}${cut ? " cut" : ""}`, dataset: { id: message.id || "" } },
    h("span", { class: "who", text: role === "user" ? "You" : role === "assistant" ? message.name || (S.assistant && S.assistant.name) || "Agent" : role }),
    text ? h("div", { class: "text", text }) : null,
    calls.map((c) => toolCallChip(c.name, c.args)),
    cut ? h("span", { class: "cut-note", text: "stopped here", title: "The run was stopped: this is what was streamed of the answer" }) : null);
}

export function renderMessages() {
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
