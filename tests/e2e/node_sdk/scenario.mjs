// Runs Dify's Node SDK (npm dify-client) against the server at DIFY_BASE_URL with DIFY_API_KEY and
// prints one JSON object with what each call returned (status and body), for the Python test to check.
import { ChatClient } from "dify-client";

const client = new ChatClient(process.env.DIFY_API_KEY, process.env.DIFY_BASE_URL);
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

await call("parameters", () => client.getApplicationParameters("alice"));
await call("blocking", () => client.createChatMessage({}, "What is 2 + 3?", "alice"));
const conversationId = out.blocking.body?.conversation_id;
const messageId = out.blocking.body?.message_id;
try {
  const streamed = await client.createChatMessage({}, "Sure?", "alice", true, conversationId);
  out.streaming = { status: streamed.status, type: streamed.headers["content-type"], text: await readStream(streamed) };
} catch (error) {
  out.streaming = { status: error.response?.status ?? null, text: String(error) };
}
await call("messages", () => client.getConversationMessages("alice", conversationId));
await call("conversations", () => client.getConversations("alice"));
await call("feedback", () => client.messageFeedback(messageId, "like", "alice"));
await call("rename", () => client.renameConversation(conversationId, "Sums", "alice"));
await call("completion", () => new ChatClient(process.env.DIFY_API_KEY, process.env.DIFY_BASE_URL)
  .sendRequest("POST", "/completion-messages", { inputs: {}, user: "alice" }));
await call("delete", () => client.deleteConversation(conversationId, "alice"));
await call("afterDelete", () => client.getConversations("alice"));
const bad = new ChatClient("app-not-a-key", process.env.DIFY_BASE_URL);
await call("badKey", () => bad.getApplicationParameters("alice"));
console.log(JSON.stringify(out));
