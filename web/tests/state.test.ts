import { describe, expect, it } from "vitest";
import {
  applyEvent,
  finalAnswer,
  messageFromHistory,
  newMessage,
  planOf,
  steps,
  needsLoggedTimes,
  toolCalls,
  uniqueKeys,
  withLoggedTimes,
  type MessageView,
} from "../src/chat/state";
import type { DifyEvent } from "../src/shared/sse";

const head = { conversation_id: "c1", message_id: "m1", task_id: "k1", created_at: 1700000000 };
const thought = (fields: Record<string, unknown>): DifyEvent => ({
  event: "agent_thought",
  ...head,
  thought: "",
  tool: "",
  tool_input: "",
  observation: "",
  tool_labels: {},
  message_files: [],
  ...fields,
});
const text = (answer: string): DifyEvent => ({ event: "agent_message", ...head, answer });

function run(events: DifyEvent[], clock: number[] = events.map((_, i) => i * 1000), start?: MessageView): MessageView {
  return events.reduce((m, e, i) => applyEvent(m, e, clock[i]), start ?? newMessage("What is 2+3 and the weather?"));
}

// Dify's order for one function-calling round with two tools, then the answer (docs/http-api.md).
const TWO_TOOLS: DifyEvent[] = [
  thought({ id: "t1", position: 1 }),
  text("Let me check."),
  thought({
    id: "t1",
    position: 1,
    thought: "Let me check.",
    tool: "calculator",
    tool_input: '{"calculator": {"expression": "2+3"}}',
    tool_labels: { calculator: { en_US: "Calculator" } },
  }),
  thought({
    id: "t1",
    position: 1,
    thought: "Let me check.",
    tool: "calculator;weather",
    tool_input: '{"calculator": {"expression": "2+3"}, "weather": {"city": "Paris"}}',
  }),
  thought({
    id: "t1",
    position: 1,
    thought: "Let me check.",
    tool: "calculator;weather",
    tool_input: '{"calculator": {"expression": "2+3"}, "weather": {"city": "Paris"}}',
    observation: '{"calculator": "5", "weather": ""}',
  }),
  thought({
    id: "t1",
    position: 1,
    thought: "Let me check.",
    tool: "calculator;weather",
    tool_input: '{"calculator": {"expression": "2+3"}, "weather": {"city": "Paris"}}',
    observation: '{"calculator": "5", "weather": "tool invoke error: Request failed with status code 500"}',
  }),
  thought({ id: "t2", position: 2 }),
  text("2+3 is **5**; "),
  text("the weather is unknown."),
  thought({ id: "t2", position: 2, thought: "2+3 is **5**; the weather is unknown." }),
  {
    event: "message_end",
    ...head,
    id: "m1",
    metadata: {
      usage: { total_tokens: 42, latency: 1.5 },
      retriever_resources: [{ position: 1, dataset_name: "kb", document_name: "a.md", score: 0.9, content: "seg" }],
    },
  },
];

