// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import hljs from "highlight.js/lib/core";
import { renderMarkdown } from "../src/shared/markdown";
import { chartOptions, chartSvg, draw } from "../src/shared/rich/diagrams";
import { loadLanguage, loadableLanguage } from "../src/shared/rich/languages";
import { onRenderersChanged } from "../src/shared/rich/loaded";
import { mathReady } from "../src/shared/rich/math";

// jsdom has no canvas: ECharts then measures text by its own estimate, as in a server.
HTMLCanvasElement.prototype.getContext = (() => null) as never;

const dom = (html: string): HTMLElement => {
  const box = document.createElement("div");
  box.innerHTML = html;
  return box;
};

describe("math", () => {
  it("shows the source until KaTeX is loaded, then MathML, in Dify's four forms", async () => {
    const text = "Inline $a^2+b^2$ and \\(x_1\\).\n\n$$\n\\frac{1}{2}\n$$\n\n\\[\\sqrt{y}\\]";
    let changes = 0;
    const stop = onRenderersChanged(() => (changes += 1));
    renderMarkdown(text); // starts the load
    await mathReady();
    stop();
    expect(changes).toBeGreaterThan(0);
    const box = dom(renderMarkdown(text));
    expect(box.querySelectorAll("math")).toHaveLength(4);
    expect(box.querySelectorAll("math[display='block']")).toHaveLength(2);
    expect(box.querySelector(".math-source")).toBeNull();
    expect(box.querySelector("math")?.querySelector("msup")).not.toBeNull();
  });

  it("leaves prices and code alone", async () => {
    await mathReady();
    const box = dom(renderMarkdown("It costs $5 and $10, or `$x$` in code."));
    expect(box.querySelector("math")).toBeNull();
    expect(box.textContent).toContain("$5 and $10");
    expect(box.querySelector("code")?.textContent).toBe("$x$");
  });

  it("keeps trust off: no link, class or script from TeX, and bad TeX does not throw", async () => {
    await mathReady();
    const box = dom(
      renderMarkdown("$\\href{javascript:alert(1)}{x}$ $\\htmlClass{evil}{y}$ $\\url{javascript:alert(2)}$ $\\frac{1}{$ $<img src=x onerror=alert(3)>$"),
    );
    expect(box.querySelectorAll("a, img, script, [onerror], .evil")).toHaveLength(0);
    expect([...box.querySelectorAll("*")].some((el) => [...el.attributes].some((a) => /javascript:/i.test(a.value)))).toBe(false);
  });
});

describe("highlight languages on demand", () => {
  it("knows highlight.js's languages and common aliases, and nothing else", () => {
    expect(loadableLanguage("rust")).toBe("rust");
    expect(loadableLanguage("rs")).toBe("rust");
    expect(loadableLanguage("golang")).toBe("go");
    expect(loadableLanguage("c++")).toBe("cpp");
    expect(loadableLanguage("no-such-language")).toBeNull();
    expect(loadableLanguage("../../evil")).toBeNull();
  });

  it("highlights a block once its language has loaded", async () => {
    const text = "```rs\nfn main() { let x = 1; }\n```";
    expect(renderMarkdown(text)).not.toContain("hljs-keyword");
    expect(await loadLanguage(hljs, "rs")).toBe(true);
    const html = renderMarkdown(text);
    expect(html).toContain('<span class="hljs-keyword">fn</span>');
    expect(html).toContain('<span class="code-lang">rs</span>');
  });
});

describe("charts", () => {
  it("takes JSON options only, without links or javascript: strings", () => {
    expect(() => chartOptions("{series: [function(){}]}")).toThrow();
    expect(() => chartOptions("[1, 2]")).toThrow();
    const options = chartOptions(
      JSON.stringify({ title: { text: "T", link: "javascript:alert(1)", sublink: "https://x" }, series: [{ name: " javascript:alert(2)" }] }),
    );
    expect(options).toEqual({ title: { text: "T" }, series: [{ name: "" }] });
  });

  it("draws a chart to an SVG document", async () => {
    const svg = await chartSvg(
      JSON.stringify({ xAxis: { type: "category", data: ["Mon", "Tue"] }, yAxis: { type: "value" }, series: [{ type: "bar", data: [3, 7] }] }),
    );
    expect(svg.startsWith("<svg")).toBe(true);
    expect(svg).toContain("Mon");
    expect(svg).not.toMatch(/<script|javascript:/i);
  });

  it("shows a closed ```echarts block as an image when drawn, and a bad one as code with the reason", async () => {
    const options = JSON.stringify({ xAxis: { type: "category", data: ["A"] }, yAxis: {}, series: [{ type: "line", data: [1] }] });
    const block = "```echarts\n" + options + "\n```";
    expect(dom(renderMarkdown(block)).querySelector("img")).toBeNull(); // being drawn
    await draw("echarts", options);
    const img = dom(renderMarkdown(block)).querySelector("figure.diagram img");
    expect(img?.getAttribute("src")).toMatch(/^data:image\/svg\+xml;charset=utf-8,%3Csvg/);
    expect(img?.getAttribute("alt")).toBe("Chart");
    renderMarkdown("```echarts\nnot json\n```");
    await draw("echarts", "not json");
    const bad = dom(renderMarkdown("```echarts\nnot json\n```"));
    expect(bad.querySelector("pre.code")?.textContent).toContain("not json");
    expect(bad.querySelector(".diagram-error")).not.toBeNull();
  });

  it("does not draw a block still streaming", () => {
    const box = dom(renderMarkdown('```echarts\n{"series": ['));
    expect(box.querySelector("img")).toBeNull();
    expect(box.querySelector("pre.code")).not.toBeNull();
  });
});
