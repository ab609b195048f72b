import { describe, expect, it } from "vitest";
import { answeredByName, handoffNames, handoffOf } from "../src/chat/handoff";
import { applyEvent, finalAnswer, messageFromHistory, newMessage, steps, type MessageView } from "../src/chat/state";
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
const run = (events: DifyEvent[]): MessageView => events.reduce((m, e, i) => applyEvent(m, e, i), newMessage("My invoice?"));

const CALL = {
  tool: "handoff_to_billing-app",
  tool_input: JSON.stringify({ "handoff_to_billing-app": { reason: "an invoice question" } }),
};
const LINE = "Billing answers from here on: an invoice question";

// The server's order (app/dify/stream.py): the handing round with its call, its observation, the
// handoff's own row with answered_by, then the target's round streaming its answer.
const LIVE: DifyEvent[] = [
  thought({ id: "t1", position: 1, ...CALL }),
  thought({ id: "t1", position: 1, ...CALL, observation: JSON.stringify({ "handoff_to_billing-app": "Handed over to billing-app." }) }),
  thought({ id: "t2", position: 2, thought: LINE, answered_by: "billing-app" }),
  text("Your invoice "),
  text("is paid."),
  thought({ id: "t3", position: 3, thought: "Your invoice is paid." }),
];

describe("handoffs", () => {
  it("shows the handoff's row as a line, keeps the target's streamed text out of it, and names the answer's app", () => {
    const m = run(LIVE);
    expect(m.rounds).toHaveLength(3);
    expect(handoffOf(m.rounds[1])).toEqual({ appId: "billing-app", name: "Billing", reason: "an invoice question" });
    expect(m.rounds[1].text).toBe(LINE);
    expect(finalAnswer(m)).toBe("Your invoice is paid.");
    expect(steps(m)).toHaveLength(2);
    expect(answeredByName(m, new Map(), "front-app")).toBe("Billing");
  });

  it("never takes the line for the answer while the target has not written yet", () => {
    const m = run(LIVE.slice(0, 3));
    expect(finalAnswer(m)).toBe("");
    expect(steps(m)).toHaveLength(2);
  });

  it("reads the same from the history, where the row has no answered_by", () => {
    const stored = {
      id: "m1",
      query: "My invoice?",
      answer: "Your invoice is paid.",
      answered_by: "billing-app",
      agent_thoughts: [
        { id: "t1", position: 1, thought: "", ...CALL, observation: JSON.stringify({ "handoff_to_billing-app": "Handed over to billing-app." }) },
        { id: "t2", position: 2, thought: LINE, tool: "", tool_input: "", observation: "" },
        { id: "t3", position: 3, thought: "Your invoice is paid.", tool: "", tool_input: "", observation: "" },
      ],
    };
    const m = messageFromHistory(stored);
    expect(handoffOf(m.rounds[1])?.name).toBe("Billing");
    expect(finalAnswer(m)).toBe("Your invoice is paid.");
    // the next message stays with Billing: named from the earlier line
    const next = messageFromHistory({ id: "m2", query: "And the next one?", answer: "Due Friday.", answered_by: "billing-app", agent_thoughts: [] });
    expect(answeredByName(next, handoffNames([m, next]), "front-app")).toBe("Billing");
    // a line that only looks like one (no handoff call before it) is a plain thought
    const plain = messageFromHistory({ id: "m3", query: "q", answer: "", agent_thoughts: [{ id: "x", position: 1, thought: "Bob answers from here on." }] });
    expect(handoffOf(plain.rounds[0])).toBeNull();
  });

  it("shows no badge for the page's own app", () => {
    const back = messageFromHistory({ id: "m4", query: "q", answer: "Hi", answered_by: "front-app", agent_thoughts: [] });
    expect(answeredByName(back, new Map([["front-app", "Front"]]), "front-app")).toBeNull();
    expect(answeredByName(newMessage("q"), new Map(), "front-app")).toBeNull();
  });
});
