// The app's other wires: where each one listens, with a copy button and a short example (the key of
// the Keys section goes where the examples say app-…). Paths as docs/protocols.md gives them.
import { t } from "./i18n";
import { Copy, Section } from "./ui";

export interface Wire {
  name: string;
  url: string;
  what: string;
  example: string;
}

/** The wires of one app on the server at ``origin`` (the console's own origin). */
export function wiresOf(origin: string, appId: string): Wire[] {
  const bearer = `-H "Authorization: Bearer app-…"`;
  return [
    {
      name: "Dify Service API",
      url: `${origin}/v1`,
      what: t("wire_dify"),
      example: `curl ${origin}/v1/chat-messages ${bearer} -H "Content-Type: application/json" \\\n  -d '{"query": "Hello", "inputs": {}, "user": "alice", "response_mode": "streaming"}'`,
    },
    {
      name: "OpenAI Chat Completions",
      url: `${origin}/v1`,
      what: t("wire_openai"),
      example: `from openai import OpenAI\nclient = OpenAI(base_url="${origin}/v1", api_key="app-…")\nreply = client.chat.completions.create(model="app", messages=[{"role": "user", "content": "Hello"}])`,
    },
    {
      name: "OpenAI Responses",
      url: `${origin}/v1/responses`,
      what: t("wire_responses"),
      example: `client = OpenAI(base_url="${origin}/v1", api_key="app-…")\nresponse = client.responses.create(model="app", input="Hello")`,
    },
    {
      name: "A2A agent card",
      url: `${origin}/a2a/${appId}/.well-known/agent-card.json`,
      what: t("wire_a2a", { url: `${origin}/a2a/${appId}` }),
      example: `curl ${origin}/a2a/${appId}/.well-known/agent-card.json ${bearer}`,
    },
    {
      name: "MCP",
      url: `${origin}/mcp`,
      what: t("wire_mcp"),
      example: `{"mcpServers": {"app": {"url": "${origin}/mcp", "headers": {"Authorization": "Bearer app-…"}}}}`,
    },
    {
      name: "AG-UI",
      url: `${origin}/ag-ui`,
      what: t("wire_agui"),
      example: `curl -N ${origin}/ag-ui ${bearer} -H "Content-Type: application/json" \\\n  -d '{"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "Hello"}], "tools": [], "context": [], "state": {}, "forwardedProps": {}}'`,
    },
  ];
}

export function Wires({ appId }: { appId: string }) {
  return (
    <Section title={t("wires_title")}>
      <p class="muted">{t("wires_note")}</p>
      <ul class="wires" aria-label={t("wires")}>
        {wiresOf(window.location.origin, appId).map((w) => (
          <li key={w.name} class="wire">
            <h3>{w.name}</h3>
            <p class="row">
              <code class="wire-url">{w.url}</code>
              <Copy text={w.url} label={t("copy_url", { name: w.name })} />
            </p>
            <p class="muted small">{w.what}</p>
            <details>
              <summary>{t("example")}</summary>
              <pre class="code-block">{w.example}</pre>
              <Copy text={w.example} label={t("copy_example", { name: w.name })} />
            </details>
          </li>
        ))}
      </ul>
    </Section>
  );
}
