"""Drive the ctxgraph web explorer in a real browser (headless Chromium through Selenium).

Against a running `ctxgraph serve` over the demo store (and a `ctxgraph ui` on the same store
for the owner's Health view), this loads every view, asks the demo's failure question and
checks that the failed event and its cause are on the page, clicks through to a neighbour,
checks that a restricted reader's pages never hold a hidden event's text (while an admin's
do), checks that every request the page made went to the server's own origin, and saves a
screenshot of each view. Run by .ci/browser.sh.
"""

import argparse
import json
import sys
import urllib.request
from pathlib import Path
from urllib.parse import quote, urlsplit

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

QUESTION = "Why did session sess-0003 fail?"
FAILED, CAUSE = "Event:evt-000032", "Event:evt-000027"
TOPIC = "ci runners"


def post(url, key, body):
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        return json.load(resp)


def seed(base, key):
    """Two decisions on one topic with outcomes, and a fact, for the Decisions and Entity views."""
    first = post(f"{base}/v1/memories", key, {
        "kind": "decision", "topic": TOPIC, "content": "Run migration checks on the shared ci-runner pool",
        "reasoning": "no extra cost", "created_at": "2026-11-15T09:00:00Z"})["id"]
    post(f"{base}/v1/memories/{quote(first)}/outcome", key, {
        "outcome": "failed", "reason": "the pool's job queue was full during the dry run"})
    second = post(f"{base}/v1/memories", key, {
        "kind": "decision", "topic": TOPIC, "content": "Give migration checks a dedicated ci-runner executor",
        "reasoning": "the shared pool timed out", "supersedes": first, "created_at": "2026-11-17T09:00:00Z"})["id"]
    post(f"{base}/v1/memories/{quote(second)}/outcome", key, {"outcome": "success", "reason": "dry runs pass"})
    post(f"{base}/v1/facts", key, {
        "subject": "ci-runner", "predicate": "depends_on", "object": "build-cluster",
        "object_type": "concept", "source": "runbook", "valid_from": "2026-11-01"})
    # Two owners under a single-valued predicate: a contradiction.
    for team, source in (("platform-team", "runbook"), ("release-team", "wiki")):
        post(f"{base}/v1/facts", key, {
            "subject": "ci-runner", "predicate": "belongs_to", "object": team,
            "object_type": "project", "source": source})


