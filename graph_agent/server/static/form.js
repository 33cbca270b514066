// Any graph: a graph whose state has no `messages` gets, instead of the chat, an input form
// built from its schema (GET /assistants/{id}/schemas: the input schema, else the state's;
// a field per property: text, number, a checkbox, a choice, or JSON for the rest) with a raw
// JSON editor beside it, and its state drawn as a tree. A chat graph keeps the chat.

import { $, h, enc, notice } from "./dom.js";
import { S } from "./state.js";
import { apiJson } from "./api.js";
import { stateTree } from "./statetree.js";

const schemas = new Map(); // assistant id -> the promise of its schemas (null: none)

let submit = () => {
  throw new Error("onInput was not called");
};

// `run(input)` starts a run of the thread shown (a new one when none is) with `input`.
export function onInput(run) {
  submit = run;
}

function schemasOf(assistant) {
  if (!schemas.has(assistant.assistant_id)) {
    // (no schema: the JSON editor only)
    schemas.set(assistant.assistant_id, apiJson("GET", `assistants/${enc(assistant.assistant_id)}/schemas`).catch(() => null));
  }
  return schemas.get(assistant.assistant_id);
}

function inputSchema(found) {
  const schema = found && (found.input_schema || found.state_schema);
  return schema && typeof schema === "object" ? schema : { type: "object", properties: {} };
}

// Whether the thread shown is a chat: its state (or its graph's schema) has `messages`.
function isChat(found, values) {
  if (values && typeof values === "object" && "messages" in values) return true;
  const state = found && found.state_schema;
  const props = (state && state.properties) || {};
  return "messages" in props;
}

// Shows the chat or the form and the state tree, as fits the assistant and `values` (the
// thread's state values, or null before it has any).
export async function showMode(values) {
  const assistant = S.assistant;
  if (!assistant) return;
  const found = await schemasOf(assistant);
  if (S.assistant !== assistant) return;
  const chat = isChat(found, values);
  S.chat = chat;
  $("messages").hidden = !chat;
  $("composer").classList.toggle("no-chat", !chat); // (its Stop stays, shown while a run goes on)
  $("state-view").hidden = chat;
  $("input-form").hidden = chat;
  if (!chat && $("input-form").dataset.assistant !== assistant.assistant_id) buildForm(assistant, inputSchema(found), Boolean(found && found.input_schema));
  if (!chat) showValues(values);
}

export function showValues(values) {
  if (S.chat) return;
  $("state-tree").replaceChildren(values ? stateTree(values) : h("p", { class: "muted", text: "No state yet: fill in the input and run." }));
}

function typeOf(schema) {
  if (!schema || typeof schema !== "object") return "json";
  if (Array.isArray(schema.enum)) return "enum";
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (type === "string") return "string";
  if (type === "number" || type === "integer") return type;
  if (type === "boolean") return "boolean";
  return "json"; // object, array, or anything (an empty schema)
}

function fieldFor(name, schema, required) {
  const type = typeOf(schema);
  const id = `field-${name}`;
  let input;
  if (type === "enum") {
    input = h("select", { id, name }, h("option", { value: "", text: "—" }), schema.enum.map((v, i) => h("option", { value: String(i), text: JSON.stringify(v) })));
  } else if (type === "boolean") {
    input = h("input", { id, name, type: "checkbox" });
  } else if (type === "number" || type === "integer") {
    input = h("input", { id, name, type: "number", step: type === "integer" ? "1" : "any" });
  } else if (type === "string") {
    input = h("input", { id, name, type: "text" });
  } else {
    input = h("textarea", { id, name, rows: 3, spellcheck: "false", class: "json", placeholder: "JSON (empty: not sent)" });
  }
  if (schema && schema.default !== undefined) setValue(input, type, schema, schema.default);
  const title = (schema && (schema.title || schema.description)) || "";
  return h("div", { class: `field ${type}`, dataset: { name, type } },
    h("label", { for: id, title }, name, required ? h("span", { class: "req", text: " *" }) : null, h("span", { class: "ftype", text: type === "json" ? " JSON" : ` ${type}` })),
    input);
}

