// The web UI's language: English, Chinese (simplified) or Japanese — the languages Dify's web app ships
// first — picked from the browser's languages (English when none of them fits), and `translator`, which
// makes a page's `t` from its catalogue (the chat page's: shared/i18n.ts; the console's:
// console/i18n.ts, so neither page ships the other's words).

export type Lang = "en" | "zh" | "ja";

/** The first of the browser's languages the catalogue has (zh-*, ja-*, en-*), else English. */
export function pickLanguage(languages: readonly string[]): Lang {
  for (const tag of languages) {
    const base = tag.toLowerCase().split("-")[0];
    if (base === "zh" || base === "ja" || base === "en") return base;
  }
  return "en";
}

let lang: Lang = typeof navigator === "undefined" ? "en" : pickLanguage(navigator.languages ?? [navigator.language]);

export function language(): Lang {
  return lang;
}

export function setLanguage(next: Lang): void {
  lang = next;
}

export type Vars = Record<string, string | number>;

/** `t(key, vars)` for a catalogue: the text of `key` in the page's language, {placeholders} filled in. */
export function translator<K extends string>(catalogue: Record<Lang, Record<K, string>>): (key: K, vars?: Vars) => string {
  return (key, vars = {}) =>
    catalogue[lang][key].replace(/\{(\w+)\}/g, (all, name: string) => (name in vars ? String(vars[name]) : all));
}
