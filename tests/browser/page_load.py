"""Page-load times of the ctxgraph explorer's views in headless Chromium.

Each view is loaded as a fresh page (from about:blank) and timed from the navigation's start
to the moment its content is on the page (checked every animation frame in the page itself),
with the time the server took for each API call (Resource Timing). Used to measure the
explorer on a large store:

    ctxgraph --db big.ctxg ui            # prints http://127.0.0.1:PORT/#key=...
    python tests/browser/page_load.py --owner-url URL --question "Why did session sess-0003 fail?" \\
        --node service:ci-runner --session sess-0003 --runs 3
"""

import argparse
import statistics
from urllib.parse import quote, urlsplit

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

# Resolve with performance.now() once `selector` matches, or with -1 after `timeout` ms.
WAIT = """
const [selector, timeout, done] = arguments;
const tick = () => {
  if (document.querySelector(selector)) return done(performance.now());
  if (performance.now() > timeout) return done(-1);
  requestAnimationFrame(tick);
};
tick();
"""

CALLS = """
return performance.getEntriesByType('resource').filter(e => e.name.includes('/v1/'))
  .map(e => [new URL(e.name).pathname, Math.round(e.responseEnd - e.startTime)]);
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--owner-url", required=True, help="the URL ctxgraph ui printed")
    ap.add_argument("--question", required=True)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--node", help="a node id to open in the Node view (a hub, say)")
    ap.add_argument("--session", help="a session id for the timeline")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    base = args.owner_url.split("/#", 1)[0]

    options = Options()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1000"):
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    d.set_script_timeout(600)
    try:
        d.get(args.owner_url)  # hands the key to the tab
        WebDriverWait(d, 60).until(lambda dr: "key=" not in dr.current_url)
        views = [("ask", f"#/ask?q={quote(args.question)}&k={args.k}", "#packgraph canvas")]
        if args.node:
            views.append(("node", f"#/node/{quote(args.node)}", "[data-graph] canvas"))
        if args.session:
            views.append(("session", f"#/session/{quote(args.session)}", "#timelinegraph canvas"))
        views.append(("health", "#/health", "#tiers table"))
        for name, hash_path, ready in views:
            times = []
            for _ in range(args.runs):
                d.get("about:blank")
                d.get(f"{base}/{hash_path}")
                ms = d.execute_async_script(WAIT, ready, 300_000)
                assert ms >= 0, f"{name}: {ready} never appeared"
                times.append(ms)
                calls = d.execute_script(CALLS)
            own = {urlsplit(n).netloc for n in d.execute_script(
                "return performance.getEntriesByType('resource').map(e => e.name)")}
            assert own <= {urlsplit(base).netloc}, own
            api = ", ".join(f"{p} {t} ms" for p, t in calls)
            print(f"{name:8} median {statistics.median(times):7.0f} ms  (runs: {', '.join(f'{t:.0f}' for t in times)}; "
                  f"last run's API calls: {api})")
    finally:
        d.quit()


if __name__ == "__main__":
    main()