function setValue(input, type, schema, value) {
  if (type === "boolean") input.checked = Boolean(value);
  else if (type === "enum") input.value = String(schema.enum.findIndex((v) => JSON.stringify(v) === JSON.stringify(value)));
  else if (type === "json") input.value = JSON.stringify(value, null, 2);
  else input.value = String(value);
}

// The form's values as an input; throws an Error naming the field that is wrong.
function readFields(form, properties) {
  const input = {};
  for (const field of form.querySelectorAll(".field")) {
    const { name, type } = field.dataset;
    const control = field.querySelector("input, select, textarea");
    if (type === "boolean") {
      input[name] = control.checked;
    } else if (type === "enum") {
      if (control.value !== "") input[name] = properties[name].enum[Number(control.value)];
    } else if (type === "number" || type === "integer") {
      if (control.value.trim() === "") continue;
      const number = Number(control.value);
      if (!isFinite(number) || (type === "integer" && !Number.isInteger(number))) throw new Error(`${name}: ${control.value} is not ${type === "integer" ? "an integer" : "a number"}`);
      input[name] = number;
    } else if (type === "string") {
      if (control.value !== "") input[name] = control.value;
    } else if (control.value.trim() !== "") {
      try {
        input[name] = JSON.parse(control.value);
      } catch (error) {
        throw new Error(`${name} is not JSON: ${error.message}`);
      }
    }
  }
  return input;
}

// Fields from the input schema; from the state's keys when the graph has none (they may not
// be all its input: the JSON editor is shown first then).
function buildForm(assistant, schema, isInput) {
  const form = $("input-form");
  form.dataset.assistant = assistant.assistant_id;
  form.noValidate = true; // our own checks say which field is wrong, in the page's words
  const properties = schema.properties || {};
  const required = new Set(schema.required || []);
  const names = Object.keys(properties);
  const fields = h("div", { class: "fields" }, names.map((name) => fieldFor(name, properties[name], required.has(name))));
  const raw = h("textarea", { id: "input-json", class: "json", rows: 8, spellcheck: "false", "aria-label": "input as JSON", placeholder: '{"key": "value"}' });
  const rawBox = h("div", { class: "raw" }, h("label", { for: "input-json", text: "Input as JSON" }), raw);
  const useRaw = h("input", { type: "checkbox", id: "use-json", "aria-label": "edit the input as JSON" });
  const error = h("p", { class: "card-error", id: "input-error", hidden: true });
  const mode = (asJson) => {
    useRaw.checked = asJson;
    fields.hidden = asJson;
    rawBox.hidden = !asJson;
  };
  useRaw.addEventListener("change", () => {
    if (useRaw.checked) {
      try {
        raw.value = JSON.stringify(readFields(fields, properties), null, 2);
      } catch (_) {
        /* the JSON editor starts as it was */
      }
    }
    mode(useRaw.checked);
  });
  const run = async (event) => {
    event.preventDefault();
    if (S.running) return;
    error.hidden = true;
    notice(null);
    let input;
    try {
      if (useRaw.checked) {
        try {
          input = JSON.parse(raw.value || "{}");
        } catch (e) {
          throw new Error(`The input is not JSON: ${e.message}`);
        }
      } else {
        input = readFields(fields, properties);
      }
    } catch (e) {
      error.hidden = false;
      error.textContent = e.message;
      return;
    }
    await submit(input);
  };
  form.onsubmit = (event) => run(event).catch((e) => notice(`The server answered ${e.status || ""}: ${e.detail || e.message}`));
  form.replaceChildren(
    h("div", { class: "form-head" },
      h("b", { text: "Input" }),
      h("span", { class: "muted", text: isInput ? " (fields from the graph's input schema)" : names.length ? " (the graph has no input schema: fields for its state's known keys)" : " (the graph has no input schema: write it as JSON)" }),
      h("span", { class: "spacer" }),
      h("label", { class: "use-json" }, useRaw, " JSON")),
    fields,
    rawBox,
    error,
    h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary", id: "run-input", text: "Run" })));
  mode(!isInput || !names.length);
}
