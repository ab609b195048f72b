// Server-Sent Events as Dify's Service API sends them: `data: {json}` frames and `event: ping` frames
// (which carry no data: a spec-following EventSource would drop them, so this parser keeps any frame
// with a name or data). A sans-I/O parser: feed it text as it arrives, in chunks cut anywhere.

export interface SseFrame {
  event: string; // "message" when the frame names none
  data: string;
  id: string | null; // the last event id seen so far (it carries over, as the SSE spec says)
}

export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private event = "";
  private lastId: string | null = null;
  private pendingCR = false;

  /** The frames completed by `chunk`. */
  feed(chunk: string): SseFrame[] {
    let text = chunk;
    if (this.pendingCR) {
      // A "\r\n" split between two chunks: the "\r" already ended the line.
      if (text.startsWith("\n")) text = text.slice(1);
      this.pendingCR = false;
    }
    this.buffer += text;
    const frames: SseFrame[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (match === null) break;
      if (match[0] === "\r" && match.index === this.buffer.length - 1) {
        this.pendingCR = true; // may be the first half of "\r\n"
      }
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const frame = this.line(line);
      if (frame !== null) frames.push(frame);
    }
    return frames;
  }

  /** At the end of the stream: a last frame that was not closed by a blank line. */
  flush(): SseFrame[] {
    const frames: SseFrame[] = [];
    if (this.buffer !== "") {
      const frame = this.line(this.buffer);
      this.buffer = "";
      if (frame !== null) frames.push(frame);
    }
    const last = this.dispatch();
    if (last !== null) frames.push(last);
    return frames;
  }

  private line(line: string): SseFrame | null {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return null; // a comment (keep-alive)
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.event = value;
    else if (field === "id" && !value.includes("\0")) this.lastId = value;
    return null; // "retry" and unknown fields are ignored
  }

  private dispatch(): SseFrame | null {
    if (this.data.length === 0 && this.event === "") return null;
    const frame = { event: this.event || "message", data: this.data.join("\n"), id: this.lastId };
    this.data = [];
    this.event = "";
    return frame;
  }
}

/** One event of a Dify stream: its JSON object, `{event: "ping"}` for a ping, or null for a frame
 * that is not a Dify event (skipped: one bad frame does not end an answer). */
export function difyEvent(frame: SseFrame): DifyEvent | null {
  if (frame.event === "ping") return { event: "ping" };
  if (frame.data === "") return null;
  try {
    const value: unknown = JSON.parse(frame.data);
    if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
    const event = (value as { event?: unknown }).event;
    if (typeof event !== "string") return null;
    return value as DifyEvent;
  } catch {
    return null;
  }
}

/** A Dify stream event; the fields read are typed where the view reads them (state.ts). */
export interface DifyEvent {
  event: string;
  [field: string]: unknown;
}

/** Reads a streamed response body, calling `onEvent` for each Dify event as it arrives; resolves when
 * the stream ends. The last event id seen is passed along (for a re-attach after a drop). */
export async function readDifyStream(
  body: ReadableStream<Uint8Array>,
  onEvent: (event: DifyEvent, id: string | null) => void,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  const emit = (frames: SseFrame[]) => {
    for (const frame of frames) {
      const event = difyEvent(frame);
      if (event !== null) onEvent(event, frame.id);
    }
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      emit(parser.feed(decoder.decode(value, { stream: true })));
    }
    emit(parser.feed(decoder.decode()));
    emit(parser.flush());
  } finally {
    reader.releaseLock();
  }
}