describe("applyEvent", () => {
  it("shows a chat app's message events as its answer, and an agent app's closing message once", () => {
    const chat = run([{ event: "message", ...head, answer: "Hel" }, { event: "message", ...head, answer: "lo." }]);
    expect(chat.answer).toBe("Hello.");
    expect(chat.rounds.map((r) => r.text)).toEqual(["Hello."]);
    const whole: DifyEvent = { event: "message", ...head, answer: "Hello." };
    const agent = run([text("Hel"), text("lo."), whole]);
    expect(agent.answer).toBe("Hello.");
    expect(agent.rounds.map((r) => r.text)).toEqual(["Hello."]);
  });
  it("builds one round per thought id, with the tool calls as they start and finish", () => {
    const whileRunning = run(TWO_TOOLS.slice(0, 5));
    expect(whileRunning.status).toBe("streaming");
    expect(whileRunning.rounds).toHaveLength(1);
    const [calc, weather] = whileRunning.rounds[0].tools;
    expect(calc).toMatchObject({ name: "calculator", input: { expression: "2+3" }, output: "5", error: false });
    expect(weather).toMatchObject({ name: "weather", input: { city: "Paris" }, output: null });
    // The calculator was first seen at event 2 (2 s) and finished at event 4 (4 s).
    expect(calc.seconds).toBe(2);
    expect(calc.label).toBe("Calculator");

    const done = run(TWO_TOOLS);
    expect(done.status).toBe("done");
    expect(done.rounds.map((r) => r.id)).toEqual(["t1", "t2"]);
    expect(done.rounds[0].text).toBe("Let me check.");
    expect(done.rounds[0].tools[1]).toMatchObject({ output: expect.stringContaining("status code 500"), error: true });
    expect(done.rounds[0].tools[1].seconds).toBe(2); // first seen at 3 s, finished at 5 s
    expect(finalAnswer(done)).toBe("2+3 is **5**; the weather is unknown.");
    expect(steps(done).map((r) => r.id)).toEqual(["t1"]);
    expect(done.answer).toBe("Let me check.2+3 is **5**; the weather is unknown.");
    expect(done).toMatchObject({ id: "m1", conversationId: "c1", taskId: "k1", totalTokens: 42, latency: 1.5 });
    expect(done.citations).toEqual([{ position: 1, datasetName: "kb", documentName: "a.md", score: 0.9, content: "seg" }]);
  });

  it("gives a ReAct final answer (no thought row of its own) a round after the tool round", () => {
    const m = run([
      thought({ id: "t1", position: 1 }),
      thought({ id: "t1", position: 1, thought: "I should add.", tool: "calculator", tool_input: '{"calculator": {}}' }),
      thought({ id: "t1", position: 1, thought: "I should add.", tool: "calculator", tool_input: '{"calculator": {}}', observation: '{"calculator": "5"}' }),
      text("It is 5."),
      { event: "message_end", ...head, id: "m1", metadata: {} },
    ]);
    expect(m.rounds).toHaveLength(2);
    expect(finalAnswer(m)).toBe("It is 5.");
    expect(steps(m)).toHaveLength(1);
  });

  it("marks a stopped answer, an error in plain words, and replaces an answer", () => {
    const stopping = { ...run([text("Half")]), stopRequested: true };
    expect(applyEvent(stopping, { event: "message_end", ...head, id: "m1" }, 0).status).toBe("stopped");

    const failed = run([{ event: "error", ...head, status: 429, code: "too_many_requests", message: "Too many requests." }]);
    expect(failed.status).toBe("error");
    expect(failed.error).toMatch(/busy/);

    const replaced = run([text("bad words"), { event: "message_replace", ...head, answer: "Sorry." }]);
    expect(finalAnswer(replaced)).toBe("Sorry.");
  });

  it("keeps tool files and ignores pings and unknown events", () => {
    const file: DifyEvent = { event: "message_file", ...head, id: "f1", type: "image", belongs_to: "assistant", url: "/files/tools/abc.png?sign=x" };
    const pdf: DifyEvent = { ...file, id: "f2", type: "document", url: "/files/tools/3f2504e0-4f89-41d3-9a0c-0305e82c3301.pdf?sign=x" };
    expect(run([pdf]).files[0].name).toBe("file.pdf"); // a tool file's URL carries only its id
    const m = run([text("A chart:"), file, file, { event: "ping" }, { event: "tts_message", audio: "" }]);
    expect(m.files).toEqual([{ id: "f1", type: "image", url: "/files/tools/abc.png?sign=x", name: "abc.png", mimeType: "", belongsTo: "assistant" }]);
    expect(m.answer).toBe("A chart:");
  });
});

