import { describe, expect, it } from "vitest";
import { plainError } from "../src/shared/errors";

describe("a budget's refusal in plain words", () => {
  it("says whether to wait for tomorrow, start a new chat, or that the answer was cut", () => {
    const daily = "Budget exceeded: budget.end_user_daily_tokens (100000) is used up today.";
    const conversation = "Budget exceeded: budget.conversation_tokens (5000) is used up.";
    const run = "Budget exceeded: budget.run_tokens (20000) would be crossed; the run was stopped.";
    expect(plainError("budget_exceeded", daily, 429)).toContain("today's budget");
    expect(plainError("budget_exceeded", conversation, 429)).toContain("start a new chat");
    expect(plainError("budget_exceeded", run, 429)).toContain("spending limit");
    expect(plainError("too_many_requests", "", 429)).toContain("busy");
  });
});
