import { describe, expect, it } from "vitest";
import type { AppConfig, MessageLog } from "../src/console/api";
import {
  chatLink,
  configOf,
  draftOf,
  forgetToken,
  href,
  missingFields,
  newField,
  parseRoute,
  readToken,
  saveToken,
  TOKEN_SLOT,
  variablesOf,
  withAppTool,
  modeOf,
  withMode,
  versionMark,
} from "../src/console/logic";

class MemoryStorage implements Storage {
  private items = new Map<string, string>();
  get length() {
    return this.items.size;
  }
  clear() {
    this.items.clear();
  }
  getItem(key: string) {
    return this.items.get(key) ?? null;
  }
  key(i: number) {
    return [...this.items.keys()][i] ?? null;
  }
  removeItem(key: string) {
    this.items.delete(key);
  }
  setItem(key: string, value: string) {
    this.items.set(key, value);
  }
}

describe("the admin token", () => {
  it("is kept in the tab's session storage, trimmed, and forgotten", () => {
    const session = new MemoryStorage();
    expect(readToken(session)).toBeNull();
    saveToken(session, "  secret \n");
    expect(session.getItem(TOKEN_SLOT)).toBe("secret");
    expect(readToken(session)).toBe("secret");
    forgetToken(session);
    expect(readToken(session)).toBeNull();
  });
});

describe("routes", () => {
  it("read the hash and write it back", () => {
    expect(parseRoute("")).toEqual({ page: "apps" });
    expect(parseRoute("#/apps/new")).toEqual({ page: "new-app" });
    expect(parseRoute("#/apps/abc")).toEqual({ page: "app", id: "abc", tab: "settings" });
    expect(parseRoute("#/apps/abc/logs")).toEqual({ page: "app", id: "abc", tab: "logs" });
    expect(parseRoute("#/apps/abc/nonsense")).toEqual({ page: "app", id: "abc", tab: "settings" });
    expect(parseRoute("#/knowledge")).toEqual({ page: "knowledge" });
    expect(parseRoute("#/knowledge/d1")).toEqual({ page: "dataset", id: "d1" });
    for (const hash of ["#/apps", "#/apps/new", "#/apps/x%2Fy/keys", "#/knowledge", "#/knowledge/d1"]) {
      expect(href(parseRoute(hash))).toBe(hash);
    }
  });
});

describe("instruction variables", () => {
  it("are found once each, in order, with spaces allowed inside the braces", () => {
    expect(variablesOf("Hi {{name}}, from {{ city }} — {{name}} again; {{ 1bad }} {{ok_2}}")).toEqual(["name", "city", "ok_2"]);
  });
  it("name the form fields still missing", () => {
    expect(missingFields("{{a}} {{b}}", [newField("a")])).toEqual(["b"]);
    expect(missingFields("no variables", [])).toEqual([]);
  });
});

