import { describe, expect, it } from "vitest";
import { difyEvent, readDifyStream, SseParser, type DifyEvent } from "../src/shared/sse";

// A real stream from loopwright's server (one function-calling round with a tool, then the answer),
// framed as Dify frames it: `data: {json}\n\n`, with a ping in between.
const STREAM =
  'data: {"event":"agent_thought","id":"t1","position":1,"thought":"","tool":"","tool_input":"","observation":"","message_id":"m1","conversation_id":"c1","task_id":"k1"}\n\n' +
  'data: {"event":"agent_message","answer":"Let me ","message_id":"m1","conversation_id":"c1","task_id":"k1"}\n\n' +
  "event: ping\n\n" +
  'data: {"event":"agent_message","answer":"compute. ✓","message_id":"m1","conversation_id":"c1","task_id":"k1"}\n\n' +
  'data: {"event":"message_end","id":"m1","metadata":{"usage":{"total_tokens":12}},"conversation_id":"c1","task_id":"k1"}\n\n';

function parseAll(chunks: string[]): DifyEvent[] {
  const parser = new SseParser();
  const frames = chunks.flatMap((c) => parser.feed(c)).concat(parser.flush());
  return frames.map(difyEvent).filter((e): e is DifyEvent => e !== null);
}

describe("SseParser", () => {
  it("reads Dify's data frames and its ping frames (which carry no data)", () => {
    const events = parseAll([STREAM]);
    expect(events.map((e) => e.event)).toEqual([
      "agent_thought",
      "agent_message",
      "ping",
      "agent_message",
      "message_end",
    ]);
    expect(events[3].answer).toBe("compute. ✓");
  });

  it("gives the same events however the stream is cut into chunks", () => {
    const whole = parseAll([STREAM]);
    for (let size = 1; size <= 17; size += 1) {
      const chunks: string[] = [];
      for (let i = 0; i < STREAM.length; i += size) chunks.push(STREAM.slice(i, i + size));
      expect(parseAll(chunks)).toEqual(whole);
    }
  });

  it("accepts CRLF and CR line ends, also split between chunks", () => {
    const crlf = STREAM.replace(/\n/g, "\r\n");
    const halves = crlf.split("\r");
    const chunks = halves.map((h, i) => (i < halves.length - 1 ? `${h}\r` : h));
    expect(parseAll(chunks)).toEqual(parseAll([STREAM]));
    expect(parseAll([STREAM.replace(/\n/g, "\r")])).toEqual(parseAll([STREAM]));
  });

  it("joins multi-line data, skips comments and keeps the last event id", () => {
    const parser = new SseParser();
    const frames = parser.feed(': keep-alive\nid: 7\nevent: custom\ndata: {"a":\ndata: 1}\n\ndata:x\n\n');
    expect(frames).toEqual([
      { event: "custom", data: '{"a":\n1}', id: "7" },
      { event: "message", data: "x", id: "7" },
    ]);
  });

  it("skips frames that are not Dify events instead of failing the stream", () => {
    const events = parseAll(["data: not json\n\n", "data: [1,2]\n\n", 'data: {"no":"event"}\n\n', STREAM]);
    expect(events).toHaveLength(5);
  });

  it("dispatches a last frame the server did not close with a blank line", () => {
    expect(parseAll(['data: {"event":"message_end","id":"m"}'])).toEqual([{ event: "message_end", id: "m" }]);
  });
});

describe("readDifyStream", () => {
  it("reads a streamed body with multi-byte characters split across chunks", async () => {
    const bytes = new TextEncoder().encode(STREAM);
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 3) controller.enqueue(bytes.slice(i, i + 3));
        controller.close();
      },
    });
    const seen: DifyEvent[] = [];
    await readDifyStream(body, (e) => seen.push(e));
    expect(seen.map((e) => e.event)).toContain("message_end");
    expect(seen.find((e) => e.answer === "compute. ✓")).toBeTruthy();
  });
});