describe("tool calls", () => {
  it("pairs calls of the same tool in one round by loopwright's keys", () => {
    expect(uniqueKeys(["a", "a", "b", "a"])).toEqual(["a", "a_1", "b", "a_2"]);
    expect(uniqueKeys(["a", "a", "a_1"])).toEqual(["a", "a_2", "a_1"]);
    const calls = toolCalls(
      { tool: "search;search", tool_input: '{"search": {"q": "x"}, "search_1": {"q": "y"}}', observation: '{"search": "X", "search_1": "Y"}' },
      [],
      null,
    );
    expect(calls.map((c) => [c.input, c.output])).toEqual([
      [{ q: "x" }, "X"],
      [{ q: "y" }, "Y"],
    ]);
  });
});

describe("messageFromHistory", () => {
  it("shows a stored message as streaming showed it", () => {
    const m = messageFromHistory({
      id: "m1",
      conversation_id: "c1",
      query: "What is 2+3?",
      answer: "Let me check.It is 5.",
      feedback: { rating: "like" },
      status: "normal",
      retriever_resources: [],
      message_files: [
        { id: "u1", filename: "cat.png", type: "image", url: "/files/u1/file-preview?sign=s", mime_type: "image/png", belongs_to: "user" },
        { id: "f1", filename: "chart.png", type: "image", url: "/files/tools/f1.png?sign=s", mime_type: "image/png", belongs_to: "assistant" },
      ],
      agent_thoughts: [
        { id: "t2", position: 2, thought: "It is 5.", tool: "", tool_input: "", observation: "", files: [] },
        { id: "t1", position: 1, thought: "Let me check.", tool: "calculator", tool_input: '{"calculator": {"expression": "2+3"}}', observation: '{"calculator": "5"}', files: [] },
      ],
    });
    expect(m.rounds.map((r) => r.id)).toEqual(["t1", "t2"]);
    expect(finalAnswer(m)).toBe("It is 5.");
    expect(m.rounds[0].tools[0]).toMatchObject({ name: "calculator", output: "5", seconds: null });
    expect(m.feedback).toBe("like");
    expect(m.userFiles.map((f) => f.name)).toEqual(["cat.png"]);
    expect(m.files.map((f) => f.name)).toEqual(["chart.png"]);
    expect(m.status).toBe("done");
  });

  it("adds the answer of a ReAct run (stored without a row of its own) and shows a failed message's error", () => {
    const react = messageFromHistory({
      answer: "It is 5.",
      agent_thoughts: [{ id: "t1", position: 1, thought: "Add.", tool: "calculator", tool_input: "{}", observation: "{}" }],
    });
    expect(finalAnswer(react)).toBe("It is 5.");
    const failed = messageFromHistory({ answer: "", status: "error", error: "Model timed out", agent_thoughts: [] });
    expect(failed).toMatchObject({ status: "error", error: "Model timed out" });
  });

  it("shows a stopped answer whose round was saved without its text, marked as stopped by this browser", () => {
    const item = {
      id: "m9",
      answer: "Sentence 1. Sentence",
      status: "normal",
      agent_thoughts: [{ id: "t1", position: 1, thought: "", tool: "", tool_input: "", observation: "" }],
    };
    expect(finalAnswer(messageFromHistory(item))).toBe("Sentence 1. Sentence");
    expect(messageFromHistory(item).status).toBe("done");
    expect(messageFromHistory(item, new Set(["m9"])).status).toBe("stopped");
  });
});

describe("withLoggedTimes", () => {
  it("takes each call's time and failure from the agent log, round by round", () => {
    const done = run(TWO_TOOLS);
    expect(needsLoggedTimes(done)).toBe(true); // timed by the page's clock so far
    const logged = withLoggedTimes(done, [
      { tool_calls: [{ status: "success", time_cost: 0.25 }, { status: "error", time_cost: 1.5 }] },
      { tool_calls: [] },
    ]);
    expect(logged.rounds[0].tools.map((t) => [t.seconds, t.error])).toEqual([
      [0.25, false],
      [1.5, true],
    ]);
    expect(needsLoggedTimes(logged)).toBe(false);
    expect(needsLoggedTimes(run(TWO_TOOLS.slice(0, 3)))).toBe(false); // still running
  });
});

