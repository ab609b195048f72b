// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { renderMarkdown } from "../src/shared/markdown";

describe("renderMarkdown", () => {
  it("renders Markdown with highlighted code and tables", () => {
    const html = renderMarkdown("**bold**\n\n```python\nprint('hi')\n```\n\n| a |\n|---|\n| 1 |");
    expect(html).toContain("<strong>bold</strong>");
    expect(html).toContain('<span class="hljs-built_in">print</span>');
    expect(html).toContain("<td>1</td>");
  });

  it("shows the model's HTML as text and keeps no script, handler or javascript: link", () => {
    const html = renderMarkdown('<img src=x onerror="alert(1)"> <script>alert(2)</script> [x](javascript:alert(3))');
    const box = document.createElement("div");
    box.innerHTML = html;
    expect(box.querySelectorAll("img, script, [onerror], a[href^='javascript']")).toHaveLength(0);
    expect(box.textContent).toContain('<img src=x onerror="alert(1)">'); // shown, as written
    expect(box.querySelector("a")?.textContent).toBe("x");
  });

  it("opens links in a new tab without a referrer", () => {
    expect(renderMarkdown("[docs](https://example.com)")).toContain('rel="noopener noreferrer nofollow"');
  });
});
