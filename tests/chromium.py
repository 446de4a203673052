"""Headless Debian Chromium as the browser tests drive it (fixtures: tests/web/views/conftest.py)
and bench/screenshots.py uses it: the binary and its flags, the two screen sizes, logging in,
and the accessibility checks run in the page."""

from __future__ import annotations

import os
from pathlib import Path

# Playwright's sync API keeps an event loop in this thread; the ORM calls the tests make between
# browser steps are plain synchronous code, so Django's async guard must stand aside.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# How long a page action or locator waits before it fails (Playwright's default is 30 s; 10 s
# was too little once under CI's load, two cores shared with coverage and a qemu guest).
WAIT_MS = 30_000
SCREENSHOTS = Path(__file__).resolve().parent.parent / "var" / "screenshots"


def log_in(page, username: str, password: str) -> None:
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_selector(f"text={username}")


# The two screens issue 26 judges every page at: a laptop and a phone.
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


# Contrast of every visible text against the background it is drawn on (WCAG 2.x relative
# luminance; 4.5:1, or 3:1 for large text), and the page's landmarks.
ACCESSIBILITY = """() => {
  const parse = (c) => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number); return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const blend = (top, bottom) => ({r: top.r * top.a + bottom.r * (1 - top.a), g: top.g * top.a + bottom.g * (1 - top.a),
    b: top.b * top.a + bottom.b * (1 - top.a), a: 1});
  const background = (el) => { const layers = [];
    for (let e = el; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor); if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; } }
    let bg = {r: 255, g: 255, b: 255, a: 1}; for (const c of layers.reverse()) bg = blend(c, bg); return bg; };
  const low = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode; const text = node.textContent.trim(); if (!text) continue;
    const el = node.parentElement; const s = getComputedStyle(el); const box = el.getBoundingClientRect();
    if (!box.width || !box.height || s.visibility === "hidden" || el.closest("[hidden], .visually-hidden, svg, option")) continue;
    if (el.closest(".skip-link") && box.top < 0) continue;
    const fg = parse(s.color); if (!fg) continue;
    const bg = background(el); const fgc = blend(fg, bg);
    const a = lum(fgc), b = lum(bg); const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(s.fontSize); const bold = parseInt(s.fontWeight) >= 700;
    const need = (size >= 24 || (bold && size >= 18.66)) ? 3 : 4.5;
    if (ratio < need - 0.005) low.push(`${ratio.toFixed(2)}:1 ${s.color} on rgb(${bg.r|0},${bg.g|0},${bg.b|0}): ${text.slice(0, 40)}`);
  }
  const count = (sel) => document.querySelectorAll(sel).length;
  const landmarks = [];
  if (count("main, [role=main]") !== 1) landmarks.push(`${count("main, [role=main]")} main landmarks`);
  if (!count("header, [role=banner]")) landmarks.push("no banner");
  if (!count("nav, [role=navigation]")) landmarks.push("no navigation");
  const skip = document.querySelector("a.skip-link");
  if (!skip || !document.querySelector(skip.getAttribute("href"))) landmarks.push("no skip link to the content");
  const unlabelled = [...document.querySelectorAll("input:not([type=hidden]), select, textarea")].filter(
    (e) => !e.hidden && !e.labels?.length && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby"));
  if (unlabelled.length) landmarks.push(`unlabelled fields: ${unlabelled.map((e) => e.name).join(", ")}`);
  return {contrast: [...new Set(low)].slice(0, 8), landmarks};
}"""


def accessibility_problems(page) -> list[str]:
    got = page.evaluate(ACCESSIBILITY)
    return [f"contrast {c}" for c in got["contrast"]] + got["landmarks"]


def log_in_as(page, username: str, password: str) -> None:
    """Logs in through the form (its own wait for the name in the header)."""
    log_in(page, username, password)