describe("plans and progress", () => {
  it("reads a plan's checklist as it ticks", () => {
    const plan = "I will add, then double.\n\nPlan:\n- [x] s1: add (calculator)\n- [!] s2: double it (calculator)\n- [-] s3: say it (echo)\n- [ ] s4: wait (clock)";
    expect(planOf(plan)).toEqual({
      intro: "I will add, then double.",
      items: [
        { id: "s1", task: "add", tool: "calculator", mark: "done" },
        { id: "s2", task: "double it", tool: "calculator", mark: "failed" },
        { id: "s3", task: "say it", tool: "echo", mark: "skipped" },
        { id: "s4", task: "wait", tool: "clock", mark: "pending" },
      ],
    });
    expect(planOf("Plan:\nnot a checklist")).toBeNull();
    expect(planOf("just a thought")).toBeNull();
  });

  it("keeps a running call's progress lines apart from its result", () => {
    const call = { id: "r1", tool: "maths", tool_input: JSON.stringify({ maths: { query: "6*7" } }) };
    const m = run([
      thought(call),
      thought({ ...call, observation: JSON.stringify({ maths: "calling calculator" }), tool_progress: ["maths"] }),
      thought({ ...call, observation: JSON.stringify({ maths: "calling calculator" }), tool_progress: ["maths"] }),
      thought({ ...call, observation: JSON.stringify({ maths: "calculator: 42" }), tool_progress: ["maths"] }),
    ]);
    expect(m.rounds[0].tools[0]).toMatchObject({ output: null, progress: ["calling calculator", "calculator: 42"] });
    const done = applyEvent(m, thought({ ...call, observation: JSON.stringify({ maths: "It is 42." }) }), 9000);
    expect(done.rounds[0].tools[0]).toMatchObject({ output: "It is 42.", progress: ["calling calculator", "calculator: 42"] });
    expect(done.rounds[0].tools[0].seconds).toBe(9); // first seen at 0 ms
  });
});

describe("a question the agent asks (ask_user)", () => {
  const form = (over: Record<string, unknown> = {}) => ({
    form_token: "tok",
    form_content: "Which city?\n\n{{#$output.answer#}}",
    inputs: [{ type: "paragraph", output_variable_name: "answer", default: null }],
    actions: [{ id: "submit", title: "Submit", button_style: "primary" }],
    ...over,
  });
  const required = (data: unknown): DifyEvent => ({ event: "human_input_required", task_id: "k1", data });

  it("pauses the message with the question, and the filled form resumes it", () => {
    const paused = applyEvent(newMessage("Plan"), required(form()), 0);
    expect(paused.status).toBe("paused");
    expect(paused.question).toEqual({ token: "tok", text: "Which city?", options: [] });
    const resumed = applyEvent(paused, { event: "human_input_form_filled", task_id: "k1", data: {} }, 1);
    expect(resumed.status).toBe("streaming");
    expect(resumed.question).toBeNull();
  });

  it("takes a select's options, and leaves a tool approval's form alone", () => {
    const select = { type: "select", output_variable_name: "answer", options: ["metric", 3, "imperial"] };
    const m = applyEvent(newMessage("Convert"), required(form({ inputs: [select] })), 0);
    expect(m.question?.options).toEqual(["metric", "imperial"]);
    const approval = form({
      inputs: [{ type: "paragraph", output_variable_name: "reason" }],
      actions: [{ id: "approve" }, { id: "reject" }],
    });
    const start = newMessage("Compute");
    expect(applyEvent(start, required(approval), 0)).toBe(start);
    expect(applyEvent(start, required("nonsense"), 0)).toBe(start);
  });
});
