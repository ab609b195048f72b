// Dify's Node SDK (npm dify-client) through a pause for approvals, as a Dify 1.13 client handles human
// input: it streams a chat, reads the form of the human_input_required event, submits "approve" and
// follows the resumed run on /workflow/{task_id}/events. The SDK has no human-input calls of its own
// (2.3.2 is the newest published), so those go through its sendRequest, as its completion call does.
// Prints one JSON object for the Python test to check.
import { ChatClient } from "dify-client";

const client = new ChatClient(process.env.DIFY_API_KEY, process.env.DIFY_BASE_URL);
const out = {};

function readStream(response) {
  return new Promise((resolve, reject) => {
    let text = "";
    response.data.on("data", (chunk) => { text += chunk.toString("utf8"); });
    response.data.on("end", () => resolve(text));
    response.data.on("error", reject);
  });
}

function events(text) {
  return text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
}

async function call(name, fn) {
  try {
    const response = await fn();
    out[name] = { status: response.status, body: response.data };
  } catch (error) {
    out[name] = { status: error.response?.status ?? null, body: error.response?.data ?? String(error) };
  }
}

const paused = events(await readStream(await client.createChatMessage({}, "What is 2 + 3?", "alice", true)));
out.paused = paused.map((e) => e.event);
const required = paused.find((e) => e.event === "human_input_required");
const token = required.data.form_token;
await call("form", () => client.sendRequest("GET", `/form/human_input/${token}`));
const approve = out.form.body.user_actions.find((a) => a.id === "approve");
await call("submit", () => client.sendRequest(
  "POST", `/form/human_input/${token}`, { inputs: {}, action: approve.id, user: "alice" },
));
const resumed = await client.sendRequest(
  "GET", `/workflow/${required.workflow_run_id}/events`, null, { user: "alice" }, true,
);
out.resumed = events(await readStream(resumed));
await call("again", () => client.sendRequest(
  "POST", `/form/human_input/${token}`, { inputs: {}, action: "approve", user: "alice" },
));
console.log(JSON.stringify(out));
