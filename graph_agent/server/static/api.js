// The server's API: requests with the bearer token (asked for once when refused), Server-Sent
// Events read over fetch, and following one run's stream to its end, rejoining it when cut.

import { $, enc } from "./dom.js";
import { S } from "./state.js";

const RECONNECT_TRIES = 5;

export class ApiError extends Error {
  constructor(status, detail) {
    super(`${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
  }
}

let tokenAsked = null; // one dialog for every request refused at once

export function askToken(wrong) {
  if (!tokenAsked) {
    tokenAsked = new Promise((resolve) => {
      const dialog = $("token-dialog");
      $("token-why").textContent = wrong
        ? "The server refused that token. Enter the right one."
        : "This server needs a bearer token (Authorization: Bearer …).";
      $("token-input").value = "";
      const done = () => {
        dialog.removeEventListener("close", done);
        const value = $("token-input").value.trim();
        if (value) {
          S.token = value;
          sessionStorage.setItem("graph-agent:token", value);
        }
        tokenAsked = null;
        resolve();
      };
      dialog.addEventListener("close", done);
      dialog.showModal();
      $("token-input").focus();
    });
  }
  return tokenAsked;
}

// Paths are relative, so the page also works when the server is mounted under a prefix.
export async function api(method, path, body, options = {}) {
  for (;;) {
    const headers = { Accept: "application/json", ...(options.headers || {}) };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (S.token) headers.Authorization = `Bearer ${S.token}`;
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: options.signal,
      cache: "no-store",
    });
    if (response.status === 401) {
      const wrong = Boolean(S.token);
      S.authNeeded = true;
      $("change-token").hidden = false;
      await askToken(wrong);
      continue;
    }
    if (!response.ok) {
      let detail = response.statusText;
      try {
        const data = await response.json();
        detail = data.detail || data.message || data.error || JSON.stringify(data);
      } catch (_) {
        /* no JSON body */
      }
      throw new ApiError(response.status, detail);
    }
    return response;
  }
}

export async function apiJson(method, path, body) {
  const response = await api(method, path, body);
  if (response.status === 202 || response.status === 204) return null;
  const text = await response.text();
  return text.trim() ? JSON.parse(text) : null;
}

// Server-Sent Events over fetch.

// Yields {event, data, id} per event; `id` is the last id seen (kept across events, as the
// SSE spec says). Lines end with \n, \r or \r\n; comments (heartbeats) are skipped.
export async function* sse(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let event = "";
  let data = [];
  let lastId = null;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      for (;;) {
        const end = /\r\n|\r|\n/.exec(buffer);
        if (!end) break;
        if (end[0] === "\r" && end.index === buffer.length - 1) break; // may be half a \r\n
        const line = buffer.slice(0, end.index);
        buffer = buffer.slice(end.index + end[0].length);
        if (line === "") {
          if (data.length) {
            const text = data.join("\n");
            let parsed = null;
            try {
              parsed = text ? JSON.parse(text) : null;
            } catch (_) {
              parsed = text;
            }
            yield { event: event || "message", data: parsed, id: lastId };
          }
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "event") event = val;
        else if (field === "data") data.push(val);
        else if (field === "id" && !val.includes("\0")) lastId = val;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

// Reads one run's stream to its end, handing each event to `onEvent(event, data, ctx)`: rejoins with Last-Event-ID when the connection drops,
// or when it closes while the run still goes on (as langgraph-sdk does), asking for what
// `ctx.query` asks (the stream modes a join reads the run in: the ids count in those).
export async function follow(first, ctx, onEvent) {
  let response = first;
  let tries = 0;
  for (;;) {
    let broke = response === null; // (the last rejoin request failed)
    if (response) {
      try {
        for await (const part of sse(response)) {
          if (part.id !== null) ctx.lastId = part.id;
          onEvent(part.event, part.data, ctx);
          tries = 0;
        }
      } catch (error) {
        if (ctx.signal && ctx.signal.aborted) return;
        broke = true;
        ctx.timeline.note(`connection lost (${error.message || error}); rejoining…`);
      }
    }
    if (ctx.failed || !ctx.runId) return;
    const runPath = `threads/${enc(ctx.threadId)}/runs/${enc(ctx.runId)}`;
    if (!broke) {
      const run = await apiJson("GET", runPath).catch(() => null);
      if (!run || !["pending", "running"].includes(run.status)) {
        ctx.status = run ? run.status : ctx.status;
        return;
      }
    }
    if (++tries > RECONNECT_TRIES) {
      ctx.timeline.note("gave up rejoining the run's stream");
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 500 * tries)));
    try {
      response = await api("GET", `${runPath}/stream${ctx.query || ""}`, undefined, {
        headers: { Accept: "text/event-stream", "Last-Event-ID": ctx.lastId || "-1" },
        signal: ctx.signal,
      });
      ctx.rejoins += 1;
    } catch (_) {
      if (ctx.signal && ctx.signal.aborted) return;
      response = null;
    }
  }
}
