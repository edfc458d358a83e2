"""axe-core, Deque's accessibility engine, run in the tests' headless Chromium, offline.

axe-core's own script comes from its npm package, pinned with its checksum in
``tests/axe/package-lock.json`` and installed by the README's test command
(``npm ci --prefix tests/axe``). It is evaluated in the page through the DevTools protocol,
which no Content-Security-Policy stops, so the pages are checked with their own policies on
(the service's pages run no script, the feedback page is sandboxed): nothing of a page is
loosened to check it.

``assert_accessible(page, what)`` fails on any violation of the WCAG 2.0, 2.1 and 2.2 A and
AA rules and prints each with its rule, the elements, and the fix axe suggests.
"""

from __future__ import annotations

import json
from pathlib import Path

AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]  # WCAG 2.1 AA, and 2.2's new AA rule


def axe_source() -> str:
    assert AXE.is_file(), f"no {AXE}: run `npm ci --prefix tests/axe` (the README's test command does)"
    return AXE.read_text()


def axe_run(page, *, tags: list[str] = WCAG_AA, context=None) -> dict:
    """axe-core's results on the page as it is now (its rules of ``tags`` only)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source())
    options = {"runOnly": {"type": "tag", "values": tags}, "resultTypes": ["violations"]}
    page.evaluate("([context, options]) => { window.__axe = null; axe.run(context || document, options)"
                  ".then(found => { window.__axe = found; }, failed => { window.__axe = {error: String(failed)}; }); }",
                  [context, options])
    try:  # Playwright's own clock: a page whose scripts never run (a sandbox) fails here, not hangs
        page.wait_for_function("() => window.__axe !== null", timeout=60_000)
    except Exception as error:
        raise AssertionError(f"axe-core did not finish on {page.url}: a sandboxed page runs none of its "
                             "scripts (see unsandboxed())") from error
    found = page.evaluate("() => window.__axe")
    assert "error" not in found, found
    return found


def axe_violations(page, **kw) -> list[dict]:
    return axe_run(page, **kw)["violations"]


def describe(violations: list[dict], most: int = 8) -> str:
    """Each violation: its rule, impact and fix, and the first elements it was found on."""
    lines = []
    for violation in violations:
        nodes = violation["nodes"]
        lines.append(f"- {violation['id']} ({violation['impact']}, {len(nodes)} elements): {violation['help']}"
                     f"\n  fix: {violation['helpUrl']}")
        for node in nodes[:most]:
            summary = " ".join((node.get("failureSummary") or "").split())
            lines.append(f"    {json.dumps(node['target'])}: {node['html'][:140]}\n      {summary[:300]}")
        if len(nodes) > most:
            lines.append(f"    ... and {len(nodes) - most} more")
    return "\n".join(lines)


def assert_accessible(page, what: str, **kw) -> None:
    """No WCAG A/AA violation on ``page`` (``what`` names it in the failure)."""
    violations = axe_violations(page, **kw)
    assert not violations, f"axe-core found {len(violations)} WCAG A/AA rules broken on {what} ({page.url}):\n" \
                           + describe(violations)


def unsandboxed(page, url_glob: str) -> None:
    """The pages at ``url_glob`` as served, less the ``sandbox`` of their Content-Security-Policy:
    a sandboxed page runs no script at all, not even axe's timers (which the DevTools protocol
    starts). The rest of the policy, and the page, stay as they are."""
    def fulfil(route):
        response = route.fetch()
        headers = dict(response.headers)
        policy = headers.get("content-security-policy", "")
        headers["content-security-policy"] = "; ".join(part for part in policy.split("; ") if part != "sandbox")
        route.fulfill(response=response, headers=headers)
    page.route(url_glob, fulfil)


# What sticks out sideways: elements that reach past the viewport's right edge outside every
# box that scrolls by itself; and every box that does scroll sideways but the keyboard cannot
# reach (not focusable, no focusable content): a formula (<math>, inline ones too) included.
REFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth + 1;
  const inScrollBox = e => { for (let a = e.parentElement; a && a !== document.body; a = a.parentElement)
    if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(a).overflowX)) return true; return false; };
  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
    + (typeof e.className === 'string' && e.className ? '.' + e.className.trim().split(/\\s+/).join('.') : '')
    + ' "' + (e.textContent || '').trim().slice(0, 40) + '"';
  const all = [...document.body.querySelectorAll('*')];
  return {
    page: document.documentElement.scrollWidth - width,
    outside: all.filter(e => { const r = e.getBoundingClientRect();
      return r.width > 0 && r.right > width + 1 && !inScrollBox(e); }).slice(0, 10).map(name),
    unreachable: all.filter(e => scrolls(e) && e.tabIndex < 0
      && !e.querySelector('a[href], [tabindex="0"], button, input')).slice(0, 10).map(name),
  };
}"""


def reflow_problems(page) -> dict:
    """What of the page does not reflow at its viewport (REFLOW); empty lists when it does."""
    found = page.evaluate(REFLOW)
    return {key: value for key, value in found.items() if value}


FOCUS = """() => { const e = document.activeElement; const s = getComputedStyle(e);
  return {tag: e.tagName.toLowerCase(), id: e.id, text: (e.textContent || e.value || '').trim().slice(0, 50),
          type: e.getAttribute('type'), outline: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2,
          inView: e.getBoundingClientRect().bottom > 0 && e.getBoundingClientRect().top < innerHeight}; }"""


def tab(page) -> dict:
    """Press Tab; what has the focus then, and whether its focus ring is drawn (2 px or more)."""
    page.keyboard.press("Tab")
    return page.evaluate(FOCUS)