describe("a draft", () => {
  const config: Partial<AppConfig> = {
    model: "openai:gpt-4o-mini",
    strategy: "react",
    instruction: "Help {{name}}.",
    user_input_form: [{ variable: "name", label: "Name", type: "text-input", required: true, options: [] }],
    tools: [{ name: "current_time", form_values: { timezone: "UTC" } }],
    toolsets: [
      { type: "openapi", spec: "https://x.example/openapi.json" },
      { type: "app", app_id: "other", max_depth: 2 },
      { type: "knowledge", datasets: ["d1"] },
    ],
    max_iterations: 5,
    max_active_requests: null,
    history_message_limit: 8,
    opening_statement: "Hello!",
    suggested_questions: ["One?", "Two?"],
    file_upload: { enabled: true },
    callbacks: ["pkg.mod:Cb"],
  };

  it("gives back the configuration it was made from", () => {
    expect(configOf(draftOf("n", "d", config))).toEqual({
      ...config,
      toolsets: [
        { type: "openapi", spec: "https://x.example/openapi.json" },
        { type: "app", app_id: "other", max_depth: 2 },
        { type: "knowledge", datasets: ["d1"] },
      ],
    });
  });

  it("turns its text fields into lists and numbers", () => {
    const draft = draftOf("n", "", config);
    draft.suggestedQuestions = " A? \n\n B? ";
    draft.maxActiveRequests = "3";
    draft.historyLimit = "";
    draft.knowledge = [];
    draft.form = [{ ...newField("pick"), type: "select", options: ["a", " ", "b"] }, { ...newField("x"), options: ["stale"] }];
    const out = configOf(draft);
    expect(out.suggested_questions).toEqual(["A?", "B?"]);
    expect(out.max_active_requests).toBe(3);
    expect(out.history_message_limit).toBeNull();
    expect(out.toolsets).toEqual([
      { type: "openapi", spec: "https://x.example/openapi.json" },
      { type: "app", app_id: "other", max_depth: 2 },
    ]);
    expect(out.user_input_form?.map((f) => f.options)).toEqual([["a", "b"], []]);
  });

  it("names the field that is wrong", () => {
    const draft = draftOf("n", "", config);
    draft.maxIterations = "2.5";
    expect(() => configOf(draft)).toThrow(/Most tool rounds/);
    const json = draftOf("n", "", config);
    json.otherToolsets = "[{";
    expect(() => configOf(json)).toThrow(/not valid JSON/);
  });
});

describe("apps as tools", () => {
  it("are added once and removed by id, other fields kept", () => {
    const kept = { type: "app", app_id: "a", max_depth: 3 };
    expect(withAppTool([kept], "b", true)).toEqual([kept, { type: "app", app_id: "b" }]);
    expect(withAppTool([kept], "a", true)).toEqual([kept]);
    expect(withAppTool([kept, { type: "app", app_id: "b" }], "a", false)).toEqual([{ type: "app", app_id: "b" }]);
  });
});

describe("the chat link", () => {
  it("carries the key in the fragment, which never reaches the server", () => {
    expect(chatLink("app 1", "app-k/y")).toBe("/chat/app%201#key=app-k%2Fy");
  });
});

describe("the kind of app", () => {
  it("a new text generator gets Dify's query field and an instruction that shows it", () => {
    const draft = withMode(draftOf("sum", "", { model: "local", instruction: "Sum up:" }), "completion");
    expect(modeOf(draft)).toBe("completion");
    expect(draft.form.map((f) => [f.variable, f.type, f.required])).toEqual([["query", "paragraph", true]]);
    expect(draft.instruction).toBe("Sum up:\n\n{{query}}");
    expect(configOf(draft).mode).toBe("completion");
  });

  it("a chat app sends no tools, whatever the draft held", () => {
    const draft = withMode(
      draftOf("c", "", { model: "local", tools: [{ name: "calculator", form_values: {} }], toolsets: [{ type: "knowledge", datasets: ["d"] }] }),
      "chat",
    );
    const config = configOf(draft);
    expect(config.mode).toBe("chat");
    expect(config.tools).toEqual([]);
    expect(config.toolsets).toEqual([]);
    expect(draft.form).toEqual([]); // only a text generator gets the query field
  });
});

describe("a logged message's versions", () => {
  const log = (id: string, query: string, ids: string[]): MessageLog =>
    ({ id, query, versions: { parent_id: null, ids } }) as unknown as MessageLog;

  it("says which version a message is and how it came to be", () => {
    const first = log("a", "Plan a trip.", ["a", "b", "c"]);
    const again = log("b", "Plan a trip.", ["a", "b", "c"]);
    const edited = log("c", "Plan a short trip.", ["a", "b", "c"]);
    const byId = new Map([first, again, edited].map((m) => [m.id, m]));
    expect(versionMark(first, byId)).toEqual({ n: 1, total: 3, kind: "first" });
    expect(versionMark(again, byId)).toEqual({ n: 2, total: 3, kind: "regenerated" });
    expect(versionMark(edited, byId)).toEqual({ n: 3, total: 3, kind: "edited" });
    expect(versionMark(log("d", "Hi", ["d"]), byId)).toBeNull(); // one version: nothing to mark
  });
});
