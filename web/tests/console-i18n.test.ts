import { afterEach, describe, expect, it } from "vitest";
import { CATALOGUE, count, t } from "../src/console/i18n";
import { ConsoleError } from "../src/console/api";
import { setLanguage } from "../src/shared/lang";
import { plainError } from "../src/shared/errors";

afterEach(() => setLanguage("en"));

describe("the console's catalogue", () => {
  it("has every text in every language, with the same placeholders", () => {
    const placeholders = (s: string) => (s.match(/\{\w+\}/g) ?? []).sort().join();
    for (const [key, english] of Object.entries(CATALOGUE.en)) {
      for (const lang of ["zh", "ja"] as const) {
        const text = CATALOGUE[lang][key as keyof typeof CATALOGUE.en];
        expect(text, `${lang}.${key}`).toBeTruthy();
        expect(placeholders(text), `${lang}.${key}`).toBe(placeholders(english));
      }
    }
  });

  it("speaks the page's language, counts included", () => {
    expect(count(1, "key")).toBe("1 key");
    expect(count(3, "tool")).toBe("3 tools");
    setLanguage("zh");
    expect(t("nav_apps")).toBe("应用");
    expect(t("saved_as", { n: 4 })).toBe("已保存为版本 4。");
    setLanguage("ja");
    expect(count(2, "key")).toBe("キー 2 個");
  });

  it("says the console's and the chat page's errors in the page's language", () => {
    setLanguage("ja");
    expect(new ConsoleError(401, "unauthorized", "").message).toContain("管理者トークンが無効です");
    expect(new ConsoleError(418, "teapot", "").message).toBe("リクエストに失敗しました（418）。");
    expect(new ConsoleError(400, "invalid_param", "name is required").message).toBe("name is required"); // the server's own words
    setLanguage("zh");
    expect(plainError("network", "", 0)).toBe("无法连接服务器。请检查网络后重试。");
    expect(plainError("budget_exceeded", "daily_tokens", 429)).toBe("助手今天的额度已用完，请明天再试。");
  });
});
