// The public Service API (/v1) as the chat page uses it: every call with the app's key and the
// browser's end-user id; errors become ApiError with a plain sentence.
import { ApiError } from "./errors";

export interface Conversation {
  id: string;
  name: string;
  inputs: Record<string, unknown>;
  introduction: string;
  created_at: number;
  updated_at: number;
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
  limit: number;
}

export interface UploadedFile {
  id: string;
  name: string;
  size: number;
  extension: string;
  mime_type: string;
}

type Query = Record<string, string | number | undefined>;

export class ServiceClient {
  constructor(
    private readonly key: string,
    readonly user: string,
    private readonly base = "/v1",
  ) {}

  private url(path: string, query: Query = {}): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return `${this.base}${path}${qs ? `?${qs}` : ""}`;
  }

  /** A raw request: the response when it is 2xx, else an ApiError. */
  async fetch(method: string, path: string, init: { query?: Query; json?: unknown; body?: BodyInit; signal?: AbortSignal; headers?: Record<string, string> } = {}): Promise<Response> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.key}`, ...init.headers };
    let body = init.body;
    if (init.json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(init.json);
    }
    let response: Response;
    try {
      response = await fetch(this.url(path, init.query), { method, headers, body, signal: init.signal, cache: "no-store" });
    } catch (e) {
      if (e instanceof DOMException && e.name === "AbortError") throw e;
      throw new ApiError(0, "network", String(e));
    }
    if (!response.ok) throw await errorOf(response);
    return response;
  }

  async json<T>(method: string, path: string, init: { query?: Query; json?: unknown; body?: BodyInit } = {}): Promise<T> {
    const response = await this.fetch(method, path, init);
    return (response.status === 204 ? null : await response.json()) as T;
  }

  parameters(): Promise<Record<string, unknown>> {
    return this.json("GET", "/parameters");
  }

  /** The app's name and description (and its id, which the page checks against its address). */
  info(): Promise<{ id?: string; name: string; description: string; mode?: string }> {
    return this.json("GET", "/info");
  }

  /** How the app is shown (Dify's web-app settings): its emoji icon and the footer line. */
  site(): Promise<{ icon?: string | null; icon_background?: string | null; custom_disclaimer?: string | null }> {
    return this.json("GET", "/site");
  }

  conversations(lastId?: string): Promise<Page<Conversation>> {
    return this.json("GET", "/conversations", { query: { user: this.user, limit: 50, last_id: lastId } });
  }

  rename(conversationId: string, name: string): Promise<Conversation> {
    return this.json("POST", `/conversations/${encodeURIComponent(conversationId)}/name`, {
      json: { name, auto_generate: false, user: this.user },
    });
  }

  async deleteConversation(conversationId: string): Promise<void> {
    await this.fetch("DELETE", `/conversations/${encodeURIComponent(conversationId)}`, { json: { user: this.user } });
  }

  /** A page of one thread of the conversation: the newest one, or through `messageId` (ours: one of a
   * message's versions). */
  messages(conversationId: string, firstId?: string, messageId?: string): Promise<Page<Record<string, unknown>>> {
    return this.json("GET", "/messages", {
      query: { conversation_id: conversationId, user: this.user, limit: 100, first_id: firstId, message_id: messageId },
    });
  }

  /** Starts a streamed answer; the response's body is the event stream. */
  send(body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
    return this.fetch("POST", "/chat-messages", {
      // auto_generate_name: the app's model may name a new conversation (when the app is set to)
      json: { auto_generate_name: true, ...body, user: this.user, response_mode: "streaming" },
      signal,
      headers: { Accept: "text/event-stream" },
    });
  }

  /** Submits a human-input form (Dify 1.13's POST /v1/form/human_input/{token}): the run resumes
   * on the server; its events are read with `workflowEvents`. */
  async submitForm(token: string, inputs: Record<string, string>, action: string): Promise<void> {
    await this.json("POST", `/form/human_input/${encodeURIComponent(token)}`, { json: { inputs, action, user: this.user } });
  }

  /** The events of a run resumed by a form (GET /v1/workflow/{task_id}/events), to its end or next pause. */
  workflowEvents(taskId: string, signal?: AbortSignal): Promise<Response> {
    return this.fetch("GET", `/workflow/${encodeURIComponent(taskId)}/events`, {
      query: { user: this.user },
      signal,
      headers: { Accept: "text/event-stream" },
    });
  }

  /** Re-attaches to a running answer's events after `lastEventId`, where the server offers it
   * (GET /v1/chat-messages/{task_id}/events); null where it does not (404/405). */
  async reattach(taskId: string, lastEventId: string | null, signal?: AbortSignal): Promise<Response | null> {
    try {
      return await this.fetch("GET", `/chat-messages/${encodeURIComponent(taskId)}/events`, {
        query: { user: this.user },
        signal,
        headers: { Accept: "text/event-stream", ...(lastEventId ? { "Last-Event-ID": lastEventId } : {}) },
      });
    } catch (e) {
      if (e instanceof ApiError && (e.status === 404 || e.status === 405)) return null;
      throw e;
    }
  }

  /** Starts a completion app's answer to the form's `inputs` (Dify's POST /v1/completion-messages);
   * the response's body is the event stream. */
  complete(inputs: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
    return this.fetch("POST", "/completion-messages", {
      json: { inputs, user: this.user, response_mode: "streaming" },
      signal,
      headers: { Accept: "text/event-stream" },
    });
  }

  stopCompletion(taskId: string): Promise<unknown> {
    return this.json("POST", `/completion-messages/${encodeURIComponent(taskId)}/stop`, { json: { user: this.user } });
  }

  stop(taskId: string): Promise<unknown> {
    return this.json("POST", `/chat-messages/${encodeURIComponent(taskId)}/stop`, { json: { user: this.user } });
  }

  feedback(messageId: string, rating: "like" | "dislike" | null, content: string): Promise<unknown> {
    return this.json("POST", `/messages/${encodeURIComponent(messageId)}/feedbacks`, {
      json: { rating, content, user: this.user },
    });
  }

  async suggested(messageId: string): Promise<string[]> {
    const r = await this.json<{ data: unknown }>("GET", `/messages/${encodeURIComponent(messageId)}/suggested`, {
      query: { user: this.user },
    });
    return Array.isArray(r.data) ? r.data.filter((q): q is string => typeof q === "string") : [];
  }

  agentLog(messageId: string): Promise<AgentLog> {
    return this.json("GET", `/messages/${encodeURIComponent(messageId)}/agent-log`, { query: { user: this.user } });
  }

  /** An answer read aloud by the app's voice model (POST /v1/text-to-audio), as audio. */
  async textToAudio(messageId: string): Promise<Blob> {
    const response = await this.fetch("POST", "/text-to-audio", { json: { message_id: messageId, user: this.user } });
    return response.blob();
  }

  /** What a recording says (POST /v1/audio-to-text, the app's speech model). */
  async audioToText(audio: Blob, name: string): Promise<string> {
    const form = new FormData();
    form.append("file", audio, name);
    form.append("user", this.user);
    const r = await this.json<{ text?: unknown }>("POST", "/audio-to-text", { body: form });
    return typeof r.text === "string" ? r.text : "";
  }

  upload(file: File): Promise<UploadedFile> {
    const form = new FormData();
    form.append("file", file, file.name);
    form.append("user", this.user);
    return this.json("POST", "/files/upload", { body: form });
  }
}

export interface AgentLog {
  meta: Record<string, unknown>;
  iterations: {
    tokens: number;
    thought: string;
    created_at: string;
    tool_calls: { status: string; error: string | null; time_cost: number; tool_name: string; tool_label?: unknown; tool_input: unknown; tool_output: unknown }[];
  }[];
}

async function errorOf(response: Response): Promise<ApiError> {
  try {
    const body = (await response.json()) as { code?: unknown; message?: unknown };
    return new ApiError(
      response.status,
      typeof body.code === "string" ? body.code : "",
      typeof body.message === "string" ? body.message : response.statusText,
    );
  } catch {
    return new ApiError(response.status, "", response.statusText);
  }
}