class Explorer:
    def __init__(self, base, shots):
        options = Options()
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1000"):
            options.add_argument(flag)
        options.binary_location = "/usr/bin/chromium"
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        self.base = base
        self.shots = shots
        self.origins = set()

    def wait(self, css, timeout=30):
        return WebDriverWait(self.driver, timeout).until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))

    def wait_all(self, css, timeout=30):
        WebDriverWait(self.driver, timeout).until(lambda d: d.find_elements(By.CSS_SELECTOR, css))
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def open(self, base, hash_path, ready):
        """Go to a view of the explorer at `base` and wait for `ready` (a CSS selector)."""
        self.driver.get(f"{base}/{hash_path}")
        el = self.wait(ready)
        self.note_requests(base)
        return el

    def note_requests(self, base):
        """Every resource the page loaded so far must come from the server's own origin."""
        own = urlsplit(base).netloc
        names = self.driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
            ".concat(performance.getEntriesByType('navigation').map(e => e.name));")
        for name in names:
            netloc = urlsplit(name).netloc
            self.origins.add(netloc)
            assert netloc == own, f"the page requested {name}, outside the server's origin {own}"

    def use_key(self, key):
        """Enter a key in the page's key form (kept in sessionStorage for the tab)."""
        self.driver.find_element(By.ID, "forget").click()
        field = self.driver.find_element(By.ID, "key")
        field.send_keys(key)
        self.driver.find_element(By.CSS_SELECTOR, "#keyform button[type=submit]").click()
        WebDriverWait(self.driver, 30).until(
            lambda d: "tenant" in d.find_element(By.ID, "who").text)

    def shot(self, name):
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def security_errors(self):
        return [e["message"] for e in self.driver.get_log("browser")
                if e["level"] == "SEVERE" and ("Content Security Policy" in e["message"] or "Refused" in e["message"])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="the base URL of ctxgraph serve")
    ap.add_argument("--admin-key", required=True)
    ap.add_argument("--reader-key", required=True)
    ap.add_argument("--owner-url", required=True, help="the URL ctxgraph ui printed (with #key=)")
    ap.add_argument("--hidden-id", required=True)
    ap.add_argument("--hidden-text", required=True, help="text only the hidden event holds")
    ap.add_argument("--hidden-question", required=True, help="words that find the hidden event")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    shots = Path(args.out)
    shots.mkdir(parents=True, exist_ok=True)
    base = args.url.rstrip("/")
    seed(base, args.admin_key)

    x = Explorer(base, shots)
    d = x.driver
    try:
        d.get(base + "/")
        x.wait("#keyform")
        x.use_key(args.admin_key)
        q = quote(QUESTION)

        # Ask: the failed event and its cause are in the pack, each drawn with its path.
        x.open(base, f"#/ask?q={q}&k=10", "#items .item")
        for key in (FAILED, CAUSE):
            x.wait(f'#items [data-item="{key}"]')
        assert "timeout after 30s calling ci-runner" in d.page_source
        x.wait("#packgraph canvas")
        x.wait("#items .pathgraph canvas")
        x.shot("ask")

        # Node: the failed event's neighbourhood; click through to a neighbour it was caused by.
        x.open(base, "#/node/evt-000032?label=Event", '[data-group="CAUSED_BY:out"] [data-neighbor]')
        x.wait('[data-graph="Event:evt-000032"][data-drawn]')
        # A click on a node of the drawing adds its neighbours to it.
        count = 'return document.querySelector(\'[data-graph="Event:evt-000032"]\').cy.nodes().length'
        before = d.execute_script(count)
        d.execute_script('document.querySelector(\'[data-graph="Event:evt-000032"]\').cy'
                         '.getElementById("Entity:service:ci-runner").emit("tap")')
        WebDriverWait(d, 30).until(lambda dr: dr.execute_script(count) > before)
        x.shot("node")
        link = d.find_element(By.CSS_SELECTOR, '[data-group="CAUSED_BY:out"] [data-neighbor] a.nodelink')
        target = link.get_attribute("data-node")
        link.click()
        x.wait(f'[data-node-detail="{target}"]')
        assert quote(target.split(":", 1)[1]) in d.current_url, d.current_url
        # Search finds nodes by text.
        x.open(base, "#/node?search=ci-runner", "#hits a.nodelink")

        # Session timeline: in order, failures marked, causal arcs drawn.
        x.open(base, "#/session/sess-0003", "#timeline tr[data-event]")
        failed = d.find_elements(By.CSS_SELECTOR, "#timeline tr.failed")
        assert len(failed) >= 2, "the session's failed events are not marked"
        assert args.hidden_text in d.page_source, "the admin should see the scoped event (the check could not fail)"
        x.wait("#timelinegraph canvas")
        x.shot("session")

        # Decisions: the topic list, its evolution chain with outcomes, a decision's impact.
        x.open(base, "#/topic", "#topics a")
        d.find_element(By.LINK_TEXT, TOPIC).click()
        steps = x.wait_all("[data-memory]")
        assert len(steps) >= 2, "the evolution chain has fewer than two decisions"
        assert "dedicated ci-runner executor" in steps[0].text
        assert "failed" in d.page_source and "success" in d.page_source
        steps[1].find_element(By.PARTIAL_LINK_TEXT, "impact").click()
        x.wait("#impact")
        x.shot("decisions")

        # Entity: facts now and at a date, contradictions, mentions.
        x.open(base, "#/entity/ci-runner?as_of=2026-10-01", "#mentions .card")
        assert "build-cluster" in d.find_element(By.ID, "facts-now").text
        assert "build-cluster" not in d.find_element(By.ID, "facts-then").text
        contradictions = x.wait("#contradictions").text
        assert "platform-team" in contradictions and "release-team" in contradictions, contradictions
        x.shot("entity")

        # Health as an admin of the server: what it may count, not the store's own figures.
        x.open(base, "#/health", "#owner-only")
        assert not d.find_elements(By.ID, "stages")

        # The restricted reader: no page it can reach holds the hidden event's text.
        x.use_key(args.reader_key)
        words = quote(args.hidden_question)
        hidden_views = [
            (f"#/ask?q={q}&k=20", "#items .item", False),
            (f"#/ask?q={words}&k=20", "#items .item, #pack .error", False),
            ("#/session/sess-0003", "#timeline tr[data-event]", False),
            (f"#/node?search={words}", "#hits", False),
            ("#/node/evt-000032?label=Event", '[data-group="CAUSED_BY:out"] [data-neighbor]', False),
            (f"#/node/{quote(args.hidden_id)}?label=Event", ".error", True),
        ]
        for hash_path, ready, names_it in hidden_views:
            x.open(base, hash_path, ready)
            page = d.page_source
            assert args.hidden_text not in page, f"{hash_path}: the reader's page holds the hidden text"
            # The node view of the hidden id names it (it is in the address), as "no such node".
            assert names_it or args.hidden_id not in page, f"{hash_path}: the reader's page names the hidden event"
        assert "node.not_found" in d.page_source
        x.shot("reader-session")

        # The owner, through `ctxgraph ui`: its key comes in the URL's fragment; Health shows
        # the store's log, lags, counts and size.
        owner_base = args.owner_url.split("/#", 1)[0]
        d.get(args.owner_url)
        WebDriverWait(d, 30).until(lambda dr: dr.find_element(By.ID, "who").text == "store owner")
        assert "key=" not in d.current_url, "the key stayed in the address bar"
        x.open(owner_base, "#/health", "#stages")
        assert "log records" in d.find_element(By.ID, "stages").text
        x.wait("#tiers table")
        x.shot("health")

        errors = x.security_errors()
        assert not errors, f"the browser refused something: {errors}"
        print(f"explorer: every view loaded; {len(x.origins)} origin(s) requested: {sorted(x.origins)}; "
              f"screenshots in {shots}")
    except Exception:
        x.shot("failure")
        for entry in d.get_log("browser"):
            print(entry, file=sys.stderr)
        raise
    finally:
        d.quit()


if __name__ == "__main__":
    main()
