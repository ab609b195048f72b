// Runs Dify's Node SDK (npm dify-client) against a chat app (DIFY_CHAT_KEY) and a completion app
// (DIFY_COMPLETION_KEY) at DIFY_BASE_URL, and prints one JSON object with what each call returned.
import { ChatClient, CompletionClient, DifyClient } from "dify-client";

const base = process.env.DIFY_BASE_URL;
const chat = new ChatClient(process.env.DIFY_CHAT_KEY, base);
const completion = new CompletionClient(process.env.DIFY_COMPLETION_KEY, base);
const out = {};

async function call(name, fn) {
  try {
    const response = await fn();
    out[name] = { status: response.status, body: response.data };
  } catch (error) {
    out[name] = { status: error.response?.status ?? null, body: error.response?.data ?? String(error) };
  }
}

function readStream(response) {
  return new Promise((resolve, reject) => {
    let text = "";
    response.data.on("data", (chunk) => { text += chunk.toString("utf8"); });
    response.data.on("end", () => resolve(text));
    response.data.on("error", reject);
  });
}

async function streamed(name, fn) {
  try {
    const response = await fn();
    out[name] = { status: response.status, type: response.headers["content-type"], text: await readStream(response) };
  } catch (error) {
    out[name] = { status: error.response?.status ?? null, text: String(error) };
  }
}

await call("chatInfo", () => new DifyClient(process.env.DIFY_CHAT_KEY, base).sendRequest("GET", "/info"));
await call("chatBlocking", () => chat.createChatMessage({}, "Hello?", "alice"));
const conversationId = out.chatBlocking.body?.conversation_id;
await streamed("chatStreaming", () => chat.createChatMessage({}, "And then?", "alice", true, conversationId));
await call("chatMessages", () => chat.getConversationMessages("alice", conversationId));
await call("completionParameters", () => completion.getApplicationParameters("alice"));
await call("completionBlocking", () => completion.createCompletionMessage({ A: "PostgreSQL", default_input: "all users" }, "alice"));
await streamed("completionStreaming", () => completion.createCompletionMessage({ A: "MySQL", default_input: "all orders" }, "alice", true));
await call("completionOnChatKey", () => new CompletionClient(process.env.DIFY_CHAT_KEY, base).createCompletionMessage({}, "alice"));
console.log(JSON.stringify(out));
