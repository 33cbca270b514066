// A small chat front end on @langchain/langgraph-sdk's React `useStream` hook, written the
// way agent-chat-ui and LangChain's front-end docs use it: nothing here knows graph-agent.
// tests/server/test_usestream.py bundles it with esbuild and drives it in headless Chromium.
// The server and the assistant come from the page's query: ?api=<url>&assistant=<id>; the
// thread shown is kept there too (&thread=<id>, as agent-chat-ui keeps it), and &reconnect=1
// turns on useStream's reconnectOnMount (a reload rejoins the run it was streaming).
import React, { useCallback, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

const query = new URLSearchParams(window.location.search);
const API_URL = query.get("api");
const ASSISTANT_ID = query.get("assistant") ?? "agent";
const RECONNECT = query.get("reconnect") === "1";

function keepThreadInUrl(threadId) {
  const url = new URL(window.location.href);
  if (threadId) url.searchParams.set("thread", threadId);
  else url.searchParams.delete("thread");
  window.history.replaceState(null, "", url);
}

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === "string" ? part : part?.type === "text" ? part.text : ""))
      .join("");
  }
  return "";
}

function kindOf(message) {
  const kind = typeof message.getType === "function" ? message.getType() : message.type;
  return { human: "human", user: "human", ai: "ai", assistant: "ai", tool: "tool" }[kind] ?? kind;
}

function Message({ message }) {
  const kind = kindOf(message);
  const text = textOf(message.content);
  const calls = kind === "ai" ? (message.tool_calls ?? []) : [];
  return (
    <div className={`msg ${kind}`} data-id={message.id ?? ""}>
      {kind === "tool" ? <div className="tool-name">{message.name}</div> : null}
      {text ? <div className="text">{text}</div> : null}
      {calls.map((call) => (
        <div className="tool-call" key={call.id} data-name={call.name}>
          <span className="name">{call.name}</span>
          <pre className="args">{JSON.stringify(call.args)}</pre>
        </div>
      ))}
    </div>
  );
}

// LangChain's human-in-the-loop request: {action_requests: [{name, args, description}],
// review_configs: [{action_name, allowed_decisions}]}; answered with {decisions: [...]},
// one per action request: {type: "approve"}, {type: "reject", message},
// {type: "edit", edited_action: {name, args}}.
function Approval({ value, onDecide }) {
  const requests = value?.action_requests;
  const [edits, setEdits] = useState(() =>
    (Array.isArray(requests) ? requests : []).map((request) => JSON.stringify(request.args)),
  );
  if (value === undefined) {
    // useStream's word for a thread paused before a step with no interrupt of its own
    return <div className="interrupt breakpoint">Paused before the next step</div>;
  }
  if (!Array.isArray(requests)) {
    return (
      <div className="interrupt unknown">
        <pre>{JSON.stringify(value)}</pre>
      </div>
    );
  }
  const allowed = (name) =>
    (value.review_configs ?? []).find((config) => config.action_name === name)
      ?.allowed_decisions ?? ["approve", "reject"];
  const decision = (type, request, index) => {
    if (type === "reject") return { type, message: "Not now." };
    if (type === "edit") return { type, edited_action: { name: request.name, args: JSON.parse(edits[index]) } };
    return { type };
  };
  const decideAll = (type) =>
    onDecide({ decisions: requests.map((request, index) => decision(type, request, index)) });
  const editable = requests.every((request) => allowed(request.name).includes("edit"));
  return (
    <div className="interrupt approval">
      {requests.map((request, index) => (
        <div className="action" key={index} data-name={request.name}>
          <span className="name">{request.name}</span>
          <pre className="args">{JSON.stringify(request.args)}</pre>
          {request.description ? <p className="description">{request.description}</p> : null}
          <span className="allowed">{allowed(request.name).join(" ")}</span>
          {editable ? (
            <textarea
              className="edit-args"
              value={edits[index]}
              onChange={(e) => setEdits(edits.map((text, i) => (i === index ? e.target.value : text)))}
            />
          ) : null}
        </div>
      ))}
      <button className="approve" onClick={() => decideAll("approve")}>
        Approve
      </button>
      {editable ? (
        <button className="edit" onClick={() => decideAll("edit")}>
          Send edited
        </button>
      ) : null}
      <button className="reject" onClick={() => decideAll("reject")}>
        Reject
      </button>
    </div>
  );
}

function threadLabel(thread) {
  const first = (thread.values?.messages ?? []).find((m) => kindOf(m) === "human");
  return first ? textOf(first.content) : thread.thread_id;
}

function App() {
  const [threadId, setThreadId] = useState(query.get("thread"));
  const [threads, setThreads] = useState([]);
  const [draft, setDraft] = useState("");
  const stream = useStream({
    apiUrl: API_URL,
    assistantId: ASSISTANT_ID,
    messagesKey: "messages",
    threadId,
    onThreadId: setThreadId,
    fetchStateHistory: true,
    reconnectOnMount: RECONNECT,
  });
  useEffect(() => keepThreadInUrl(threadId), [threadId]);

  const refreshThreads = useCallback(() => {
    stream.client.threads
      .search({ limit: 20, sortBy: "updated_at", sortOrder: "desc" })
      .then(setThreads, () => setThreads([]));
  }, [stream.client]);
  useEffect(refreshThreads, [refreshThreads, threadId, stream.isLoading]);

  const send = (event) => {
    event.preventDefault();
    const text = draft.trim();
    if (!text) return;
    setDraft("");
    stream.submit(
      { messages: [{ type: "human", content: text }] },
      { optimisticValues: (prev) => ({ ...prev, messages: [...(prev.messages ?? []), { type: "human", content: text }] }) },
    );
  };
  const decide = (resume) => stream.submit(undefined, { command: { resume } });
  const interrupt = stream.interrupt;

  return (
    <div id="app" data-loading={String(stream.isLoading)} data-thread={threadId ?? ""}>
      <aside id="threads">
        <button id="new-thread" onClick={() => setThreadId(null)}>
          New thread
        </button>
        {threads.map((thread) => (
          <button
            key={thread.thread_id}
            className={`thread ${thread.thread_id === threadId ? "current" : ""}`}
            data-thread={thread.thread_id}
            onClick={() => setThreadId(thread.thread_id)}
          >
            {threadLabel(thread)}
          </button>
        ))}
      </aside>
      <main>
        <div id="messages">
          {stream.messages.map((message, index) => (
            <Message key={message.id ?? index} message={message} />
          ))}
        </div>
        {interrupt && !stream.isLoading ? (
          <Approval key={interrupt.id ?? JSON.stringify(interrupt.value)} value={interrupt.value} onDecide={decide} />
        ) : null}
        {stream.error ? <div id="error">{String(stream.error?.message ?? stream.error)}</div> : null}
        <form id="composer" onSubmit={send}>
          <input id="input" value={draft} onChange={(e) => setDraft(e.target.value)} />
          <button id="send" type="submit" disabled={stream.isLoading}>
            Send
          </button>
          <button id="stop" type="button" disabled={!stream.isLoading} onClick={() => stream.stop()}>
            Stop
          </button>
        </form>
      </main>
    </div>
  );
}

createRoot(document.getElementById("root")).render(<App />);
