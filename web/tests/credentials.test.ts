// @vitest-environment jsdom
import { beforeEach, describe, expect, it } from "vitest";
import { appIdOf, readCredentials } from "../src/chat/credentials";
import { formFields, formProblem, initialValues } from "../src/chat/form";

describe("readCredentials", () => {
  beforeEach(() => {
    sessionStorage.clear();
    localStorage.clear();
  });

  it("takes the key from the link's fragment into this app's session slot and off the address bar", () => {
    history.replaceState(null, "", "/chat/app-one?x=1#key=app-secret");
    const c = readCredentials(location, history, sessionStorage, localStorage);
    expect(c).toMatchObject({ appId: "app-one", key: "app-secret" });
    expect(c?.user).toMatch(/^web-[0-9a-f]{32}$/);
    expect(location.hash).toBe("");
    expect(location.href).not.toContain("app-secret");
    expect(location.search).toBe("?x=1");
    // A reload (no fragment) finds the key and the same end user again.
    const again = readCredentials(location, history, sessionStorage, localStorage);
    expect(again).toEqual(c);
  });

  it("uses a key only for the app it came with", () => {
    history.replaceState(null, "", "/chat/app-one#key=app-secret");
    readCredentials(location, history, sessionStorage, localStorage);
    history.replaceState(null, "", "/chat/app-two");
    expect(readCredentials(location, history, sessionStorage, localStorage)).toBeNull();
  });

  it("takes a key from the query string too, and removes it", () => {
    history.replaceState(null, "", "/chat/app-one?key=app-q");
    expect(readCredentials(location, history, sessionStorage, localStorage)?.key).toBe("app-q");
    expect(location.search).toBe("");
  });

  it("reads the app id from the path only", () => {
    expect(appIdOf("/chat/3f2c-9a")).toBe("3f2c-9a");
    expect(appIdOf("/chat/")).toBeNull();
    expect(appIdOf("/chat/a/b")).toBeNull();
  });
});

describe("the input form", () => {
  const form = [
    { "text-input": { label: "Name", variable: "name", required: true, max_length: 5, default: "" } },
    { select: { label: "Tone", variable: "tone", required: false, options: ["dry", "warm"], default: "warm" } },
    { number: { label: "Age", variable: "age", required: false, default: null } },
    { checkbox: { label: "Short", variable: "short", required: true, default: true } },
    { unknown: { variable: "x" } },
  ];

  it("reads Dify's entries and their defaults", () => {
    const fields = formFields(form);
    expect(fields.map((f) => [f.type, f.variable])).toEqual([
      ["text-input", "name"],
      ["select", "tone"],
      ["number", "age"],
      ["checkbox", "short"],
    ]);
    expect(initialValues(fields)).toEqual({ tone: "warm", short: true });
  });

  it("says what is wrong in words", () => {
    const fields = formFields(form);
    expect(formProblem(fields, {})).toBe("Please fill in “Name”.");
    expect(formProblem(fields, { name: "toolong" })).toBe("“Name” can be at most 5 characters.");
    expect(formProblem(fields, { name: "Ann", age: "x" })).toBe("“Age” must be a number.");
    expect(formProblem(fields, { name: "Ann", age: "7", short: false })).toBeNull();
  });
});
