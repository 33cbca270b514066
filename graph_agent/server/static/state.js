// The page's shared state: one object every module reads and writes (and the page's tests
// read as window.graphAgentPage).

export const S = {
  token: sessionStorage.getItem("graph-agent:token"),
  authNeeded: false,
  assistants: [],
  assistant: null, // the selected assistant (its wire dict)
  threadId: null,
  messages: [], // the thread's messages, from the last `values` (or the state)
  streaming: new Map(), // streamed message id -> {text, calls, ns, complete}
  interrupts: [], // the thread's waiting interrupts
  decisions: new Map(), // interrupt id -> Map(tool call id -> feedback), until all are decided
  answers: new Map(), // interrupt id -> its resume value, until every interrupt has one
  running: null, // the run being streamed: {abort, threadId, ctx} (ctx: see runs.js)
  deltas: 0, // streamed message chunks shown (all runs)
  runs: [], // RunTimeline objects of the thread shown
  graph: null, // GraphView of the selected assistant
};
window.graphAgentPage = S; // for the curious (and the page's tests)
