import { describe, expect, it } from "vitest";
import { duration, plural, strategyName, toolTitle } from "../src/shared/format";

describe("format", () => {
  it("says durations as people read them", () => {
    expect(duration(0.0002)).toBe("< 1 ms");
    expect(duration(0.24)).toBe("240 ms");
    expect(duration(1.44)).toBe("1.4 s");
    expect(duration(125)).toBe("2 min 05 s");
    expect(duration(null)).toBe("");
    expect(duration(-1)).toBe("");
  });

  it("counts in words", () => {
    expect(plural(1, "message")).toBe("1 message");
    expect(plural(2, "key")).toBe("2 keys");
    expect(plural(0, "reply", "replies")).toBe("0 replies");
  });

  it("names strategies and tools", () => {
    expect(strategyName("function_call")).toBe("Function calling");
    expect(strategyName("react")).toBe("ReAct");
    expect(strategyName("some_new_one")).toBe("Some new one");
    expect(toolTitle("current_time", "current_time")).toBe("Current time");
    expect(toolTitle("code", "Code Interpreter")).toBe("Code Interpreter");
  });
});
