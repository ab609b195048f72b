import { describe, expect, it } from "vitest";
import { CATALOGUE, count, pickLanguage, setLanguage, t } from "../src/shared/i18n";

describe("i18n", () => {
  it("picks the first of the browser's languages it has, else English", () => {
    expect(pickLanguage(["ja-JP", "en-US"])).toBe("ja");
    expect(pickLanguage(["fr-FR", "zh-CN"])).toBe("zh");
    expect(pickLanguage(["de-DE"])).toBe("en");
    expect(pickLanguage([])).toBe("en");
  });

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

  it("fills in values and counts", () => {
    setLanguage("en");
    expect(t("delete", { name: "Trip" })).toBe("Delete Trip");
    expect(count(1, "round")).toBe("1 round");
    expect(count(2, "tool_call")).toBe("2 tool calls");
    setLanguage("ja");
    expect(t("send")).toBe("送信");
    setLanguage("en");
  });
});
