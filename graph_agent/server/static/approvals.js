// The interrupts a thread waits on: a card per tool call to approve, edit or reject (a
// HumanInTheLoopHook pause), a free answer for any other; once every waiting interrupt has
// its answer, the run is resumed with them (by the function given to onResume).

import { $, h, pretty } from "./dom.js";
import { S } from "./state.js";

let resumeRun = () => {
  throw new Error("onResume was not called");
};

// `run(resume)` starts the run that resumes the thread with `resume`.
export function onResume(run) {
  resumeRun = run;
}

export function renderInterrupts() {
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
  resumeRun(resume);
}
