// highlight.js languages beyond the few in the first load (shared/markdown.ts), each its own small chunk
// fetched the first time a code block names it. A name is a highlight.js language file (rust, go,
// cpp, …) or one of the common aliases below; anything else stays plain text.
import type { HLJSApi, LanguageFn } from "highlight.js";
import { changed } from "./loaded";

type LanguageModule = { default: LanguageFn };

const FILES = import.meta.glob<LanguageModule>([
  "/node_modules/highlight.js/es/languages/*.js",
  "!/node_modules/highlight.js/es/languages/*.js.js",
]);

const byName = new Map<string, () => Promise<LanguageModule>>();
for (const [path, load] of Object.entries(FILES)) {
  byName.set(path.slice(path.lastIndexOf("/") + 1, -".js".length), load);
}

// Aliases a code fence commonly uses for a language whose file has another name (the language's own
// aliases are registered with it once loaded).
const ALIASES: Record<string, string> = {
  rs: "rust",
  golang: "go",
  "c++": "cpp",
  cc: "cpp",
  h: "c",
  hpp: "cpp",
  cs: "csharp",
  "c#": "csharp",
  kt: "kotlin",
  rb: "ruby",
  ps1: "powershell",
  pwsh: "powershell",
  docker: "dockerfile",
  hs: "haskell",
  ex: "elixir",
  exs: "elixir",
  erl: "erlang",
  ml: "ocaml",
  fs: "fsharp",
  pl: "perl",
  m: "objectivec",
  objc: "objectivec",
  toml: "ini",
  proto: "protobuf",
  gql: "graphql",
  vue: "xml",
  patch: "diff",
  mk: "makefile",
  tex: "latex",
  jl: "julia",
};

const loading = new Map<string, Promise<boolean>>();

/** The highlight.js file name for a fence's language, when one can be loaded. */
export function loadableLanguage(name: string): string | null {
  const file = ALIASES[name] ?? name;
  return byName.has(file) ? file : null;
}

/** Load the language `name` into `hljs` (once); true when it is now known. Views render again when
 * it arrives. */
export function loadLanguage(hljs: HLJSApi, name: string): Promise<boolean> {
  const file = loadableLanguage(name);
  if (file === null) return Promise.resolve(false);
  let pending = loading.get(file);
  if (pending === undefined) {
    pending = byName.get(file)!().then(
      (m) => {
        hljs.registerLanguage(file, m.default);
        if (file !== name && hljs.getLanguage(name) === undefined) hljs.registerAliases([name], { languageName: file });
        changed();
        return true;
      },
      () => false,
    );
    loading.set(file, pending);
  }
  return pending;
}
