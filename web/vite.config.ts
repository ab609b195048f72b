// One Vite build for every page of the web UI. Each page is its own HTML entry (multi-page app), so a
// page ships only its own code: add a page by adding a folder with an index.html and a line in `pages`.
// The output goes into the Python package (src/loopwright/server/static), which the server serves under
// /static/ and which ships in the wheel, so a plain `pip install` serves the UI without Node.
import { resolve } from "node:path";
import preact from "@preact/preset-vite";
import { defineConfig } from "vitest/config";

const pages = {
  chat: resolve(__dirname, "chat/index.html"),
  console: resolve(__dirname, "console/index.html"),
  // the chat page's hidden frame that draws Mermaid diagrams (src/renderer/main.ts)
  renderer: resolve(__dirname, "renderer/index.html"),
};

export default defineConfig({
  plugins: [preact()],
  base: "/static/",
  build: {
    outDir: resolve(__dirname, "../src/loopwright/server/static"),
    emptyOutDir: true,
    // No inline scripts or styles (the pages are served with a CSP without 'unsafe-inline').
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    rollupOptions: { input: pages },
    target: "es2020",
    sourcemap: false,
  },
  test: {
    include: ["tests/**/*.test.ts"],
    environment: "node",
  },
});
